// BackendHostStaging: comm::HostStaging over a Backend, for a GPU rank whose gradients are summed
// over MPI (a job with CPU ranks). The host copy lives in the backend's staging memory
// (page-locked on a GPU), and each bucket has its own StagedCopy, so its copy to the host runs
// beside the rest of backward and the host waits for it only right before the bucket's MPI call.
#pragma once

#include <memory>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/grad_sync.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::train {

class BackendHostStaging final : public comm::HostStaging {
 public:
  // `backend` must outlive this.
  explicit BackendHostStaging(backend::Backend& backend);

  float* host_buffer(std::int64_t elements) override;
  void start_to_host(std::size_t bucket, float* host_destination, const float* device_source,
                     std::int64_t count) override;
  bool landed(std::size_t bucket) override;
  void wait_landed(std::size_t bucket) override;
  void start_to_device(std::size_t bucket, float* device_destination, const float* host_source,
                       std::int64_t count) override;

 private:
  backend::StagedCopy& copy_of(std::size_t bucket);

  backend::Backend& backend_;
  Tensor host_gradients_;                                     // in the backend's staging memory
  std::vector<std::unique_ptr<backend::StagedCopy>> copies_;  // one per bucket, made on first use
};

}  // namespace phalanx::train
