// Communicator: the ranks of one training job. This is the only interface through which the
// rest of phalanx talks to MPI (mpi.h is included only under src/comm/), so an NCCL-backed
// communicator can stand in for gradient traffic on GPU ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace phalanx::comm {

// How many threads of the process call MPI: Funneled (only the main thread; training) or
// Multiple (a sweep's coordinator thread beside the worker on rank 0).
enum class ThreadLevel { Funneled, Multiple };

// MPI lifetime for the process: MPI_Init_thread on construction, MPI_Finalize on destruction.
class MpiSession {
 public:
  // Throws when the MPI library grants less than `level`.
  MpiSession(int* argc, char*** argv, ThreadLevel level = ThreadLevel::Funneled);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // Ends every rank of the job at once with `status` (used when one rank fails mid-run, where
  // waiting for the others would hang).
  [[noreturn]] static void abort(int status);
};

// A point-to-point message received whole: who sent it, its tag and its bytes.
struct Message {
  int source = 0;
  int tag = 0;
  std::string text;
};

// A non-blocking reduction in flight.
class Request {
 public:
  Request() = default;
  explicit Request(void* handle);
  ~Request();
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  bool active() const { return handle_ != nullptr; }
  bool test();  // true when done; drives MPI progress
  void wait();

 private:
  void* handle_ = nullptr;  // MPI_Request*
};

class Communicator {
 public:
  // The world communicator (requires an MpiSession).
  static Communicator world();
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank and size among the ranks of this node (MPI_COMM_TYPE_SHARED).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::string host_name() const;

  // Sub-groups: ranks with the same color form one communicator, ordered by key.
  Communicator split(int color, int key) const;
  // The listed ranks of this communicator (in that order) as a new communicator. Collective over
  // those ranks only (MPI_Comm_create_group): the others go on undisturbed, which is how a sweep
  // merges worker groups while other groups train. Concurrent calls on one communicator whose
  // rank lists overlap in a process must differ in `tag` (0..32767).
  Communicator subgroup(const std::vector<int>& ranks, int tag) const;
  // The ranks of this node (MPI_COMM_TYPE_SHARED) in this communicator's order: the new
  // communicator's rank() is this one's local_rank(). Collective.
  Communicator node() const;

  void barrier() const;
  void broadcast(void* data, std::size_t bytes, int root) const;
  void broadcast_string(std::string& text, int root) const;
  // Blocking in-place sums; the reduction order is fixed for a given size (bitwise reproducible).
  void allreduce_sum(float* data, std::int64_t count) const;
  void allreduce_sum(double* data, std::int64_t count) const;
  void allreduce_sum(std::int64_t* data, std::int64_t count) const;
  void allreduce_max(double* data, std::int64_t count) const;
  std::vector<std::uint64_t> allgather(std::uint64_t value) const;
  // Non-blocking all-gather of one value per rank into `into` (size() values); `value` and `into`
  // must outlive the request. Every rank must call this form: MPI never matches a non-blocking
  // collective with a blocking one.
  Request allgather_async(const std::uint64_t* value, std::uint64_t* into) const;
  std::vector<double> allgather(double value) const;
  std::vector<std::string> gather_strings(const std::string& text, int root) const;
  // Non-blocking in-place float sum.
  Request allreduce_sum_async(float* data, std::int64_t count) const;

  // Point-to-point strings (sweep coordination). send_string returns once the buffer may be
  // reused; receiving is by polling, so a waiting rank sleeps instead of spinning a core
  // that a training rank beside it needs.
  void send_string(const std::string& text, int destination, int tag) const;
  // A message with `tag` from any rank, if one has arrived; never blocks. Matched probes make
  // it safe beside other threads receiving other tags on the same communicator.
  bool try_receive_string(int tag, Message& message) const;
  // Waits for a message with `tag` from `source` (polling every `poll_seconds`).
  Message receive_string(int source, int tag, double poll_seconds = 0.002) const;

  // Point-to-point doubles where latency is the point (clock offset round trips). `send`
  // returns once the buffer may be reused. `receive` waits for exactly `count` doubles from
  // `source`: poll_seconds == 0 spins in MPI (lowest latency, for an exchange in progress),
  // poll_seconds > 0 probes for that long, then sleeps that long between matched probes (for a
  // rank waiting its turn beside busy ones).
  void send(const double* data, std::int64_t count, int destination, int tag) const;
  void receive(double* data, std::int64_t count, int source, int tag, double poll_seconds = 0) const;

 private:
  friend class NodeSharedBuffer;  // splits this communicator by node
  friend class MpiIoAccess;       // hands it to HDF5's MPI-IO driver
  explicit Communicator(void* handle, bool owned);
  void* handle_ = nullptr;  // MPI_Comm*
  bool owned_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace phalanx::comm
