// Telling a dataset's image layout and label encoding from its shape. The rules stay small and
// refuse rather than guess: a wrong guess would train on scrambled pixels without any error.
#include "source_layout.hpp"

#include <limits>

namespace phalanx::data {
namespace {

bool looks_like_channels(std::uint64_t size) {
  return size == 1 || size == 3 || size == 4;
}

}  // namespace

std::string layout_name(ImageLayout layout) {
  switch (layout) {
    case ImageLayout::Nhwc: return "nhwc";
    case ImageLayout::Nchw: return "nchw";
    case ImageLayout::Nhw: return "nhw";
  }
  return "?";
}

std::string label_encoding_name(LabelEncoding encoding) {
  return encoding == LabelEncoding::Index ? "index" : "one_hot";
}

std::string dimensions_text(const std::vector<std::uint64_t>& dimensions) {
  std::string text = "[";
  for (std::size_t axis = 0; axis < dimensions.size(); ++axis) {
    if (axis) text += ",";
    text += std::to_string(dimensions[axis]);
  }
  return text + "]";
}

ImageShape image_shape(const std::vector<std::uint64_t>& dimensions, config::SourceLayout requested) {
  using config::SourceLayout;
  ImageShape shape;
  const std::string shape_text = "shape " + dimensions_text(dimensions);
  if (dimensions.size() != 3 && dimensions.size() != 4) {
    shape.error = shape_text + " cannot be images (expected [N,H,W], [N,H,W,C] or [N,C,H,W])";
    return shape;
  }
  if (dimensions[0] == 0) {
    shape.error = shape_text + " has no samples (N = 0)";
    return shape;
  }
  std::uint64_t sample_values = 1;
  for (std::size_t axis = 1; axis < dimensions.size(); ++axis) {
    if (dimensions[axis] == 0 ||
        dimensions[axis] > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      shape.error = shape_text + " has an empty or oversized image axis";
      return shape;
    }
    sample_values *= dimensions[axis];  // at most 3 axes below 2^31 each: no overflow
  }
  // Whole samples are read into memory (a row of floats when the scale is decided, then the
  // batches): a damaged or mistaken shape of billions of values per sample would be allocated.
  if (sample_values > maximum_sample_values) {
    shape.error = shape_text + " has " + std::to_string(sample_values) + " values per sample, over the " +
                  std::to_string(maximum_sample_values) + " phalanx reads as one image";
    return shape;
  }
  if (dimensions.size() == 3) {
    if (requested != SourceLayout::Auto && requested != SourceLayout::Nhw) {
      shape.error = shape_text + " has 3 dimensions, so it is [N,H,W], not " + config::name_of(requested);
      return shape;
    }
    shape.layout = ImageLayout::Nhw;
  } else if (requested == SourceLayout::Nhw) {
    shape.error = shape_text + " has 4 dimensions; nhw needs [N,H,W] (use nhwc or nchw)";
    return shape;
  } else if (requested == SourceLayout::Nhwc) {
    shape.layout = ImageLayout::Nhwc;
  } else if (requested == SourceLayout::Nchw) {
    shape.layout = ImageLayout::Nchw;
  } else {
    const bool last = looks_like_channels(dimensions[3]), second = looks_like_channels(dimensions[1]);
    if (last == second) {
      shape.error = shape_text + " is ambiguous: " +
                    (last ? std::string("both axis 1 and axis 3 could be channels")
                          : std::string("neither axis 1 nor axis 3 looks like channels (1, 3 or 4)")) +
                    "; set data.source.layout to nhwc or nchw";
      return shape;
    }
    shape.layout = last ? ImageLayout::Nhwc : ImageLayout::Nchw;
  }
  shape.count = static_cast<std::int64_t>(dimensions[0]);
  switch (shape.layout) {
    case ImageLayout::Nhw:
      shape.height = static_cast<int>(dimensions[1]);
      shape.width = static_cast<int>(dimensions[2]);
      shape.channels = 1;
      break;
    case ImageLayout::Nhwc:
      shape.height = static_cast<int>(dimensions[1]);
      shape.width = static_cast<int>(dimensions[2]);
      shape.channels = static_cast<int>(dimensions[3]);
      break;
    case ImageLayout::Nchw:
      shape.channels = static_cast<int>(dimensions[1]);
      shape.height = static_cast<int>(dimensions[2]);
      shape.width = static_cast<int>(dimensions[3]);
      break;
  }
  return shape;
}

LabelShape label_shape(const std::vector<std::uint64_t>& dimensions, config::LabelEncoding requested) {
  LabelShape shape;
  const std::string shape_text = "shape " + dimensions_text(dimensions);
  if (dimensions.empty()) {
    shape.error = "a scalar cannot be labels (expected [N], [N,1,...] or one-hot [N,K])";
    return shape;
  }
  shape.count = static_cast<std::int64_t>(dimensions[0]);
  // Axes of size 1 after N carry nothing: (N,1,1,1) is (N,), (N,1,K) is (N,K).
  std::vector<std::uint64_t> kept;
  for (std::size_t axis = 1; axis < dimensions.size(); ++axis)
    if (dimensions[axis] != 1) kept.push_back(dimensions[axis]);
  if (kept.size() > 1) {
    shape.error = shape_text + " cannot be labels (expected [N], [N,1,...] or one-hot [N,K])";
    return shape;
  }
  const std::uint64_t width = kept.empty() ? 1 : kept.front();
  if (requested == config::LabelEncoding::Index && width != 1) {
    shape.error =
        shape_text + " holds " + std::to_string(width) +
        " values per sample, not one class index (one-hot? set data.source.labels to one_hot or auto)";
    return shape;
  }
  if (requested == config::LabelEncoding::OneHot && width == 1) {
    shape.error = shape_text +
                  " holds one value per sample, not a one-hot row (set data.source.labels to "
                  "index or auto)";
    return shape;
  }
  if (width > maximum_one_hot_classes) {
    shape.error = shape_text + ": one-hot rows of " + std::to_string(width) + " values, more than the " +
                  std::to_string(maximum_one_hot_classes) +
                  " classes phalanx reads as one-hot rows (store each sample's class index instead)";
    return shape;
  }
  shape.encoding = width == 1 ? LabelEncoding::Index : LabelEncoding::OneHot;
  shape.classes = width == 1 ? 0 : static_cast<std::int64_t>(width);
  return shape;
}

}  // namespace phalanx::data
