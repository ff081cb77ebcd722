// Tests of the checked file driver: what HDF5 writes reads back through it unchanged (collections
// larger than HDF5's first read, several collections, a free-space tail without a header), its
// handle is the file's descriptor, it never writes, and damaged global heap collections on which
// HDF5 1.10 would loop forever or read out of bounds are refused at once, naming the collection.
#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "support/test_support.hpp"

namespace phalanx::data::detail {
namespace {

using phalanx::testing::file_bytes;
using phalanx::testing::ScratchDirectory;
using phalanx::testing::write_bytes;

std::uint64_t length_at(const std::string& bytes, std::size_t offset) {
  std::uint64_t value = 0;
  for (int index = 7; index >= 0; --index)
    value = value << 8 | static_cast<std::uint8_t>(bytes[offset + static_cast<std::size_t>(index)]);
  return value;
}

void put_length(std::string& bytes, std::size_t offset, std::uint64_t value) {
  for (int index = 0; index < 8; ++index)
    bytes[offset + static_cast<std::size_t>(index)] = static_cast<char>(value >> (8 * index));
}

// Every global heap collection in the file's bytes: (offset, size) of each "GCOL" version 1 header.
std::vector<std::pair<std::size_t, std::uint64_t>> collections(const std::string& bytes) {
  std::vector<std::pair<std::size_t, std::uint64_t>> found;
  for (std::size_t at = bytes.find("GCOL"); at != std::string::npos; at = bytes.find("GCOL", at + 1))
    if (at + 16 <= bytes.size() && bytes[at + 4] == 1) found.emplace_back(at, length_at(bytes, at + 8));
  return found;
}

// The offset from its start of the first object header at or past byte `from` of the collection
// at `collection` (objects stepped over by their sizes, as the format lays them out); 0 if none.
std::uint64_t object_header_from(const std::string& bytes, std::size_t collection, std::uint64_t size,
                                 std::uint64_t from) {
  for (std::uint64_t position = 16; position + 16 <= size;) {
    if (position >= from) return position;
    if (bytes[collection + position] == 0 && bytes[collection + position + 1] == 0) return 0;  // free space
    position += 16 + (length_at(bytes, collection + position + 8) + 7) / 8 * 8;
  }
  return 0;
}

// Writes `strings` as the variable-length string attribute "names" of / with HDF5's own driver.
void write_strings(const std::string& path, const std::vector<std::string>& strings) {
  const Hdf5Handle file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const Hdf5Handle type = variable_string_type();
  const hsize_t count = strings.size();
  const Hdf5Handle space = dataspace_handle(H5Screate_simple(1, &count, nullptr));
  const Hdf5Handle attribute =
      attribute_handle(H5Acreate2(file.get(), "names", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  std::vector<const char*> pointers;
  for (const auto& text : strings) pointers.push_back(text.c_str());
  ASSERT_TRUE(attribute.valid()) << path;
  ASSERT_GE(H5Awrite(attribute.get(), type.get(), pointers.data()), 0) << path;
}

struct ReadResult {
  bool read = false;
  std::vector<std::string> strings;
  std::string refusal;  // checked_file_refusal() after a failed read
};

// Reads the attribute "names" back through the checked driver, within 30 s.
ReadResult read_strings_checked(const std::string& path) {
  ReadResult result;
  testing::within_seconds(30, ("reading the strings of " + path).c_str(), [&] {
    silence_hdf5_error_printing();
    const Hdf5Handle access = checked_file_access();
    const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    const Hdf5Handle attribute = attribute_handle(H5Aopen(file.get(), "names", H5P_DEFAULT));
    const Hdf5Handle space = dataspace_handle(H5Aget_space(attribute.get()));
    ASSERT_TRUE(file.valid() && attribute.valid() && space.valid()) << path;
    const Hdf5Handle type = variable_string_type();
    std::vector<char*> pointers(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())), nullptr);
    result.read = H5Aread(attribute.get(), type.get(), pointers.data()) >= 0;
    if (!result.read) {
      result.refusal = checked_file_refusal();
      return;
    }
    for (const char* text : pointers) result.strings.emplace_back(text ? text : "");
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
  });
  return result;
}

TEST(CheckedFileDriver, ReadsWhatHdf5WroteAndHandsOutTheDescriptor) {
  ScratchDirectory scratch("checked-driver-valid");
  const std::string path = scratch.file("strings.h5");
  std::vector<std::string> strings;
  // HDF5 grows a collection at the end of the file up to 64 KiB before it starts another: these
  // fill one of 64 KiB (an object of 10,000 bytes among them) and start a second.
  for (int index = 0; index < 1000; ++index) strings.push_back("class number " + std::to_string(index));
  strings.push_back(std::string(10000, 'x'));
  for (int index = 0; index < 1000; ++index) strings.push_back("more " + std::to_string(index));
  write_strings(path, strings);
  const auto found = collections(file_bytes(path));
  ASSERT_GE(found.size(), 2u);
  ASSERT_TRUE(std::any_of(found.begin(), found.end(), [](const auto& entry) { return entry.second > 4096; }));

  const ReadResult result = read_strings_checked(path);
  ASSERT_TRUE(result.read) << result.refusal;
  EXPECT_EQ(result.strings, strings);

  // Damage past the first 4096 bytes of a large collection, which HDF5 reads in a second call, is
  // found as well: the driver walks the whole collection at the first. (One collection holds all
  // the strings here: a read that fails after converting some leaks them inside HDF5 1.10.8.)
  {
    std::vector<std::string> fewer(strings.begin(), strings.begin() + 300);
    const std::string single = scratch.file("single.h5");
    write_strings(single, fewer);
    std::string damaged = file_bytes(single);
    const auto one = collections(damaged);
    ASSERT_EQ(one.size(), 1u);
    ASSERT_GT(one[0].second, 4096u);
    const std::size_t collection = one[0].first;
    const std::uint64_t header = object_header_from(damaged, collection, one[0].second, 4096);
    ASSERT_NE(header, 0u) << "no object header past the first 4096 bytes of the collection";
    damaged[collection + header] = damaged[collection + header + 1] = 0;
    put_length(damaged, collection + header + 8, 0);
    const std::string damaged_path = scratch.file("damaged-past-4096.h5");
    write_bytes(damaged_path, damaged);
    const ReadResult refused = read_strings_checked(damaged_path);
    EXPECT_FALSE(refused.read);
    EXPECT_NE(refused.refusal.find("the global heap collection at byte " + std::to_string(collection) +
                                   " is damaged: its object 0 at byte " +
                                   std::to_string(collection + header) + " (free space) has size 0"),
              std::string::npos)
        << refused.refusal;
  }

  {
    // The handle is the descriptor (SplitReader's truncation check fstat()s it), and a second open
    // of the same file is the same file to HDF5 (compared by device and inode), sharing it.
    const Hdf5Handle access = checked_file_access();
    const Hdf5Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    const Hdf5Handle again = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    ASSERT_TRUE(file.valid() && again.valid());
    void* handle = nullptr;
    void* handle_again = nullptr;
    ASSERT_GE(H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle), 0);
    ASSERT_GE(H5Fget_vfd_handle(again.get(), H5P_DEFAULT, &handle_again), 0);
    struct stat status {};
    ASSERT_EQ(fstat(*static_cast<int*>(handle), &status), 0);
    EXPECT_EQ(static_cast<std::uintmax_t>(status.st_size), std::filesystem::file_size(path));
    EXPECT_EQ(*static_cast<int*>(handle), *static_cast<int*>(handle_again));
  }
  const std::string before = file_bytes(path);
  silence_hdf5_error_printing();
  const Hdf5Handle access = checked_file_access();
  EXPECT_FALSE(file_handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get())).valid());
  EXPECT_EQ(file_bytes(path), before);
}

