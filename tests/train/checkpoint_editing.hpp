// Edits on purpose of a written checkpoint, as h5py in r+ mode would make them, and the check that
// the reader refuses the edited file: the tests of the header's validation (single values, running
// totals) damage one value with HDF5 and reseal, so that the read gets past the seal to the check
// under test.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/checkpoint_seal.hpp"

namespace phalanx::testing {

// Replaces dataset `name` of the checkpoint at `path` with a 1-D int64 dataset of `values`, as a
// damaged or hand-edited file would hold it. The seal is left stale.
inline void replace_int64_dataset(const std::string& path, const char* name,
                                  const std::vector<std::int64_t>& values) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  EXPECT_GE(H5Ldelete(file, name, H5P_DEFAULT), 0) << name;
  const hsize_t count = values.size();
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t dataset = H5Dcreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0) << name;
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
}

// Reseals the edited checkpoint at `path` (the edit was on purpose) and expects
// read_checkpoint_header to refuse it as invalid input naming the file and containing `what`.
inline void expect_resealed_edit_refused(const std::string& path, const std::string& what) {
  train::reseal_checkpoint(path);
  try {
    train::read_checkpoint_header(path);
    ADD_FAILURE() << "a checkpoint with " << what << " was read";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find(what), std::string::npos) << error.what();
  }
}

}  // namespace phalanx::testing
