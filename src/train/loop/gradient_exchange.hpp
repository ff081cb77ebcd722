// GradientExchange: how a rank sums its gradients with the other ranks while backward runs, one
// interface for the three ways a job does it: MPI on host memory (CPU ranks), NCCL on the device
// (jobs whose ranks all drive a GPU), and MPI over host-staged copies (a GPU rank in a job with
// CPU ranks). The loop says when a step begins, when a bucket is ready and when it needs the sums;
// the step clock asks what the communication cost.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/comm/nccl_grad_sync.hpp"

namespace phalanx::train {

// Which step's communication cost() reports: the one waited last, or the one before it.
enum class ExchangedStep { Current, Previous };

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;

  // Start of a step: no bucket is launched yet.
  virtual void begin_step() = 0;
  // Backward reports that every gradient at offset >= first_final_offset is final.
  virtual void bucket_ready(std::int64_t first_final_offset) = 0;
  // From here the optimizer may use the sums: on the host they have arrived; on the device the
  // optimizer's work is ordered after them and the host goes on.
  virtual void wait() = 0;
  // Before the host waits for the sums without a bound (the fp16 finite check reads a flag made
  // from them): a stuck peer must end in an error, not a hang.
  virtual void wait_before_host_reads() = 0;
  // What the communication of `step` cost: `exposed` is the part backward did not hide. Known at
  // once on the host; on the device a reading waits (bounded) for that step's all-reduces.
  virtual comm::CommunicationSeconds cost(ExchangedStep step) = 0;
  // When backward reported each bucket ready in the step waited last (steady seconds, in start
  // order), where the host knows it: MPI exchanges; null for NCCL, whose buckets become ready on
  // the device.
  virtual const std::vector<double>* bucket_ready_times() const { return nullptr; }
};

// MPI on host memory, or through host-staged copies when `backend` keeps gradients on a GPU;
// NCCL when `nccl` is given (every rank drives a GPU). `bucket_bytes`: distributed.bucket_mb.
std::unique_ptr<GradientExchange> make_gradient_exchange(const comm::Communicator& communicator,
                                                         comm::NcclCommunicator* nccl,
                                                         backend::Backend& backend, float* gradients,
                                                         std::int64_t elements, std::size_t bucket_bytes,
                                                         comm::WireType nccl_wire);

}  // namespace phalanx::train
