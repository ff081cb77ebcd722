// A checkpoint's single values (the step counters under /state, the root's attributes) are read
// into one variable each; HDF5 writes as many values as the file declares, so a file declaring
// more than one must be refused before the read, naming the file and the value, not overrun it.
// Numbers stored as anything but numbers of up to 16 bytes are refused likewise: HDF5 would
// allocate its conversion buffer at the stored size.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/train/checkpoint.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_editing.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::expect_resealed_edit_refused;
using phalanx::testing::replace_int64_dataset;
using phalanx::testing::ScratchDirectory;

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path) {
    const TrainingPosition position{11, 0, 11, 11 * 96};
    write_checkpoint(path, *backend, registry, nullptr, position, 1, 5, "name: test\n", nullptr, {}, {});
  }
};

// Replaces the root's attribute `name` with one of `count` values of `type` (zeros, or empty
// strings of 32 bytes for a string type).
void replace_root_attribute(const std::string& path, const char* name, hid_t type, hsize_t count) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  EXPECT_GE(H5Adelete(file, name), 0) << name;
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t attribute = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const std::vector<char> zeros(count * H5Tget_size(type), '\0');
  EXPECT_GE(H5Awrite(attribute, type, zeros.data()), 0) << name;
  H5Aclose(attribute);
  H5Sclose(space);
  H5Fclose(file);
}

// Replaces dataset `name` with one value of `type`, left at its fill value.
void replace_dataset_type(const std::string& path, const char* name, hid_t type) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  EXPECT_GE(H5Ldelete(file, name, H5P_DEFAULT), 0) << name;
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << name;
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
}

TEST(CheckpointSingleValues, ACounterHoldingSeveralValuesIsRefusedNamingIt) {
  ScratchDirectory scratch("checkpoint_single_values_dataset");
  SmallModel model;
  const std::string path = scratch.file("step-11.h5");
  model.write(path);
  ASSERT_NO_THROW(read_checkpoint_header(path));
  replace_int64_dataset(path, "/state/global_step", {11, 12, 13});
  expect_resealed_edit_refused(path, "/state/global_step: must hold one value, it holds 3");
}

TEST(CheckpointSingleValues, AnAttributeHoldingSeveralValuesIsRefusedNamingIt) {
  ScratchDirectory scratch("checkpoint_single_values_attributes");
  SmallModel model;

  const std::string version = scratch.file("version.h5");
  model.write(version);
  replace_root_attribute(version, "version", H5T_STD_I64LE, 4);
  expect_resealed_edit_refused(version, "checkpoint attribute 'version' must hold one value, it holds 4");

  const std::string format = scratch.file("format.h5");
  model.write(format);
  const hid_t string_type = H5Tcopy(H5T_C_S1);
  H5Tset_size(string_type, 32);
  replace_root_attribute(format, "format", string_type, 2);
  H5Tclose(string_type);
  expect_resealed_edit_refused(format, "checkpoint attribute 'format' must hold one value, it holds 2");
}

TEST(CheckpointSingleValues, ACounterNotStoredAsANumberIsRefusedNamingIt) {
  ScratchDirectory scratch("checkpoint_single_values_types");
  SmallModel model;

  const std::string wide = scratch.file("wide.h5");
  model.write(wide);
  const hid_t wide_integer = H5Tcopy(H5T_STD_I64LE);
  ASSERT_GE(H5Tset_size(wide_integer, 32), 0);
  // All 256 bits in use: HDF5 1.14.4 and later refuse to create a dataset of an integer type with
  // unused bits (H5Pset_relax_file_integrity_checks).
  ASSERT_GE(H5Tset_precision(wide_integer, 256), 0);
  replace_dataset_type(wide, "/state/epoch", wide_integer);
  H5Tclose(wide_integer);
  expect_resealed_edit_refused(
      wide, "/state/epoch is stored as 32-byte integers, not as numbers of up to 16 bytes");

  const std::string text = scratch.file("text.h5");
  model.write(text);
  const hid_t string_type = H5Tcopy(H5T_C_S1);
  H5Tset_size(string_type, 8);
  replace_dataset_type(text, "/state/rng_seed", string_type);
  H5Tclose(string_type);
  expect_resealed_edit_refused(text, "/state/rng_seed is stored as string, not as numbers of up to 16 bytes");
}

}  // namespace
}  // namespace phalanx::train
