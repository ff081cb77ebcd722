// How a user's HDF5 datasets encode images and labels, told from their shapes (data.source.layout
// and data.source.labels, docs/DATA.md). Pure functions of the shape, shared by the mapped
// reader, which refuses what it cannot tell, and by `phalanx data inspect`, which suggests a block.
#pragma once

#include "phalanx/config/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::data {

enum class ImageLayout { Nhwc, Nchw, Nhw };
enum class LabelEncoding { Index, OneHot };

std::string layout_name(ImageLayout layout);
std::string label_encoding_name(LabelEncoding encoding);

// An image dataset's layout and sample shape. `error` is empty when the layout is known; else it
// says why (wrong rank, or an ambiguous shape under `auto`) and nothing else is set.
struct ImageShape {
  ImageLayout layout = ImageLayout::Nhwc;
  std::int64_t count = 0;
  int height = 0, width = 0, channels = 0;
  std::string error;
};

// The most values one image may hold (2^28: a 16384 x 16384 single-channel image); larger
// shapes are refused rather than allocated.
inline constexpr std::uint64_t maximum_sample_values = std::uint64_t{1} << 28;

// `requested` is data.source.layout. Under auto: 3 dimensions are [N,H,W]; 4 dimensions are
// NHWC when only the last axis looks like channels (1, 3 or 4) and NCHW when only the second
// does; a shape where both or neither do is ambiguous and refused.
ImageShape image_shape(const std::vector<std::uint64_t>& dimensions, config::SourceLayout requested);

// A label dataset's encoding: [N] or [N,1,...,1] holds class indices; [N,K] (K > 1, size-1 axes
// dropped) holds one-hot rows. `classes` is K for one-hot, 0 for indices.
struct LabelShape {
  LabelEncoding encoding = LabelEncoding::Index;
  std::int64_t count = 0;
  std::int64_t classes = 0;
  std::string error;
};

// The widest one-hot row read (the most classes phalanx numbers itself, too): a row is read
// whole, so a wider one was a huge allocation before any check.
inline constexpr std::uint64_t maximum_one_hot_classes = 1000000;

// `requested` is data.source.labels.
LabelShape label_shape(const std::vector<std::uint64_t>& dimensions, config::LabelEncoding requested);

// "[60000,28,28]" for messages.
std::string dimensions_text(const std::vector<std::uint64_t>& dimensions);

}  // namespace phalanx::data
