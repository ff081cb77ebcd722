// Tests of the object-header check: every object of files HDF5 writes passes it (version 1 and 2
// object headers, continuation chunks, dense attribute storage, every datatype class, the three
// layouts, filters, fill values, a committed datatype), and the damage on which HDF5 1.10 decodes
// an attribute message past its end is refused, naming the file, the object and the message.
#include <hdf5.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_objects.hpp"
#include "phalanx/data/object_header_check.hpp"
#include "support/test_support.hpp"

namespace phalanx::data::detail {
namespace {

using phalanx::testing::ScratchDirectory;

void add_attribute(hid_t object, const char* name, hid_t type, hid_t space, const void* value) {
  const Hdf5Handle attribute =
      attribute_handle(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(attribute.valid()) << name;
  if (value == nullptr) return;  // an attribute of a null dataspace has no value to write
  ASSERT_GE(H5Awrite(attribute.get(), type, value), 0) << name;
}

Hdf5Handle simple_space(std::vector<hsize_t> dimensions) {
  return dataspace_handle(H5Screate_simple(static_cast<int>(dimensions.size()), dimensions.data(), nullptr));
}

// A file with one of everything the check reads: attributes of every datatype class (more of
// them than fit one chunk, or than version 2 headers keep in the header), datasets of each layout
// with filters and a fill value, a group, and a committed datatype used by a dataset and an
// attribute. `latest` writes version 2 object headers (HDF5's newest format), else version 1 (its
// default, and h5py's).
void write_rich_file(const std::string& path, bool latest) {
  const Hdf5Handle access = property_list_handle(H5Pcreate(H5P_FILE_ACCESS));
  if (latest) H5Pset_libver_bounds(access.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const Hdf5Handle file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()));
  ASSERT_TRUE(file.valid());
  const Hdf5Handle root = group_handle(H5Gopen2(file.get(), "/", H5P_DEFAULT));
  const Hdf5Handle scalar = dataspace_handle(H5Screate(H5S_SCALAR));

  const std::int64_t counter = 42;
  add_attribute(root.get(), "samples_seen", H5T_STD_I64LE, scalar.get(), &counter);
  const std::array<std::uint16_t, 3> shorts = {1, 2, 3};
  add_attribute(root.get(), "shorts", H5T_STD_U16BE, simple_space({3}).get(), shorts.data());
  const std::array<float, 4> floats = {0.5F, 1.5F, 2.5F, 3.5F};
  add_attribute(root.get(), "floats", H5T_IEEE_F32LE, simple_space({2, 2}).get(), floats.data());
  const double rate = 0.125;
  add_attribute(root.get(), "learning_rate", H5T_IEEE_F64LE, scalar.get(), &rate);

  const Hdf5Handle fixed_string = datatype_handle(H5Tcopy(H5T_C_S1));
  H5Tset_size(fixed_string.get(), 18);
  add_attribute(root.get(), "format", fixed_string.get(), scalar.get(), "phalanx-checkpoint");
  const Hdf5Handle text = datatype_handle(H5Tcopy(H5T_C_S1));
  H5Tset_size(text.get(), H5T_VARIABLE);
  H5Tset_cset(text.get(), H5T_CSET_UTF8);
  const char* config = "name: lenet5\nseed: 1\n";
  add_attribute(root.get(), "config", text.get(), scalar.get(), &config);

  struct Record {
    std::int32_t count;
    double mean;
    char tag[5];
  };
  const Hdf5Handle record = datatype_handle(H5Tcreate(H5T_COMPOUND, sizeof(Record)));
  H5Tinsert(record.get(), "count", offsetof(Record, count), H5T_NATIVE_INT32);
  H5Tinsert(record.get(), "mean", offsetof(Record, mean), H5T_NATIVE_DOUBLE);
  const Hdf5Handle tag = datatype_handle(H5Tcopy(H5T_C_S1));
  H5Tset_size(tag.get(), 5);
  H5Tinsert(record.get(), "tag", offsetof(Record, tag), tag.get());
  const Record value{7, 0.25, "abcd"};
  add_attribute(root.get(), "record", record.get(), scalar.get(), &value);

  // What h5py writes for a bool: an enumeration of int8.
  const Hdf5Handle boolean = datatype_handle(H5Tenum_create(H5T_NATIVE_INT8));
  const std::int8_t no = 0, yes = 1;
  H5Tenum_insert(boolean.get(), "FALSE", &no);
  H5Tenum_insert(boolean.get(), "TRUE", &yes);
  add_attribute(root.get(), "flag", boolean.get(), scalar.get(), &yes);

  const std::array<hsize_t, 2> array_shape = {2, 3};
  const Hdf5Handle matrix = datatype_handle(H5Tarray_create2(H5T_NATIVE_INT32, 2, array_shape.data()));
  const std::array<std::int32_t, 6> cells = {1, 2, 3, 4, 5, 6};
  add_attribute(root.get(), "matrix", matrix.get(), scalar.get(), cells.data());

  const Hdf5Handle sequence = datatype_handle(H5Tvlen_create(H5T_NATIVE_INT32));
  const std::array<std::int32_t, 3> items = {9, 8, 7};
  const hvl_t ragged{items.size(), const_cast<std::int32_t*>(items.data())};
  add_attribute(root.get(), "ragged", sequence.get(), scalar.get(), &ragged);

  const Hdf5Handle opaque = datatype_handle(H5Tcreate(H5T_OPAQUE, 4));
  H5Tset_tag(opaque.get(), "four raw bytes");
  add_attribute(root.get(), "opaque", opaque.get(), scalar.get(), "wxyz");
  const std::uint8_t bits = 0x5a;
  add_attribute(root.get(), "bits", H5T_STD_B8LE, scalar.get(), &bits);
  const Hdf5Handle null_space = dataspace_handle(H5Screate(H5S_NULL));
  add_attribute(root.get(), "nothing", H5T_STD_I32LE, null_space.get(), nullptr);
  // More attributes than a version 1 header's first chunk holds (continuation chunks), and than
  // a version 2 header keeps in itself (8: the rest go to dense storage).
  for (int index = 0; index < 24; ++index) {
    const std::int32_t number = index;
    add_attribute(root.get(), ("extra_" + std::to_string(index)).c_str(), H5T_STD_I32LE, scalar.get(),
                  &number);
  }

  const Hdf5Handle contiguous_plist = property_list_handle(H5Pcreate(H5P_DATASET_CREATE));
  const float fill = -1.0F;
  H5Pset_fill_value(contiguous_plist.get(), H5T_NATIVE_FLOAT, &fill);
  const Hdf5Handle contiguous =
      dataset_handle(H5Dcreate2(file.get(), "/weights", H5T_IEEE_F32LE, simple_space({10, 4}).get(),
                                H5P_DEFAULT, contiguous_plist.get(), H5P_DEFAULT));
  std::vector<float> weights(40, 0.5F);
  ASSERT_GE(H5Dwrite(contiguous.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, weights.data()), 0);
  const char* checksum = "xxh64:0123456789abcdef";
  add_attribute(contiguous.get(), "checksum", text.get(), scalar.get(), &checksum);

  const Hdf5Handle group =
      group_handle(H5Gcreate2(file.get(), "/train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  const Hdf5Handle chunked_plist = property_list_handle(H5Pcreate(H5P_DATASET_CREATE));
  const std::array<hsize_t, 3> chunk = {10, 28, 28};
  H5Pset_chunk(chunked_plist.get(), 3, chunk.data());
  H5Pset_shuffle(chunked_plist.get());
  H5Pset_deflate(chunked_plist.get(), 4);
  H5Pset_fletcher32(chunked_plist.get());
  const Hdf5Handle images =
      dataset_handle(H5Dcreate2(group.get(), "images", H5T_STD_U8LE, simple_space({50, 28, 28}).get(),
                                H5P_DEFAULT, chunked_plist.get(), H5P_DEFAULT));
  std::vector<std::uint8_t> pixels(50 * 28 * 28);
  for (std::size_t index = 0; index < pixels.size(); ++index)
    pixels[index] = static_cast<std::uint8_t>(index);
  ASSERT_GE(H5Dwrite(images.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()), 0);

  const Hdf5Handle compact_plist = property_list_handle(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_layout(compact_plist.get(), H5D_COMPACT);
  const Hdf5Handle labels =
      dataset_handle(H5Dcreate2(group.get(), "labels", H5T_STD_I32LE, simple_space({4}).get(), H5P_DEFAULT,
                                compact_plist.get(), H5P_DEFAULT));
  const std::array<std::int32_t, 4> label_values = {0, 1, 2, 3};
  ASSERT_GE(H5Dwrite(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, label_values.data()), 0);

  const Hdf5Handle committed = datatype_handle(H5Tcopy(record.get()));
  ASSERT_GE(H5Tcommit2(file.get(), "/record_type", committed.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            0);
  const Hdf5Handle records =
      dataset_handle(H5Dcreate2(file.get(), "/records", committed.get(), simple_space({2}).get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT));
  const std::array<Record, 2> rows = {Record{1, 1.0, "one"}, Record{2, 2.0, "two"}};
  ASSERT_GE(H5Dwrite(records.get(), committed.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
  add_attribute(records.get(), "first", committed.get(), scalar.get(), rows.data());
}

// Every object's name in the file, the root as "/".
std::vector<std::string> object_names(hid_t file) {
  std::vector<std::string> names;
  visit_objects(file, [&](const char* name, H5O_type_t) -> herr_t {
    names.push_back(std::string(name) == "." ? "/" : "/" + std::string(name));
    return 0;
  });
  return names;
}

void expect_every_object_passes(const std::string& path) {
  silence_hdf5_error_printing();
  const Hdf5Handle access = checked_file_access();
  const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  ASSERT_TRUE(file.valid()) << path;
  const std::vector<std::string> names = object_names(file.get());
  EXPECT_GE(names.size(), 1U) << path;
  for (const std::string& name : names) {
    try {
      check_object_header(file.get(), name, path);
    } catch (const Error& error) {
      ADD_FAILURE() << "a valid object was refused: " << error.what();
    }
  }
}

TEST(ObjectHeaderCheck, PassesEveryObjectOfVersionOneHeaders) {
  const ScratchDirectory scratch("object_header_check_version_one");
  write_rich_file(scratch.file("rich.h5"), false);
  expect_every_object_passes(scratch.file("rich.h5"));
}

TEST(ObjectHeaderCheck, PassesEveryObjectOfVersionTwoHeaders) {
  const ScratchDirectory scratch("object_header_check_version_two");
  write_rich_file(scratch.file("rich.h5"), true);
  expect_every_object_passes(scratch.file("rich.h5"));
}

TEST(ObjectHeaderCheck, PassesTheFuzzSeeds) {
  // The seeds are what phalanx and h5py write: a dataset (plain and gzip), a checkpoint, a
  // data.source file of float one-hot labels.
  int files = 0;
  for (const char* target : {"dataset", "checkpoint", "mapped_source"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string(PHALANX_SOURCE_DIR) +
                                                                 "/tests/fuzz/corpus/" + target)) {
      expect_every_object_passes(entry.path().string());
      ++files;
    }
  EXPECT_GE(files, 4);
}

TEST(ObjectHeaderCheck, AnObjectThatIsNotThereIsLeftToTheCaller) {
  const ScratchDirectory scratch("object_header_check_missing");
  write_rich_file(scratch.file("rich.h5"), false);
  const Hdf5Handle access = checked_file_access();
  const Hdf5Handle file = file_handle(H5Fopen(scratch.file("rich.h5").c_str(), H5F_ACC_RDONLY, access.get()));
  silence_hdf5_error_printing();
  EXPECT_NO_THROW(check_object_header(file.get(), "/no/such/dataset", scratch.file("rich.h5")));
  EXPECT_FALSE(open_checked_dataset(file.get(), "/no/such/dataset", scratch.file("rich.h5")).valid());
  EXPECT_TRUE(open_checked_dataset(file.get(), "/weights", scratch.file("rich.h5")).valid());
}

// Where the parts of the root's "samples_seen" attribute message lie in a file HDF5 wrote with
// version 1 headers: the message (version, reserved byte, three sizes), then its name, datatype
// and dataspace, each padded to 8 bytes, then its value.
struct AttributeBytes {
  std::size_t message = 0, name = 0, datatype = 0, dataspace = 0;
};

AttributeBytes locate_samples_seen(const std::string& bytes) {
  AttributeBytes at;
  at.name = bytes.find(std::string("samples_seen\0", 13));
  EXPECT_NE(at.name, std::string::npos);
  at.message = at.name - 8;
  const auto size_at = [&](std::size_t offset) {
    return static_cast<std::size_t>(static_cast<std::uint8_t>(bytes[offset]) |
                                    static_cast<std::uint8_t>(bytes[offset + 1]) << 8);
  };
  const auto padded = [](std::size_t size) { return (size + 7) / 8 * 8; };
  at.datatype = at.name + padded(size_at(at.message + 2));
  at.dataspace = at.datatype + padded(size_at(at.message + 4));
  return at;
}

void put16(std::string& bytes, std::size_t offset, std::uint16_t value) {
  bytes[offset] = static_cast<char>(value & 0xff);
  bytes[offset + 1] = static_cast<char>(value >> 8);
}

// Writes `bytes` as the file `path`, opens it through the checked driver and returns the
// message of the input error `check` raises on it (a test failure when there is none).
std::string refusal(const std::string& path, const std::string& bytes,
                    const std::function<void(hid_t)>& check) {
  phalanx::testing::write_bytes(path, bytes);
  silence_hdf5_error_printing();
  const Hdf5Handle access = checked_file_access();
  const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  if (!file.valid()) {
    ADD_FAILURE() << "HDF5 does not open the damaged file at all: nothing reaches the check";
    return {};
  }
  return phalanx::testing::input_error_message([&] { check(file.get()); });
}

std::function<void(hid_t)> check_root(const std::string& path) {
  return [path](hid_t file) { check_object_header(file, "/", path); };
}

struct Damage {
  const char* name;
  std::function<void(std::string&, const AttributeBytes&)> apply;
  const char* expected;
};

TEST(ObjectHeaderCheck, RefusesAttributeMessagesThatRunPastThemselves) {
  const ScratchDirectory scratch("object_header_check_damage");
  const std::string original_path = scratch.file("original.h5");
  {
    // The root of a small checkpoint-like file: "samples_seen" holds two int64 values.
    const Hdf5Handle file =
        file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Hdf5Handle root = group_handle(H5Gopen2(file.get(), "/", H5P_DEFAULT));
    const std::array<std::int64_t, 2> values = {1234, 5678};
    add_attribute(root.get(), "samples_seen", H5T_STD_I64LE, simple_space({2}).get(), values.data());
    const std::int64_t one = 1;
    add_attribute(root.get(), "version", H5T_STD_I64LE, dataspace_handle(H5Screate(H5S_SCALAR)).get(), &one);
  }
  const std::string original = phalanx::testing::file_bytes(original_path);
  const AttributeBytes at = locate_samples_seen(original);
  ASSERT_EQ(original[at.datatype] & 0x0f, 0) << "the attribute's datatype is not an integer where expected";

  const std::vector<Damage> damages = {
      {"a name size past the message",
       [](std::string& bytes, const AttributeBytes& where) { put16(bytes, where.message + 2, 400); },
       "its name (400 bytes) runs past the message"},
      {"a name without its NUL",
       [](std::string& bytes, const AttributeBytes& where) {
         put16(bytes, where.message + 2, 16);
         for (std::size_t index = 12; index < 16; ++index) bytes[where.name + index] = 'x';
       },
       "its name has no terminating NUL"},
      {"a dataspace size past the message",
       [](std::string& bytes, const AttributeBytes& where) { put16(bytes, where.message + 6, 0xffff); },
       "its dataspace (65536 bytes) runs past the message"},
      {"more elements than the value holds",
       [](std::string& bytes, const AttributeBytes& where) { put16(bytes, where.dataspace + 8, 1000); },
       "its value of 1000 elements of 8 bytes runs past the message"},
      {"a precision outside the element",
       [](std::string& bytes, const AttributeBytes& where) { put16(bytes, where.datatype + 10, 0xfffe); },
       "lies outside its 8-byte elements"},
      {"an element size past the value",
       [](std::string& bytes, const AttributeBytes& where) { put16(bytes, where.datatype + 4, 4096); },
       "its value of 2 elements of 4096 bytes runs past the message"},
      {"an unknown datatype class",
       [](std::string& bytes, const AttributeBytes& where) {
         bytes[where.datatype] = static_cast<char>((bytes[where.datatype] & 0xf0) | 0x0f);
       },
       "unknown datatype class 15"},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    std::string bytes = original;
    damage.apply(bytes, at);
    const std::string path = scratch.file("damaged.h5");
    const std::string message = refusal(path, bytes, check_root(path));
    EXPECT_NE(message.find(path + ": /: object header at byte "), std::string::npos) << message;
    EXPECT_NE(message.find("(attribute)"), std::string::npos) << message;
    EXPECT_NE(message.find(damage.expected), std::string::npos) << message;
    EXPECT_NE(message.find("(file corrupt?)"), std::string::npos) << message;
  }
}

// A root attribute of variable-length strings (what h5py writes for a list of class names): each
// value is its length, the address of a global heap collection and an object index there.
TEST(ObjectHeaderCheck, RefusesVariableLengthValuesHdf5WouldReadPastItsBuffers) {
  const ScratchDirectory scratch("object_header_check_variable_length");
  const std::string original_path = scratch.file("original.h5");
  {
    const Hdf5Handle file =
        file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Hdf5Handle root = group_handle(H5Gopen2(file.get(), "/", H5P_DEFAULT));
    const Hdf5Handle text = datatype_handle(H5Tcopy(H5T_C_S1));
    H5Tset_size(text.get(), H5T_VARIABLE);
    H5Tset_cset(text.get(), H5T_CSET_UTF8);
    const std::array<const char*, 3> classes = {"cat", "dog", "bird"};
    add_attribute(root.get(), "classes", text.get(), simple_space({3}).get(), classes.data());
  }
  const std::string original = phalanx::testing::file_bytes(original_path);
  const std::size_t name = original.find(std::string("classes\0", 8));
  ASSERT_NE(name, std::string::npos);
  const std::size_t message = name - 8;
  const auto size_at = [&](std::size_t offset) {
    return static_cast<std::size_t>(static_cast<std::uint8_t>(original[offset]) |
                                    static_cast<std::uint8_t>(original[offset + 1]) << 8);
  };
  const auto padded = [](std::size_t size) { return (size + 7) / 8 * 8; };
  const std::size_t datatype = name + padded(size_at(message + 2));
  const std::size_t value = datatype + padded(size_at(message + 4)) + padded(size_at(message + 6));
  ASSERT_EQ(original[datatype] & 0x0f, 9) << "not a variable-length datatype where expected";
  ASSERT_EQ(original[value], 3) << "the first value is not the 3 bytes of \"cat\"";

  struct VariableLengthDamage {
    const char* name;
    std::size_t offset;
    std::uint16_t value;
    const char* expected;
  };
  // Each made HDF5 1.10.8 read past a buffer of its own (found by the dataset fuzzer): elements
  // stored at 10 bytes (HDF5 allocates the value at 10, then copies 16 per element), an index the
  // collection does not hold (HDF5 indexes its object table unchecked), an address with no
  // collection (HDF5 fails, leaking the strings it converted before).
  const std::vector<VariableLengthDamage> damages = {
      {"elements stored at 10 bytes", datatype + 4, 10, "its variable-length elements say they are 10 bytes"},
      {"an object index the collection lacks", value + 4 + 8, 999,
       "its value 0 refers to object 999 of the global heap collection at byte"},
      // A count of items the file cannot hold: HDF5 allocates room for them before it reads the
      // collection (the dataset fuzzer: 15 items of 704,643,073 bytes, 10 GB).
      {"a count of 65,535 items", value, 0xFFFF, "its 65535 items of 1 byte would run past the file's end"},
      {"a collection address with no collection", value + 16 + 4, 8,
       "its value 1 refers to object 2 of the global heap collection at byte 8, which is not a global heap "
       "collection"},
  };
  for (const VariableLengthDamage& damage : damages) {
    SCOPED_TRACE(damage.name);
    std::string bytes = original;
    put16(bytes, damage.offset, damage.value);
    if (damage.offset == value + 16 + 4)  // the whole 8-byte address, not its low 2 bytes only
      for (std::size_t index = 2; index < 8; ++index) bytes[damage.offset + index] = 0;
    const std::string path = scratch.file("damaged.h5");
    const std::string message = refusal(path, bytes, check_root(path));
    EXPECT_NE(message.find(damage.expected), std::string::npos) << message;
  }
}

// A chunk dimension of 0, or chunks of 4 GB or more: HDF5 1.10 refuses both in H5Dopen, but only
// after allocating what it then leaks (found by the dataset fuzzer).
TEST(ObjectHeaderCheck, RefusesChunkSizesHdf5WouldLeakOn) {
  const ScratchDirectory scratch("object_header_check_chunks");
  const std::string original_path = scratch.file("original.h5");
  {
    const Hdf5Handle file =
        file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Hdf5Handle plist = property_list_handle(H5Pcreate(H5P_DATASET_CREATE));
    const std::array<hsize_t, 2> chunk = {3, 5};
    H5Pset_chunk(plist.get(), 2, chunk.data());
    const Hdf5Handle dataset =
        dataset_handle(H5Dcreate2(file.get(), "/images", H5T_STD_U8LE, simple_space({6, 5}).get(),
                                  H5P_DEFAULT, plist.get(), H5P_DEFAULT));
    ASSERT_TRUE(dataset.valid());
  }
  const std::string original = phalanx::testing::file_bytes(original_path);
  // A version 3 chunked layout message: version 3, class 2, dimensionality 3 (two and the
  // element's size), the chunk index's address, then the sizes 3, 5 and 1 as 4-byte numbers.
  const std::string sizes("\x03\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00", 12);
  const std::size_t at = original.find(sizes);
  ASSERT_NE(at, std::string::npos) << "no chunk sizes 3, 5, 1 in the file";
  ASSERT_EQ(original.substr(at - 8 - 3, 3), std::string("\x03\x02\x03", 3))
      << "not a version 3 chunked layout";
  struct ChunkDamage {
    const char* name;
    std::uint32_t first_size;
    const char* expected;
  };
  for (const ChunkDamage& damage :
       {ChunkDamage{"a chunk dimension of 0", 0, "(layout): chunk dimension 0 is 0"},
        ChunkDamage{"chunks of 4 GB", 1u << 30,
                    "(layout): its chunks of 5368709120 bytes are over HDF5's 4 GB"}}) {
    SCOPED_TRACE(damage.name);
    std::string bytes = original;
    for (int index = 0; index < 4; ++index)
      bytes[at + static_cast<std::size_t>(index)] = static_cast<char>(damage.first_size >> (8 * index));
    const std::string path = scratch.file("damaged.h5");
    const std::string message =
        refusal(path, bytes, [&](hid_t file) { open_checked_dataset(file, "/images", path); });
    EXPECT_NE(message.find(damage.expected), std::string::npos) << message;
  }
}

// The damage must be found wherever the message lies: here in a continuation chunk of a version
// 1 header, and in a version 2 header (whose checksum is made again, or HDF5 refuses the header
// before the check, itself).
TEST(ObjectHeaderCheck, FindsDamageInContinuationChunks) {
  const ScratchDirectory scratch("object_header_check_continuation");
  const std::string path = scratch.file("rich.h5");
  write_rich_file(path, false);
  std::uint64_t root_address = 0, first_chunk_end = 0;
  {
    const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    // The header's chunk count: HDF5 1.12 moved it to the native (file format) information.
#if H5_VERSION_GE(1, 12, 0)
    H5O_native_info_t header{};
    ASSERT_GE(H5Oget_native_info(file.get(), &header, H5O_NATIVE_INFO_HDR), 0);
#else
    H5O_info_t header{};
    ASSERT_GE(H5Oget_info2(file.get(), &header, H5O_INFO_HDR), 0);
#endif
    ASSERT_GE(header.hdr.nchunks, 2U) << "the root's attributes fit one chunk: nothing tests continuations";
    const std::optional<ObjectFacts> root = object_facts(file.get(), ".");
    ASSERT_TRUE(root.has_value());
    root_address = root->header_address;
  }
  std::string bytes = phalanx::testing::file_bytes(path);
  first_chunk_end = root_address + 16 +
                    (static_cast<std::uint8_t>(bytes[root_address + 8]) |
                     static_cast<std::uint8_t>(bytes[root_address + 9]) << 8);
  const std::size_t name = bytes.find(std::string("extra_23\0", 9));
  ASSERT_NE(name, std::string::npos);
  ASSERT_GT(name, first_chunk_end) << "extra_23 is in the first chunk";
  put16(bytes, name - 8 + 6, 0xffff);  // its dataspace size
  const std::string message = refusal(path, bytes, check_root(path));
  EXPECT_NE(message.find("(attribute) \"extra_23\": its dataspace (65536 bytes) runs past the message"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace phalanx::data::detail

// HDF5's metadata checksum (Jenkins' lookup3), exported by the library though not in its public
// headers: the version 2 test below damages a header and must checksum it again.
extern "C" std::uint32_t H5_checksum_metadata(const void* data, std::size_t length, std::uint32_t initial);

namespace phalanx::data::detail {
namespace {

// Makes the checksum of the version 2 header holding byte `damaged` (in its first chunk) again,
// or HDF5 refuses the damaged header itself before the check sees it.
void checksum_version_two_header_again(std::string& bytes, std::size_t damaged) {
  const std::size_t header = bytes.rfind("OHDR", damaged);
  ASSERT_NE(header, std::string::npos);
  const auto flags = static_cast<std::uint8_t>(bytes[header + 5]);
  ASSERT_EQ(flags & 0x03, 0) << "the test reads a 1-byte chunk size";
  const std::size_t size_field = header + 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
  const std::size_t checksum_at = size_field + 1 + static_cast<std::uint8_t>(bytes[size_field]);
  ASSERT_LT(damaged, checksum_at) << "the damage is not in the header's first chunk";
  const std::uint32_t checksum = H5_checksum_metadata(bytes.data() + header, checksum_at - header, 0);
  for (int index = 0; index < 4; ++index)
    bytes[checksum_at + static_cast<std::size_t>(index)] = static_cast<char>(checksum >> (8 * index));
}

TEST(ObjectHeaderCheck, FindsDamageInVersionTwoHeaders) {
  const ScratchDirectory scratch("object_header_check_version_two_damage");
  const std::string path = scratch.file("latest.h5");
  {
    const Hdf5Handle access = property_list_handle(H5Pcreate(H5P_FILE_ACCESS));
    H5Pset_libver_bounds(access.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    const Hdf5Handle file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()));
    const Hdf5Handle root = group_handle(H5Gopen2(file.get(), "/", H5P_DEFAULT));
    const std::array<std::int64_t, 2> values = {1234, 5678};
    add_attribute(root.get(), "samples_seen", H5T_STD_I64LE, simple_space({2}).get(), values.data());
  }
  std::string bytes = phalanx::testing::file_bytes(path);
  const std::size_t name = bytes.find(std::string("samples_seen\0", 13));
  ASSERT_NE(name, std::string::npos);
  // Version 3 attribute message: version, flags, three sizes, the name's encoding, then the name.
  ASSERT_EQ(bytes[name - 9], 3) << "not a version 3 attribute message";
  put16(bytes, name - 9 + 6, 0xffff);  // its dataspace size
  checksum_version_two_header_again(bytes, name);
  const std::string message = refusal(path, bytes, check_root(path));
  EXPECT_NE(message.find("(attribute) \"samples_seen\": its dataspace (65535 bytes) runs past the message"),
            std::string::npos)
      << message;
}

// A file with a group /train holding a small dataset /train/images; `latest` writes groups in
// HDF5's new form (a link message per name), else in the old form (a symbol table: a B-tree and
// a local heap holding the names), HDF5's default and h5py's.
void write_file_with_a_group(const std::string& path, bool latest) {
  const Hdf5Handle access = property_list_handle(H5Pcreate(H5P_FILE_ACCESS));
  if (latest) H5Pset_libver_bounds(access.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  const Hdf5Handle file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()));
  ASSERT_TRUE(file.valid());
  const Hdf5Handle group =
      group_handle(H5Gcreate2(file.get(), "/train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  const Hdf5Handle dataset =
      dataset_handle(H5Dcreate2(group.get(), "images", H5T_STD_U8LE, simple_space({2, 3}).get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(dataset.valid());
  const std::array<std::uint8_t, 6> pixels = {1, 2, 3, 4, 5, 6};
  ASSERT_GE(H5Dwrite(dataset.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()), 0);
}

std::uint64_t get64(const std::string& bytes, std::size_t offset) {
  std::uint64_t value = 0;
  for (int index = 7; index >= 0; --index)
    value = value << 8 | static_cast<std::uint8_t>(bytes[offset + static_cast<std::size_t>(index)]);
  return value;
}

void put64(std::string& bytes, std::size_t offset, std::uint64_t value) {
  for (int index = 0; index < 8; ++index)
    bytes[offset + static_cast<std::size_t>(index)] = static_cast<char>(value >> (8 * index));
}

// A local heap's prefix (8-byte lengths and addresses): "HEAP", version 0, three reserved bytes,
// the data block's size, the offset of its first free block, the data block's address.
struct LocalHeap {
  std::size_t at = 0;
  std::uint64_t data_size = 0, free_block = 0, data_address = 0;
};

std::vector<LocalHeap> local_heaps(const std::string& bytes) {
  std::vector<LocalHeap> heaps;
  for (std::size_t at = bytes.find(std::string("HEAP\0", 5)); at != std::string::npos;
       at = bytes.find(std::string("HEAP\0", 5), at + 1))
    heaps.push_back({at, get64(bytes, at + 8), get64(bytes, at + 16), get64(bytes, at + 24)});
  return heaps;
}

TEST(ObjectHeaderCheck, RefusesLocalHeapsHdf5WouldReadPast) {
  const ScratchDirectory scratch("object_header_check_local_heap");
  const std::string original_path = scratch.file("original.h5");
  write_file_with_a_group(original_path, false);
  const std::string original = phalanx::testing::file_bytes(original_path);
  const std::vector<LocalHeap> heaps = local_heaps(original);
  ASSERT_EQ(heaps.size(), 2U) << "expected the local heaps of / and /train";
  const LocalHeap root = heaps[0];  // written first, with the file
  ASSERT_NE(root.free_block, 1U) << "the root's heap has no free block to damage";
  ASSERT_LT(root.data_address + root.free_block + 16, original.size());
  const std::size_t free_block_at = static_cast<std::size_t>(root.data_address + root.free_block);
  // The root's symbol table message (its B-tree's address, then its heap's) is in the root's
  // header, which the version 0 superblock points to at its byte 64.
  std::string heap_address(8, '\0');
  put64(heap_address, 0, root.at);
  const std::size_t heap_field = original.find(heap_address, static_cast<std::size_t>(get64(original, 64)));
  ASSERT_NE(heap_field, std::string::npos) << "no symbol table message in the root's header";

  struct HeapDamage {
    const char* name;
    std::function<void(std::string&)> apply;
    std::string expected;
  };
  const std::string where = "(symbol table): its local heap at byte " + std::to_string(root.at);
  const std::vector<HeapDamage> damages = {
      // HDF5 reads prefix and data into room for their sum, which wraps around to less than the prefix.
      {"a data size of 2^64 - 1", [&](std::string& bytes) { put64(bytes, root.at + 8, ~std::uint64_t{0}); },
       where + " says its data block holds 18446744073709551615 bytes at byte " +
           std::to_string(root.data_address) + ", past the file's end"},
      // HDF5 checks only that the free block starts inside the data; it reads 16 bytes there.
      {"a free block at the data's last 8 bytes",
       [&](std::string& bytes) { put64(bytes, root.at + 16, root.data_size - 8); },
       where + ": a free block at offset " + std::to_string(root.data_size - 8) + " does not fit in its " +
           std::to_string(root.data_size) + " bytes"},
      // HDF5 follows the list until it ends, allocating a node per block.
      {"a free list that loops", [&](std::string& bytes) { put64(bytes, free_block_at, root.free_block); },
       where + ": its free list loops"},
      {"a free block larger than the data",
       [&](std::string& bytes) { put64(bytes, free_block_at + 8, root.data_size); },
       where + ": a free block of " + std::to_string(root.data_size) + " bytes at offset " +
           std::to_string(root.free_block) + " runs past its " + std::to_string(root.data_size) + " bytes"},
      // HDF5 reads the heap and the B-tree at whatever address the message holds (an undefined
      // one made it copy into a buffer it never got).
      {"a local heap at an undefined address",
       [&](std::string& bytes) { put64(bytes, heap_field, ~std::uint64_t{0}); },
       "(symbol table): its local heap address 18446744073709551615 lies past the file's end"},
      {"a B-tree at an undefined address",
       [&](std::string& bytes) { put64(bytes, heap_field - 8, ~std::uint64_t{0}); },
       "(symbol table): its B-tree address 18446744073709551615 lies past the file's end"},
  };
  const std::string path = scratch.file("damaged.h5");
  for (const HeapDamage& damage : damages) {
    SCOPED_TRACE(damage.name);
    std::string bytes = original;
    damage.apply(bytes);
    const std::string message = refusal(path, bytes, check_root(path));
    EXPECT_NE(message.find(path + ": /: object header at byte "), std::string::npos) << message;
    EXPECT_NE(message.find(damage.expected), std::string::npos) << message;
  }
}

TEST(ObjectHeaderCheck, ChecksEachGroupOnTheWayBeforeHdf5LooksIntoIt) {
  // The heap of /train is damaged: opening /train/images must refuse /train before HDF5 looks
  // "images" up in it (H5Dopen, H5Lexists and H5Oget_info all do).
  const ScratchDirectory scratch("object_header_check_path");
  const std::string path = scratch.file("damaged.h5");
  write_file_with_a_group(path, false);
  std::string bytes = phalanx::testing::file_bytes(path);
  const std::vector<LocalHeap> heaps = local_heaps(bytes);
  ASSERT_EQ(heaps.size(), 2U);
  put64(bytes, heaps[1].at + 8, ~std::uint64_t{0});
  for (const std::string name : {"/train/images", "/train/no_such_dataset"}) {
    SCOPED_TRACE(name);
    const std::string message =
        refusal(path, bytes, [&](hid_t file) { open_checked_dataset(file, name, path); });
    EXPECT_NE(message.find(path + ": /train: object header at byte "), std::string::npos) << message;
    EXPECT_NE(message.find("its local heap at byte " + std::to_string(heaps[1].at)), std::string::npos)
        << message;
  }
  // Relative to /train's parent, the same.
  const std::string message = refusal(path, bytes, [&](hid_t file) {
    const Hdf5Handle root = group_handle(H5Gopen2(file, "/", H5P_DEFAULT));
    check_object_header(root.get(), "train/images", path);
  });
  EXPECT_NE(message.find(": /train: object header at byte "), std::string::npos) << message;
}

TEST(ObjectHeaderCheck, RefusesLinkMessagesThatRunPastThemselves) {
  // Groups in the new form hold a link message per name; HDF5 1.10 copies the name at the length
  // it states when it looks a name up.
  const ScratchDirectory scratch("object_header_check_link");
  const std::string path = scratch.file("latest.h5");
  write_file_with_a_group(path, true);
  expect_every_object_passes(path);
  std::string bytes = phalanx::testing::file_bytes(path);
  // A link message: version 1, flags (here none beyond those of a 1-byte name length and the
  // name's encoding), [the encoding,] the name's length, the name, the object's address.
  const std::size_t name = bytes.find("train");
  ASSERT_NE(name, std::string::npos);
  ASSERT_EQ(bytes[name - 1], 5) << "no 1-byte name length before the link's name";
  bytes[name - 1] = static_cast<char>(200);
  checksum_version_two_header_again(bytes, name);
  const std::string message = refusal(path, bytes, check_root(path));
  EXPECT_NE(message.find("(link): its name (200 bytes) runs past the message"), std::string::npos) << message;
}

// HDF5 loads the root group's header inside H5Fopen, allocating each of its chunks at the size it
// states before reading it: the checked driver refuses to open a file whose root header has a
// chunk past the file's end, and says so through checked_file_refusal(). With and without a user
// block (checkpoints have one of 512 bytes), which moves the superblock and what addresses count
// from.
// Writes `bytes` to `path` and opens it through the checked driver, which must refuse it; why it did.
std::string open_refusal(const std::string& path, const std::string& bytes) {
  phalanx::testing::write_bytes(path, bytes);
  silence_hdf5_error_printing();
  const Hdf5Handle access = checked_file_access();
  const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  EXPECT_FALSE(file.valid());
  return checked_file_refusal();
}

TEST(ObjectHeaderCheck, HeadersWithChunksPastTheFileEndAreRefusedBeforeHdf5LoadsThem) {
  // HDF5 1.10 loads a header to say anything of its object (H5Oget_info), allocating its first
  // chunk at the stated size: 4 and 8 GB for files of a few KB (the dataset fuzzer). Reached by
  // hard links, the header is checked at the address its link gives, before HDF5 loads it.
  const ScratchDirectory scratch("object_header_check_chunk_past_the_end");
  const std::string original_path = scratch.file("original.h5");
  {
    const Hdf5Handle file =
        file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const Hdf5Handle group =
        group_handle(H5Gcreate2(file.get(), "/train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const std::int64_t value = 7;
    const Hdf5Handle dataset = dataset_handle(H5Dcreate2(group.get(), "values", H5T_STD_I64LE,
                                                         dataspace_handle(H5Screate(H5S_SCALAR)).get(),
                                                         H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_GE(H5Dwrite(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), 0);
  }
  haddr_t address = HADDR_UNDEF;
  {
    const Hdf5Handle file = file_handle(H5Fopen(original_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    const std::optional<ObjectFacts> values = object_facts(file.get(), "/train/values");
    ASSERT_TRUE(values.has_value());
    address = values->header_address;
  }
  std::string bytes = phalanx::testing::file_bytes(original_path);
  ASSERT_EQ(bytes[address], 1) << "not a version 1 object header";
  for (int index = 0; index < 4; ++index)  // its first chunk's size: 4 bytes at byte 8
    bytes[address + 8 + static_cast<std::size_t>(index)] = static_cast<char>(0xFFFFFF00u >> (8 * index));
  const std::string path = scratch.file("damaged.h5");
  const std::string message =
      refusal(path, bytes, [&](hid_t file) { check_object_header(file, "/train/values", path); });
  EXPECT_NE(message.find("/train/values: object header at byte " + std::to_string(address) +
                         ": a chunk of 4294967040 bytes at byte " + std::to_string(address + 16) +
                         " runs past the file's end"),
            std::string::npos)
      << message;
}

TEST(ObjectHeaderCheck, DriverInformationBlocksPastTheFileEndAreRefusedAtOpen) {
  // A version 0 superblock may point at a driver information block, which HDF5 1.10 reads inside
  // H5Fopen at the size the block states (the dataset fuzzer: 4 GB asked for by a file of 1 KB).
  const ScratchDirectory scratch("object_header_check_driver_information");
  const std::string original_path = scratch.file("original.h5");
  file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  std::string bytes = phalanx::testing::file_bytes(original_path);
  ASSERT_EQ(bytes[8], 0) << "not a version 0 superblock";
  ASSERT_EQ(get64(bytes, 48), ~std::uint64_t{0}) << "the superblock already has a driver information block";
  const std::uint64_t block = bytes.size();
  put64(bytes, 48, block);  // after the base, free-space and end-of-file addresses
  // Version 0, 3 reserved bytes, its size (4 bytes), then the driver's name (8 bytes).
  bytes += std::string(4, '\0') + std::string("\x00\xEE\xEE\xEE", 4) + "NCSAmult";
  EXPECT_EQ(open_refusal(scratch.file("damaged.h5"), bytes),
            "the superblock's driver information block at byte " + std::to_string(block) +
                ": its 4008635904 bytes run past the file's end (" + std::to_string(bytes.size()) +
                " bytes)");
}

TEST(ObjectHeaderCheck, RootHeadersWithChunksPastTheFileEndAreRefusedAtOpen) {
  const ScratchDirectory scratch("object_header_check_root_at_open");
  for (const hsize_t user_block : {hsize_t{0}, hsize_t{512}}) {
    SCOPED_TRACE("user block of " + std::to_string(user_block) + " bytes");
    const std::string original_path = scratch.file("original.h5");
    {
      const Hdf5Handle creation = property_list_handle(H5Pcreate(H5P_FILE_CREATE));
      H5Pset_userblock(creation.get(), user_block);
      const Hdf5Handle file =
          file_handle(H5Fcreate(original_path.c_str(), H5F_ACC_TRUNC, creation.get(), H5P_DEFAULT));
      const Hdf5Handle root = group_handle(H5Gopen2(file.get(), "/", H5P_DEFAULT));
      // More attributes than the root header's first chunk holds: a continuation chunk.
      for (int index = 0; index < 40; ++index) {
        const std::int64_t value = index;
        add_attribute(root.get(), ("counter_" + std::to_string(index)).c_str(), H5T_STD_I64LE,
                      dataspace_handle(H5Screate(H5S_SCALAR)).get(), &value);
      }
    }
    const std::string original = phalanx::testing::file_bytes(original_path);
    expect_every_object_passes(original_path);
    // Superblock version 0 with 8-byte addresses: the root's header address at byte 64 of it.
    ASSERT_EQ(original[static_cast<std::size_t>(user_block) + 8], 0) << "not a version 0 superblock";
    const std::size_t root = static_cast<std::size_t>(user_block + get64(original, user_block + 64));
    ASSERT_EQ(original[root], 1) << "not a version 1 object header";
    // Its messages start at byte 16: type (2 bytes), size (2), flags (1), 3 reserved, the data.
    std::size_t continuation = 0;
    const std::uint64_t first_chunk_size = get64(original, root + 8) & 0xFFFFFFFFu;  // 4 bytes
    for (std::size_t at = root + 16; at + 8 <= root + 16 + first_chunk_size;) {
      const unsigned type =
          static_cast<std::uint8_t>(original[at]) | static_cast<std::uint8_t>(original[at + 1]) << 8;
      const unsigned size =
          static_cast<std::uint8_t>(original[at + 2]) | static_cast<std::uint8_t>(original[at + 3]) << 8;
      if (type == 0x10) continuation = at + 8;
      at += 8 + size;
    }
    ASSERT_NE(continuation, 0U) << "the root header has no continuation message in its first chunk";

    struct RootDamage {
      const char* name;
      std::size_t field;
      std::uint64_t value;
      bool four_bytes;
    };
    for (const RootDamage& damage :
         {RootDamage{"a first chunk of 4 GB", root + 8, 0xFFFFFF00u, true},
          RootDamage{"a continuation chunk of 4 GB", continuation + 8, std::uint64_t{1} << 32, false}}) {
      SCOPED_TRACE(damage.name);
      std::string bytes = original;
      if (damage.four_bytes)
        for (int index = 0; index < 4; ++index)
          bytes[damage.field + static_cast<std::size_t>(index)] =
              static_cast<char>(damage.value >> (8 * index));
      else
        put64(bytes, damage.field, damage.value);
      const std::string refusal = open_refusal(scratch.file("damaged.h5"), bytes);
      EXPECT_NE(refusal.find("the root group's object header at byte " + std::to_string(root) +
                             ": a chunk of " + std::to_string(damage.value) + " bytes"),
                std::string::npos)
          << refusal;
      EXPECT_NE(refusal.find("runs past the file's end (" + std::to_string(bytes.size()) + " bytes)"),
                std::string::npos)
          << refusal;
    }
  }
}

}  // namespace
}  // namespace phalanx::data::detail
