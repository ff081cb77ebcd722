// BackendHostStaging (see the header): one StagedCopy per bucket, because each bucket's copy is
// waited for on its own (its events mark that bucket's copy alone).
#include "loop/backend_host_staging.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::train {

BackendHostStaging::BackendHostStaging(backend::Backend& backend) : backend_(backend) {}

float* BackendHostStaging::host_buffer(std::int64_t elements) {
  PHALANX_CHECK(host_gradients_.empty(), "the host copy of the gradients is made once");
  host_gradients_ = Tensor(backend_.staging_allocator(), Shape{elements});
  return host_gradients_.data();
}

backend::StagedCopy& BackendHostStaging::copy_of(std::size_t bucket) {
  while (copies_.size() <= bucket) copies_.push_back(backend_.make_staged_copy());
  return *copies_[bucket];
}

void BackendHostStaging::start_to_host(std::size_t bucket, float* host_destination,
                                       const float* device_source, std::int64_t count) {
  copy_of(bucket).start_to_host(host_destination, device_source,
                                static_cast<std::size_t>(count) * sizeof(float));
}

bool BackendHostStaging::landed(std::size_t bucket) {
  return copy_of(bucket).landed();
}

void BackendHostStaging::wait_landed(std::size_t bucket) {
  copy_of(bucket).wait_landed();
}

void BackendHostStaging::start_to_device(std::size_t bucket, float* device_destination,
                                         const float* host_source, std::int64_t count) {
  copy_of(bucket).start_to_device(device_destination, host_source,
                                  static_cast<std::size_t>(count) * sizeof(float));
}

}  // namespace phalanx::train