TEST(CheckedFileDriver, RefusesDamagedCollectionsAtOnce) {
  ScratchDirectory scratch("checked-driver-damaged");
  const std::string valid = scratch.file("valid.h5");
  const std::vector<std::string> strings{"first", "second", "third"};
  write_strings(valid, strings);
  const std::string bytes = file_bytes(valid);
  const auto found = collections(bytes);
  ASSERT_EQ(found.size(), 1u);
  const std::size_t collection = found[0].first;
  const std::uint64_t size = found[0].second;
  // Objects 1, 2 and 3 follow the 16-byte header, 16 bytes of object header and 8 of padded text
  // each; then free space (object 0) to the end, its size counting its header.
  const std::size_t free_space = collection + 16 + 3 * 24;
  for (std::size_t object = 0; object < 3; ++object)
    ASSERT_EQ(bytes[collection + 16 + object * 24], static_cast<char>(object + 1)) << "object " << object;
  ASSERT_EQ(bytes[free_space], 0);
  ASSERT_EQ(length_at(bytes, free_space + 8), collection + size - free_space);

  // Sound but unusual: the free space given to an unused object, leaving an 8-byte tail, too
  // small for a header, which HDF5 takes for free space.
  {
    std::string edited = bytes;
    edited[free_space] = 4;
    put_length(edited, free_space + 8, collection + size - free_space - 16 - 8);
    const std::string path = scratch.file("tail.h5");
    write_bytes(path, edited);
    const ReadResult result = read_strings_checked(path);
    ASSERT_TRUE(result.read) << result.refusal;
    EXPECT_EQ(result.strings, strings);
  }

  struct Damage {
    const char* name;
    std::size_t offset;    // where a length is overwritten
    std::uint64_t length;  // with this
    std::string expected;  // in the refusal after "the global heap collection at byte N is damaged: "
  };
  const std::string second = std::to_string(collection + 16 + 24);
  const std::string first = std::to_string(collection + 16);
  const std::vector<Damage> damages{
      // The fuzzer's finding: HDF5 1.10 moves on by a free-space object's size, and 0 never moves.
      {"free-space-of-size-0", collection + 16 + 24 + 8, 0,
       "its object 0 at byte " + second + " (free space) has size 0, which HDF5 would never get past"},
      {"object-past-the-end", collection + 16 + 8, std::uint64_t{1} << 40,
       "its object 1 at byte " + first + " has size 1099511627776, past the collection's end (" +
           std::to_string(size) + " bytes)"},
      // HDF5 adds header and padded size: 16 + (2^64 - 16) wraps to a step of 0.
      {"padding-that-wraps-to-0", collection + 16 + 8, ~std::uint64_t{0} - 15,
       "its object 1 at byte " + first + " has size 18446744073709551600, past the collection's end"},
      {"collection-past-the-file", collection + 8, std::uint64_t{1} << 40,
       "its size (1099511627776 bytes) runs past the end of the file's data"},
  };
  for (const Damage& damage : damages) {
    std::string edited = bytes;
    put_length(edited, damage.offset, damage.length);
    if (damage.length == 0) {
      // Zero the second object's index too, as the fuzzer's input has it: free space of size 0.
      edited[collection + 16 + 24] = 0;
    }
    const std::string path = scratch.file(std::string(damage.name) + ".h5");
    write_bytes(path, edited);
    const ReadResult result = read_strings_checked(path);
    EXPECT_FALSE(result.read) << damage.name;
    const std::string expected = "the global heap collection at byte " + std::to_string(collection) +
                                 " is damaged: " + damage.expected;
    EXPECT_NE(result.refusal.find(expected), std::string::npos)
        << damage.name << ": " << result.refusal << "\nexpected: " << expected;
  }
}

// The dataset reader and `data inspect` both report a refused read in these words.
TEST(CheckedFileDriver, UnreadableMessageNamesThePlaceAndTheRefusal) {
  EXPECT_EQ(unreadable_message("attribute \"classes\" of /", ""),
            "attribute \"classes\" of /: cannot be read (file corrupt?)");
  EXPECT_EQ(
      unreadable_message("attribute \"format\" of /", "the global heap collection at byte 2048 is damaged"),
      "attribute \"format\" of /: cannot be read: the global heap collection at byte 2048 is damaged "
      "(file corrupt?)");
}

}  // namespace
}  // namespace phalanx::data::detail
