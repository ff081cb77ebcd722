// NcclCommunicator: gradient traffic between GPU ranks over NCCL, on a communication stream of its
// own that is ordered after the backend's compute stream through events, so all-reduces overlap
// compute without device-wide syncs. No NCCL or CUDA headers here: the state is opaque.
#pragma once

#include <cstdint>
#include <memory>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"

// cudaStream_t is `CUstream_st*` and cudaEvent_t `CUevent_st*`; naming the structs keeps CUDA
// headers out of this header.
struct CUstream_st;
struct CUevent_st;

namespace phalanx::comm {

// The element type gradients travel in. BFloat16 halves the bytes on the wire: each bucket is
// converted to bf16 on the communication stream, summed as bf16 and converted back to float.
enum class WireType { Float32, BFloat16 };

class NcclCommunicator {
 public:
  // Collective over every rank of `group`: rank 0 creates the NCCL unique id and broadcasts it
  // over MPI, then each rank joins on the device of `backend`. Every rank must pass a CUDA
  // backend; when any rank does not, every rank throws phalanx::Error (agreed over MPI first, so
  // a mixed group fails instead of hanging). `timeout_seconds` bounds each host-side wait of this
  // communicator (joining, splitting, launching, wait()); past it the communicator is aborted.
  // `backend` must outlive the communicator.
  NcclCommunicator(const Communicator& group, backend::Backend& backend, double timeout_seconds = 600);
  // Destroys the NCCL communicator after its work has finished, or aborts it when it is in an
  // error state; failures are only logged.
  ~NcclCommunicator();
  NcclCommunicator(NcclCommunicator&& other) noexcept;
  NcclCommunicator& operator=(NcclCommunicator&& other) noexcept;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const;
  int size() const;
  int device() const;
  double timeout_seconds() const;

  // Enqueues an in-place sum over the ranks of `count` floats at device address `data`, on the
  // communication stream, after all work enqueued on the compute stream so far. Returns at once;
  // the sum is ordered before later compute work only after order_compute_after_communication().
  void allreduce_sum(float* data, std::int64_t count, WireType wire = WireType::Float32);
  // Makes the compute stream wait (on the device, not the host) for every all-reduce enqueued so
  // far, so kernels enqueued next (the optimizer) see the summed gradients.
  void order_compute_after_communication();
  // Blocks the host until every all-reduce enqueued so far has finished, polling NCCL's
  // asynchronous error state and the completion event. On an NCCL error or after
  // `timeout_seconds` the communicator is aborted and phalanx::Error names the rank and the
  // operation. Afterwards every call throws.
  void wait(double timeout_seconds);
  // The same bounded wait for one event recorded on this communicator's streams (the end of one
  // step's all-reduces), not for everything enqueued since.
  void wait_for(CUevent_st* event, double timeout_seconds, const char* operation);
  // Throws (after aborting) when NCCL has reported an asynchronous error; cheap, never blocks.
  void check_async_error(const char* operation);
  // Aborts the NCCL communicator now, dropping its queued work; later calls throw. For an error
  // path, before device memory is freed: cudaFree waits for the whole device, and an all-reduce
  // kernel waiting on a peer that failed never finishes until the communicator is aborted.
  void abort_on_error();

  // Sub-groups, collective over every rank of this communicator: ranks with the same `color`
  // (>= 0) form one communicator, ordered by `key`. The result has its own communication stream.
  NcclCommunicator split(int color, int key);

  // For code that orders its own work against the all-reduces (NcclGradSync's timing events).
  CUstream_st* compute_stream() const;
  CUstream_st* communication_stream() const;

  struct State;  // NCCL communicator, streams, events, compression buffer (src/comm/nccl)

 private:
  explicit NcclCommunicator(std::unique_ptr<State> state);
  State& state() const;
  std::unique_ptr<State> state_;
};

}  // namespace phalanx::comm
