// The gradient exchanges behind GradientExchange: MPI over host memory (a CPU rank's gradients,
// or a GPU rank's staged through host copies as backward finishes each bucket), and NCCL on the
// device, whose costs come from CUDA events and are read a step late.
#include "loop/gradient_exchange.hpp"

#include <optional>

#include "phalanx/comm/grad_sync.hpp"
#include "loop/backend_host_staging.hpp"

namespace phalanx::train {

namespace {

// MPI reads host memory only: a GPU rank stages each bucket through a host copy
// (BackendHostStaging), and the non-blocking all-reduces still overlap the rest of backward.
class MpiGradientExchange final : public GradientExchange {
 public:
  MpiGradientExchange(const comm::Communicator& communicator, backend::Backend& backend, float* gradients,
                      std::int64_t elements, std::size_t bucket_bytes) {
    if (backend.device_kind() == DeviceKind::Cpu)
      sync_.emplace(communicator, gradients, elements, bucket_bytes);
    else
      sync_.emplace(communicator, gradients, elements, bucket_bytes,
                    std::make_unique<BackendHostStaging>(backend));
  }
  void begin_step() override { sync_->begin_step(); }
  void bucket_ready(std::int64_t first_final_offset) override { sync_->gradients_ready(first_final_offset); }
  void wait() override {
    last_.exposed = sync_->wait();
    last_.total = sync_->last_communication_seconds();
  }
  void wait_before_host_reads() override {}  // wait() has the sums on the host already
  comm::CommunicationSeconds cost(ExchangedStep) override { return last_; }
  const std::vector<double>* bucket_ready_times() const override { return &sync_->bucket_ready_times(); }

 private:
  std::optional<comm::GradSync> sync_;
  comm::CommunicationSeconds last_;
};

// Every rank drives a GPU: buckets are summed on a communication stream and the optimizer waits
// for them on the device, so the host learns what a step's communication cost only later.
class NcclGradientExchange final : public GradientExchange {
 public:
  NcclGradientExchange(comm::NcclCommunicator& nccl, float* gradients, std::int64_t elements,
                       std::size_t bucket_bytes, comm::WireType wire)
      : sync_(nccl, gradients, elements, bucket_bytes, std::size_t{1} << 20, wire, true) {}
  void begin_step() override { sync_.begin_step(); }
  void bucket_ready(std::int64_t first_final_offset) override { sync_.gradients_ready(first_final_offset); }
  void wait() override { sync_.wait(); }
  void wait_before_host_reads() override { sync_.wait_current(); }
  comm::CommunicationSeconds cost(ExchangedStep step) override {
    return step == ExchangedStep::Current ? sync_.read_current() : sync_.read_previous();
  }

 private:
  comm::NcclGradSync sync_;
};

}  // namespace

std::unique_ptr<GradientExchange> make_gradient_exchange(const comm::Communicator& communicator,
                                                         comm::NcclCommunicator* nccl,
                                                         backend::Backend& backend, float* gradients,
                                                         std::int64_t elements, std::size_t bucket_bytes,
                                                         comm::WireType nccl_wire) {
  if (nccl)
    return std::make_unique<NcclGradientExchange>(*nccl, gradients, elements, bucket_bytes, nccl_wire);
  return std::make_unique<MpiGradientExchange>(communicator, backend, gradients, elements, bucket_bytes);
}

}  // namespace phalanx::train
