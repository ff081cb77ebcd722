// NcclCommunicator over NCCL 2.28 in non-blocking mode: every NCCL call returns at once and the
// host polls ncclCommGetAsyncError with a deadline, so a failed or missing peer ends in
// ncclCommAbort and a phalanx::Error naming the rank and the operation, never in a silent hang.
#include "phalanx/comm/nccl_communicator.hpp"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <utility>

#include "../../backend/cuda/cuda_check.hpp"
#include "../../backend/cuda/cuda_handles.hpp"
#include "bfloat16_conversion.hpp"
#include "cuda_events.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

struct NcclCommunicator::State {
  ncclComm_t communicator = nullptr;  // null once destroyed or aborted
  backend::Backend* backend = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
  double timeout_seconds = 600;
  bool aborted = false;
  backend::cuda::Stream communication_stream;  // created on `device` (current at construction)
  nccl::OrderingEvent compute_ready;           // compute stream -> communication stream
  nccl::OrderingEvent communication_done;      // communication stream -> compute stream / host
  // bf16 staging for compressed all-reduce, allocated stream-ordered on the communication stream
  // (so growing it never synchronises the device) and reused by every bucket, which the stream
  // serialises.
  std::uint16_t* compression_buffer = nullptr;
  std::int64_t compression_capacity = 0;

  ~State();
  // Makes this communicator's device current on the calling thread (the training thread may
  // differ from the constructing one, as for the backend).
  void select_device() const;
  cudaStream_t compute_stream() const { return backend::cuda_stream(*backend); }
  // Aborts the communicator (once) and throws an Error naming the rank and `operation`.
  [[noreturn]] void fail(const std::string& operation, const std::string& reason);
  // Aborts the communicator, never destroys it (destroy would wait for the peers that failed
  // us); a failed abort is a warning. It is unusable afterwards.
  void abort_communicator();
  void require_usable(const char* operation) const;
  // Completes a non-blocking NCCL call: polls `communicator` while it reports ncclInProgress, up
  // to the timeout; any other result than success aborts and throws.
  void settle(ncclComm_t polled, ncclResult_t result, const char* operation);
  void check_async_error(const char* operation);
  // Blocks until `event` has completed, polling NCCL's error state; aborts on error or timeout.
  void wait_for_event(cudaEvent_t event, double timeout_seconds, const char* operation);
};

namespace {

using Clock = std::chrono::steady_clock;

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

std::string nccl_reason(ncclResult_t result, ncclComm_t communicator) {
  std::string reason = ncclGetErrorString(result);
  const char* last = ncclGetLastError(communicator);
  if (last && *last) reason += std::string(" (") + last + ")";
  return reason;
}

// Polling interval: first yield (an all-reduce of a small bucket ends within microseconds), then
// back off to at most a millisecond so that a long wait does not burn a core.
class Backoff {
 public:
  void pause() {
    if (rounds_++ < 64) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(interval_);
    interval_ = std::min(interval_ * 2, std::chrono::microseconds(1000));
  }

