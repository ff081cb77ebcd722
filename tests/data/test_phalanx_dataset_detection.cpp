// Tests of is_phalanx_dataset, which decides whether `data.path` names a phalanx dataset or a file
// to map (data.source): a root "format" attribute of one string "phalanx-dataset", fixed or
// variable length, is phalanx's; one declaring another count of strings is not read at all (HDF5
// writes as many strings as the file declares, and the read has room for one).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <array>
#include <string>

#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "hdf5_tree.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using detail::Hdf5Handle;
using phalanx::testing::ScratchDirectory;

// A file whose root holds only a "format" attribute of `count` strings, each `text`.
void write_format(const std::string& path, const std::string& text, hsize_t count, bool variable_length) {
  const Hdf5Handle file =
      detail::file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(file.valid());
  const Hdf5Handle type = detail::datatype_handle(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), variable_length ? H5T_VARIABLE : text.size());
  const Hdf5Handle space = detail::dataspace_handle(H5Screate_simple(1, &count, nullptr));
  const Hdf5Handle attribute = detail::attribute_handle(
      H5Acreate2(file.get(), "format", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(attribute.valid());
  if (variable_length) {
    std::array<const char*, 4> strings = {text.c_str(), text.c_str(), text.c_str(), text.c_str()};
    ASSERT_LE(count, strings.size());
    ASSERT_GE(H5Awrite(attribute.get(), type.get(), strings.data()), 0);
  } else {
    std::string strings;
    for (hsize_t index = 0; index < count; ++index) strings += text;
    ASSERT_GE(H5Awrite(attribute.get(), type.get(), strings.data()), 0);
  }
}

TEST(PhalanxDatasetDetection, OneFormatStringOfEitherKindIsPhalanxs) {
  const ScratchDirectory scratch("phalanx_dataset_detection_one");
  write_format(scratch.file("fixed.h5"), dataset_format, 1, false);
  EXPECT_TRUE(is_phalanx_dataset(scratch.file("fixed.h5")));
  write_format(scratch.file("variable.h5"), dataset_format, 1, true);
  EXPECT_TRUE(is_phalanx_dataset(scratch.file("variable.h5")));
  write_format(scratch.file("other.h5"), "someone-elses-format", 1, false);
  EXPECT_FALSE(is_phalanx_dataset(scratch.file("other.h5")));
}

TEST(PhalanxDatasetDetection, AFormatOfSeveralStringsIsNotRead) {
  // Read into room for one, the first of three fixed strings would say "phalanx-dataset" (and the
  // other two would land past the buffer).
  const ScratchDirectory scratch("phalanx_dataset_detection_several");
  write_format(scratch.file("fixed.h5"), dataset_format, 3, false);
  EXPECT_FALSE(is_phalanx_dataset(scratch.file("fixed.h5")));
  write_format(scratch.file("variable.h5"), dataset_format, 3, true);
  EXPECT_FALSE(is_phalanx_dataset(scratch.file("variable.h5")));
}

}  // namespace
}  // namespace phalanx::data
