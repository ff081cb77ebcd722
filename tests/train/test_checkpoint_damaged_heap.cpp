// Checkpoints are read through the checked file driver: a checkpoint edited by hand (h5py stores a
// string attribute as a variable-length string, in a global heap collection) still loads, and one
// whose collection is damaged the way a fuzzer found for datasets (a free-space object of size 0,
// which HDF5 1.10 steps over forever) is an input error naming the file and the collection, at once.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <memory>
#include <string>

#include "data/data_test_support.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/nn/parameter_registry.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/checkpoint_seal.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using data::detail::Hdf5Handle;
using phalanx::testing::file_bytes;
using phalanx::testing::ScratchDirectory;
using phalanx::testing::write_bytes;

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path) {
    const TrainingPosition position{3, 0, 3, 3 * 16};
    write_checkpoint(path, *backend, registry, nullptr, position, 1, 5, "name: test\n");
  }
};

// Replaces the root attribute "format" by the same text as a variable-length string, as
// `file.attrs["format"] = "phalanx-checkpoint"` in h5py does (UTF-8; ASCII from other tools),
// with HDF5's own driver, read-write.
void rewrite_format_as_variable_length_string(const std::string& path, H5T_cset_t character_set) {
  const Hdf5Handle file = data::detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
  ASSERT_TRUE(file.valid()) << path;
  ASSERT_GE(H5Adelete(file.get(), "format"), 0);
  const Hdf5Handle type = data::detail::variable_string_type();
  H5Tset_cset(type.get(), character_set);
  const Hdf5Handle space = data::detail::dataspace_handle(H5Screate(H5S_SCALAR));
  const Hdf5Handle attribute = data::detail::attribute_handle(
      H5Acreate2(file.get(), "format", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(attribute.valid());
  const char* text = "phalanx-checkpoint";
  ASSERT_GE(H5Awrite(attribute.get(), type.get(), &text), 0);
}

std::uint64_t length_at(const std::string& bytes, std::size_t offset) {
  std::uint64_t value = 0;
  for (int index = 7; index >= 0; --index)
    value = value << 8 | static_cast<std::uint8_t>(bytes[offset + static_cast<std::size_t>(index)]);
  return value;
}

// Writes a checkpoint, rewrites its "format" as a variable-length string of `character_set`, checks
// that it loads, then damages the global heap collection that holds the string and expects both
// readers to refuse it naming the file, the attribute and the collection.
void expect_damaged_heap_refused(H5T_cset_t character_set) {
  ScratchDirectory scratch("checkpoint_damaged_heap");
  SmallModel model;
  const std::string path = scratch.file("edited.h5");
  model.write(path);
  ASSERT_NO_FATAL_FAILURE(rewrite_format_as_variable_length_string(path, character_set));
  reseal_checkpoint(path);  // an edit on purpose
  // An edited checkpoint whose collection is sound loads through the checked driver.
  testing::within_seconds(30, "reading an edited checkpoint", [&] {
    EXPECT_EQ(read_checkpoint_header(path).position.global_step, 3);
    EXPECT_NO_THROW(load_checkpoint(path, *model.backend, model.registry, nullptr));
  });

  // The one collection holds the string (object 1, its 18 bytes padded to 24) and then free space
  // (object 0) to its end; the free space's size becomes 0, as in the dataset fuzzer's finding.
  std::string bytes = file_bytes(path);
  const std::size_t collection = bytes.find(std::string("GCOL\x01", 5));
  ASSERT_NE(collection, std::string::npos) << "no global heap collection in " << path;
  ASSERT_EQ(bytes.find(std::string("GCOL\x01", 5), collection + 1), std::string::npos);
  ASSERT_EQ(bytes[collection + 16], 1) << "object 1 first";
  ASSERT_EQ(length_at(bytes, collection + 16 + 8), 18u);
  const std::size_t free_space = collection + 16 + 16 + 24;
  ASSERT_EQ(bytes[free_space], 0);
  ASSERT_EQ(bytes[free_space + 1], 0);
  for (int index = 0; index < 8; ++index) bytes[free_space + 8 + static_cast<std::size_t>(index)] = 0;
  const std::string damaged = scratch.file("damaged.h5");
  write_bytes(damaged, bytes);
  // Resealed, so that the damage reaches the checked driver (the seal alone would refuse it).
  reseal_checkpoint(damaged);

  const std::string expected =
      damaged + ": attribute 'format': cannot be read: the global heap collection at byte " +
      std::to_string(collection) + " is damaged: its object 0 at byte " + std::to_string(free_space) +
      " (free space) has size 0, which HDF5 would never get past";
  testing::within_seconds(30, "read_checkpoint_header of a damaged global heap",
                          [&] { EXPECT_INPUT_ERROR(read_checkpoint_header(damaged), expected); });
  testing::within_seconds(30, "load_checkpoint of a damaged global heap", [&] {
    EXPECT_INPUT_ERROR(load_checkpoint(damaged, *model.backend, model.registry, nullptr), expected);
  });
}

TEST(CheckpointGlobalHeap, DamagedCollectionIsAnInputErrorNamingTheFileNotAHang) {
  for (const H5T_cset_t character_set : {H5T_CSET_UTF8, H5T_CSET_ASCII}) {
    SCOPED_TRACE(character_set == H5T_CSET_UTF8 ? "UTF-8" : "ASCII");
    expect_damaged_heap_refused(character_set);
  }
}

}  // namespace
}  // namespace phalanx::train