 private:
  int rounds_ = 0;
  std::chrono::microseconds interval_{20};
};

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

NcclCommunicator::State::~State() {
  // The device first, also for an aborted communicator: the compression buffer below is freed on
  // this device's stream.
  select_device();
  if (communicator) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(communicator, &state);
    bool finished = false;
    // While an exception unwinds (this rank failed, say on bad input), the peers may never join
    // the work still queued: finalizing would wait the whole timeout for them, so abort at once.
    const bool unwinding = std::uncaught_exceptions() > 0;
    if (!unwinding && query == ncclSuccess && state == ncclSuccess) {
      // Finalize flushes outstanding work; in non-blocking mode it is polled like any other call.
      ncclResult_t result = ncclCommFinalize(communicator);
      const auto deadline = deadline_after(timeout_seconds);
      Backoff backoff;
      while (result == ncclInProgress && Clock::now() < deadline) {
        backoff.pause();
        if (ncclCommGetAsyncError(communicator, &state) != ncclSuccess) break;
        result = state;
      }
      finished = result == ncclSuccess;
    }
    if (finished) {
      const ncclResult_t result = ncclCommDestroy(communicator);
      if (result != ncclSuccess)
        std::fprintf(stderr, "phalanx: warning: rank %d: ncclCommDestroy failed: %s\n", rank,
                     ncclGetErrorString(result));
    } else {
      std::fprintf(stderr, "phalanx: warning: rank %d: NCCL communicator %s; aborting it\n", rank,
                   unwinding ? "released during an error" : "in an error state or not quiescent");
      abort_communicator();
    }
  }
  // Stream-ordered: freed once the all-reduces that used it have run.
  if (compression_buffer) PHALANX_CUDA_LOG(cudaFreeAsync(compression_buffer, communication_stream.get()));
}

void NcclCommunicator::State::select_device() const {
  PHALANX_CUDA_LOG(cudaSetDevice(device));
}

void NcclCommunicator::State::abort_communicator() {
  if (communicator) {
    const ncclResult_t result = ncclCommAbort(communicator);
    if (result != ncclSuccess)
      std::fprintf(stderr, "phalanx: warning: rank %d: ncclCommAbort failed: %s\n", rank,
                   ncclGetErrorString(result));
    communicator = nullptr;
  }
  aborted = true;
}

void NcclCommunicator::State::fail(const std::string& operation, const std::string& reason) {
  abort_communicator();
  throw_internal_error(
      detail::concat("NCCL ", operation, " failed on NCCL rank ", rank, " of ", size, " (cuda:", device,
                     "): ", reason, "; the NCCL communicator was aborted"),
      __FILE__, __LINE__);
}

void NcclCommunicator::State::require_usable(const char* operation) const {
  if (!communicator)
    throw_internal_error(detail::concat("NCCL ", operation, " on NCCL rank ", rank,
                                        aborted ? ": the communicator was aborted after an earlier failure"
                                                : ": the communicator was moved from"),
                         __FILE__, __LINE__);
}

void NcclCommunicator::State::settle(ncclComm_t polled, ncclResult_t result, const char* operation) {
  const auto deadline = deadline_after(timeout_seconds);
  Backoff backoff;
  while (result == ncclInProgress) {
    if (Clock::now() > deadline) {
      if (polled != communicator) (void)ncclCommAbort(polled);
      fail(operation,
           detail::concat("still in progress after ", timeout_seconds, " s (a peer may be missing)"));
    }
    backoff.pause();
    const ncclResult_t query = ncclCommGetAsyncError(polled, &result);
    if (query != ncclSuccess) result = query;
  }
  if (result != ncclSuccess) {
    const std::string reason = nccl_reason(result, polled);
    if (polled != communicator) (void)ncclCommAbort(polled);
    fail(operation, reason);
  }
}

void NcclCommunicator::State::check_async_error(const char* operation) {
  require_usable(operation);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t query = ncclCommGetAsyncError(communicator, &state);
  if (query != ncclSuccess) fail(operation, nccl_reason(query, communicator));
  // In progress here means an earlier non-blocking call is still launching; not an error.
  if (state != ncclSuccess && state != ncclInProgress) fail(operation, nccl_reason(state, communicator));
}

