// MemorySource: gathering from a split that is wholly in memory, whether this rank's own copy or
// the node's shared one; the two differ only in who owns the bytes.
#include <cstring>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/data/sample_source.hpp"

namespace phalanx::data {

MemorySource::MemorySource(std::string name, std::int64_t count, int height, int width, int channels,
                           const std::uint8_t* images, const std::int32_t* labels,
                           std::shared_ptr<const void> owner)
    : SampleSource(std::move(name), count, height, width, channels),
      images_(images),
      labels_(labels),
      owner_(std::move(owner)) {
  PHALANX_CHECK(count == 0 || (images_ != nullptr && labels_ != nullptr), "no memory for ", count,
                " samples");
}

std::shared_ptr<MemorySource> MemorySource::of_split(std::shared_ptr<const Split> split) {
  PHALANX_CHECK(split != nullptr, "no split given");
  PHALANX_CHECK(split->images.size() == static_cast<std::size_t>(split->count * split->image_bytes()) &&
                    split->labels.size() == static_cast<std::size_t>(split->count),
                "split ", split->name, " is inconsistent");
  const std::uint8_t* images = split->images.data();
  const std::int32_t* labels = split->labels.data();
  return std::make_shared<MemorySource>(split->name, split->count, split->height, split->width,
                                        split->channels, images, labels, std::move(split));
}

void MemorySource::gather(const std::int64_t* indices, std::size_t n, std::uint8_t* images,
                          std::int32_t* labels) {
  const auto sample_bytes = static_cast<std::size_t>(image_bytes());
  for (std::size_t position = 0; position < n; ++position) {
    const auto sample = static_cast<std::size_t>(indices[position]);
    std::memcpy(images + position * sample_bytes, images_ + sample * sample_bytes, sample_bytes);
    labels[position] = labels_[sample];
  }
}

}  // namespace phalanx::data
