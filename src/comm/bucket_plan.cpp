// BucketPlan: the bucket cut and start order shared by the MPI and NCCL gradient syncs.
#include "phalanx/comm/bucket_plan.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::comm {

BucketPlan::BucketPlan(std::int64_t elements, std::size_t bucket_bytes, std::size_t first_bucket_bytes) {
  PHALANX_CHECK(elements >= 0, "negative gradient count ", elements);
  const auto to_elements = [](std::size_t bytes) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / sizeof(float)));
  };
  const std::int64_t bucket_elements = to_elements(bucket_bytes);
  const std::int64_t first_elements = std::min(bucket_elements, to_elements(first_bucket_bytes));
  for (std::int64_t end = elements; end > 0;) {
    const std::int64_t size = buckets_.empty() ? first_elements : bucket_elements;
    const std::int64_t begin = std::max<std::int64_t>(0, end - size);
    buckets_.push_back(Bucket{begin, end});
    end = begin;
  }
}

BucketPlan::Indices BucketPlan::take_ready(std::int64_t first_final_offset) {
  const std::size_t first = next_;
  while (next_ < buckets_.size() && buckets_[next_].begin >= first_final_offset) ++next_;
  return {first, next_};
}

BucketPlan::Indices BucketPlan::take_rest() {
  const std::size_t first = next_;
  next_ = buckets_.size();
  return {first, next_};
}

}  // namespace phalanx::comm