void NcclCommunicator::State::wait_for_event(cudaEvent_t event, double wait_seconds, const char* operation) {
  const auto deadline = deadline_after(wait_seconds);
  Backoff backoff;
  for (;;) {
    check_async_error(operation);
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      (void)cudaGetLastError();
      fail(operation, detail::concat("CUDA reported ", cudaGetErrorName(status), " (",
                                     cudaGetErrorString(status), ") while waiting"));
    }
    if (Clock::now() > deadline)
      fail(operation,
           detail::concat("not finished after ", wait_seconds, " s (a peer may be stuck or gone)"));
    backoff.pause();
  }
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclCommunicator::NcclCommunicator(const Communicator& group, backend::Backend& backend,
                                   double timeout_seconds) {
  // Agree first that every rank has a GPU: a rank that threw alone would leave the others
  // waiting in the broadcast below.
  int device = -1;
  try {
    device = backend::cuda_device(backend);
  } catch (const Error&) {
    device = -1;
  }
  std::int64_t ranks_without_gpu = device < 0 ? 1 : 0;
  group.allreduce_sum(&ranks_without_gpu, 1);
  if (ranks_without_gpu > 0)
    throw_input_error(detail::concat("NCCL needs a CUDA backend on every rank of the group; ",
                                     ranks_without_gpu, " of ", group.size(),
                                     " ranks have none (this rank runs on ", backend.name(), ")"));

  PHALANX_CUDA(cudaSetDevice(device));
  auto state = std::make_unique<State>();
  state->backend = &backend;
  state->device = device;
  state->rank = group.rank();
  state->size = group.size();
  state->timeout_seconds = timeout_seconds;

  // Rank 0's id and its status travel together, so a failed ncclGetUniqueId fails every rank.
  struct {
    std::int32_t status;
    ncclUniqueId id;
  } shared{};
  if (group.rank() == 0) shared.status = ncclGetUniqueId(&shared.id);
  group.broadcast(&shared, sizeof shared, 0);
  if (shared.status != ncclSuccess)
    state->fail("ncclGetUniqueId",
                detail::concat("rank 0 could not create the NCCL id: ",
                               ncclGetErrorString(static_cast<ncclResult_t>(shared.status))));

  ncclConfig_t config = non_blocking_config();
  ncclComm_t communicator = nullptr;
  const ncclResult_t result =
      ncclCommInitRankConfig(&communicator, group.size(), shared.id, group.rank(), &config);
  if (communicator == nullptr) state->fail("ncclCommInitRankConfig", nccl_reason(result, nullptr));
  state->communicator = communicator;
  state->settle(communicator, result, "ncclCommInitRankConfig");
  state_ = std::move(state);
}

NcclCommunicator::~NcclCommunicator() = default;
NcclCommunicator::NcclCommunicator(NcclCommunicator&& other) noexcept = default;
NcclCommunicator& NcclCommunicator::operator=(NcclCommunicator&& other) noexcept {
  // Swap: `other` releases what this communicator held when it is destroyed.
  std::swap(state_, other.state_);
  return *this;
}

NcclCommunicator::State& NcclCommunicator::state() const {
  PHALANX_CHECK(state_ != nullptr, "use of a moved-from NcclCommunicator");
  return *state_;
}

int NcclCommunicator::rank() const {
  return state().rank;
}
int NcclCommunicator::size() const {
  return state().size;
}
int NcclCommunicator::device() const {
  return state().device;
}
double NcclCommunicator::timeout_seconds() const {
  return state().timeout_seconds;
}
CUstream_st* NcclCommunicator::compute_stream() const {
  return state().compute_stream();
}
CUstream_st* NcclCommunicator::communication_stream() const {
  return state().communication_stream.get();
}

void NcclCommunicator::allreduce_sum(float* data, std::int64_t count, WireType wire) {
  State& self = state();
  self.require_usable("all-reduce");
  PHALANX_CHECK(count >= 0, "negative all-reduce count ", count);
  if (count == 0) return;
  self.select_device();
  self.check_async_error("all-reduce");
  cudaStream_t stream = self.communication_stream.get();
  // Ordered after everything the compute stream has been given so far (the bucket's gradients).
  PHALANX_CUDA(cudaEventRecord(self.compute_ready.get(), self.compute_stream()));
  PHALANX_CUDA(cudaStreamWaitEvent(stream, self.compute_ready.get(), 0));
  const auto elements = static_cast<std::size_t>(count);
  if (wire == WireType::Float32) {
    self.settle(self.communicator,
                ncclAllReduce(data, data, elements, ncclFloat32, ncclSum, self.communicator, stream),
                "all-reduce (float32)");
    return;
  }
  if (count > self.compression_capacity) {
    if (self.compression_buffer) PHALANX_CUDA(cudaFreeAsync(self.compression_buffer, stream));
    self.compression_buffer = nullptr;
    self.compression_capacity = 0;
    void* allocation = nullptr;
    PHALANX_CUDA(cudaMallocAsync(&allocation, elements * sizeof(std::uint16_t), stream));
    self.compression_buffer = static_cast<std::uint16_t*>(allocation);
    self.compression_capacity = count;
  }
  nccl::float_to_bfloat16(data, self.compression_buffer, count, stream);
  self.settle(self.communicator,
              ncclAllReduce(self.compression_buffer, self.compression_buffer, elements, ncclBfloat16, ncclSum,
                            self.communicator, stream),
              "all-reduce (bf16)");
  nccl::bfloat16_to_float(self.compression_buffer, data, count, stream);
}

void NcclCommunicator::order_compute_after_communication() {
  State& self = state();
  self.require_usable("ordering compute after communication");
  self.select_device();
  PHALANX_CUDA(cudaEventRecord(self.communication_done.get(), self.communication_stream.get()));
  PHALANX_CUDA(cudaStreamWaitEvent(self.compute_stream(), self.communication_done.get(), 0));
}

void NcclCommunicator::wait(double timeout_seconds) {
  State& self = state();
  self.require_usable("wait for all-reduce");
  self.select_device();
  PHALANX_CUDA(cudaEventRecord(self.communication_done.get(), self.communication_stream.get()));
  self.wait_for_event(self.communication_done.get(), timeout_seconds, "wait for all-reduce");
}

void NcclCommunicator::wait_for(CUevent_st* event, double timeout_seconds, const char* operation) {
  State& self = state();
  self.require_usable(operation);
  self.select_device();
  self.wait_for_event(event, timeout_seconds, operation);
}

void NcclCommunicator::check_async_error(const char* operation) {
  state().check_async_error(operation);
}

void NcclCommunicator::abort_on_error() {
  State& self = state();
  if (!self.communicator) return;
  self.select_device();
  std::fprintf(stderr, "phalanx: warning: rank %d: NCCL communicator released during an error; aborting it\n",
               self.rank);
  self.abort_communicator();
}

NcclCommunicator NcclCommunicator::split(int color, int key) {
  State& self = state();
  self.require_usable("split");
  PHALANX_CHECK(color >= 0, "split color must be >= 0, got ", color);
  self.select_device();
  self.check_async_error("split");
  auto child = std::make_unique<State>();
  child->backend = self.backend;
  child->device = self.device;
  child->timeout_seconds = self.timeout_seconds;
  ncclConfig_t config = non_blocking_config();
  ncclComm_t communicator = nullptr;
  const ncclResult_t result = ncclCommSplit(self.communicator, color, key, &communicator, &config);
  // Without a handle the split failed on the parent; the peers are in the same split, so the
  // parent is aborted rather than left waiting for them.
  if (communicator == nullptr)
    self.fail("split", result == ncclSuccess || result == ncclInProgress
                           ? std::string("NCCL returned no communicator")
                           : nccl_reason(result, self.communicator));
  child->communicator = communicator;
  child->rank = self.rank;
  child->size = self.size;
  // The child finishes joining in the background; failures name the parent's rank until then.
  child->settle(communicator, result, "split");
  int rank = 0, size = 0;
  child->settle(communicator, ncclCommUserRank(communicator, &rank), "split (rank query)");
  child->settle(communicator, ncclCommCount(communicator, &size), "split (size query)");
  child->rank = rank;
  child->size = size;
  return NcclCommunicator(std::move(child));
}

}  // namespace phalanx::comm
