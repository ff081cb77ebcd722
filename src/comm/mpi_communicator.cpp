// Communicator and MpiSession over MPI. Gradients travel as float sums; Open MPI keeps one
// algorithm per (message size, communicator size), which is what makes runs bitwise repeatable.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>
#include <utility>

#include "mpi_check.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {
namespace {

MPI_Comm& comm_of(void* handle) {
  return *static_cast<MPI_Comm*>(handle);
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, ThreadLevel level) {
  // FUNNELED: only the main thread calls MPI (the loader thread never does), and GradSync
  // drives progress by testing requests between layers. A sweep asks for MULTIPLE: its
  // coordinator thread on rank 0 talks to the workers while rank 0's own trial trains.
  const int wanted = level == ThreadLevel::Multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
  int provided = 0;
  MPI_Init_thread(argc, argv, wanted, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_error_rank(rank);
  if (provided < wanted) {
    MPI_Finalize();
    throw_internal_error(
        "MPI granted thread level " + std::to_string(provided) + ", need " +
            (level == ThreadLevel::Multiple ? "MULTIPLE (a sweep's coordinator thread)" : "FUNNELED"),
        __FILE__, __LINE__);
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::abort();
}

Request::Request(void* handle) : handle_(handle) {}
Request::~Request() {
  if (handle_) {
    // A request must complete before its buffer goes away; destructors only wait, never throw.
    MPI_Wait(static_cast<MPI_Request*>(handle_), MPI_STATUS_IGNORE);
    delete static_cast<MPI_Request*>(handle_);
  }
}
Request::Request(Request&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
Request& Request::operator=(Request&& other) noexcept {
  // Swap: `other` is destroyed soon and completes whatever this request held.
  std::swap(handle_, other.handle_);
  return *this;
}
bool Request::test() {
  if (!handle_) return true;
  int done = 0;
  PHALANX_MPI(MPI_Test(static_cast<MPI_Request*>(handle_), &done, MPI_STATUS_IGNORE));
  if (done) {
    delete static_cast<MPI_Request*>(handle_);
    handle_ = nullptr;
  }
  return done != 0;
}
void Request::wait() {
  if (!handle_) return;
  PHALANX_MPI(MPI_Wait(static_cast<MPI_Request*>(handle_), MPI_STATUS_IGNORE));
  delete static_cast<MPI_Request*>(handle_);
  handle_ = nullptr;
}

Communicator::Communicator(void* handle, bool owned) : handle_(handle), owned_(owned) {
  MPI_Comm comm = comm_of(handle_);
  PHALANX_MPI(MPI_Comm_rank(comm, &rank_));
  PHALANX_MPI(MPI_Comm_size(comm, &size_));
  MPI_Comm local;
  PHALANX_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  PHALANX_MPI(MPI_Comm_rank(local, &local_rank_));
  PHALANX_MPI(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
}

Communicator Communicator::world() {
  return Communicator(new MPI_Comm(MPI_COMM_WORLD), false);
}

Communicator::~Communicator() {
  if (!handle_) return;
  if (owned_) MPI_Comm_free(&comm_of(handle_));
  delete static_cast<MPI_Comm*>(handle_);
}

Communicator::Communicator(Communicator&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      owned_(other.owned_),
      rank_(other.rank_),
      size_(other.size_),
      local_rank_(other.local_rank_),
      local_size_(other.local_size_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  // Swap: `other` frees what this communicator owned when it is destroyed.
  std::swap(handle_, other.handle_);
  std::swap(owned_, other.owned_);
  std::swap(rank_, other.rank_);
  std::swap(size_, other.size_);
  std::swap(local_rank_, other.local_rank_);
  std::swap(local_size_, other.local_size_);
  return *this;
}

std::string Communicator::host_name() const {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

Communicator Communicator::split(int color, int key) const {
  auto* result = new MPI_Comm;
  PHALANX_MPI(MPI_Comm_split(comm_of(handle_), color, key, result));
  return Communicator(result, true);
}

Communicator Communicator::subgroup(const std::vector<int>& ranks, int tag) const {
  PHALANX_CHECK(tag >= 0 && tag <= 32767, "subgroup tag ", tag, " is outside 0..32767");
  MPI_Group parent = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  PHALANX_MPI(MPI_Comm_group(comm_of(handle_), &parent));
  const int status = MPI_Group_incl(parent, static_cast<int>(ranks.size()), ranks.data(), &members);
  MPI_Group_free(&parent);
  PHALANX_MPI(status);
  auto* result = new MPI_Comm;
  const int created = MPI_Comm_create_group(comm_of(handle_), members, tag, result);
  MPI_Group_free(&members);
  if (created != MPI_SUCCESS) delete result;
  PHALANX_MPI(created);
  return Communicator(result, true);
}

Communicator Communicator::node() const {
  auto* result = new MPI_Comm;
  PHALANX_MPI(MPI_Comm_split_type(comm_of(handle_), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, result));
  return Communicator(result, true);
}

void Communicator::barrier() const {
  PHALANX_MPI(MPI_Barrier(comm_of(handle_)));
}

void Communicator::broadcast(void* data, std::size_t bytes, int root) const {
  PHALANX_CHECK(bytes <= static_cast<std::size_t>(INT_MAX), "broadcast of ", bytes, " bytes is too large");
  PHALANX_MPI(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_of(handle_)));
}

void Communicator::broadcast_string(std::string& text, int root) const {
  std::uint64_t length = text.size();
  broadcast(&length, sizeof(length), root);
  text.resize(length);
  if (length) broadcast(text.data(), length, root);
}

namespace {

// MPI counts are ints: a longer buffer is reduced in pieces of at most INT_MAX elements (a cast
// would wrap 2^32 + k to k and sum only the first k, with no error).
template <typename Value>
void allreduce_in_pieces(Value* data, std::int64_t count, MPI_Datatype type, MPI_Op operation,
                         MPI_Comm comm) {
  PHALANX_CHECK(count >= 0, "all-reduce of ", count, " elements");
  for (std::int64_t done = 0; done < count;) {
    const std::int64_t piece = std::min<std::int64_t>(count - done, INT_MAX);
    PHALANX_MPI(MPI_Allreduce(MPI_IN_PLACE, data + done, static_cast<int>(piece), type, operation, comm));
    done += piece;
  }
}

}  // namespace

void Communicator::allreduce_sum(float* data, std::int64_t count) const {
  allreduce_in_pieces(data, count, MPI_FLOAT, MPI_SUM, comm_of(handle_));
}
void Communicator::allreduce_sum(double* data, std::int64_t count) const {
  allreduce_in_pieces(data, count, MPI_DOUBLE, MPI_SUM, comm_of(handle_));
}
void Communicator::allreduce_sum(std::int64_t* data, std::int64_t count) const {
  allreduce_in_pieces(data, count, MPI_INT64_T, MPI_SUM, comm_of(handle_));
}
void Communicator::allreduce_max(double* data, std::int64_t count) const {
  allreduce_in_pieces(data, count, MPI_DOUBLE, MPI_MAX, comm_of(handle_));
}

std::vector<std::uint64_t> Communicator::allgather(std::uint64_t value) const {
  std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
  PHALANX_MPI(MPI_Allgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T, comm_of(handle_)));
  return values;
}

Request Communicator::allgather_async(const std::uint64_t* value, std::uint64_t* into) const {
  auto* request = new MPI_Request;
  const int status = MPI_Iallgather(value, 1, MPI_UINT64_T, into, 1, MPI_UINT64_T, comm_of(handle_), request);
  if (status != MPI_SUCCESS) {
    delete request;
    check_mpi(status, "MPI_Iallgather", __FILE__, __LINE__);
  }
  return Request(request);
}

std::vector<double> Communicator::allgather(double value) const {
  std::vector<double> values(static_cast<std::size_t>(size_));
  PHALANX_MPI(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, comm_of(handle_)));
  return values;
}

std::vector<std::string> Communicator::gather_strings(const std::string& text, int root) const {
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  PHALANX_MPI(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm_of(handle_)));
  std::vector<int> displacements(static_cast<std::size_t>(size_), 0);
  int total = 0;
  for (int index = 0; index < size_; ++index) {
    displacements[index] = total;
    total += lengths[index];
  }
  std::string joined(static_cast<std::size_t>(rank_ == root ? total : 0), '\0');
  PHALANX_MPI(MPI_Gatherv(text.data(), length, MPI_CHAR, joined.data(), lengths.data(), displacements.data(),
                          MPI_CHAR, root, comm_of(handle_)));
  std::vector<std::string> result;
  if (rank_ == root)
    for (int index = 0; index < size_; ++index)
      result.push_back(joined.substr(displacements[index], lengths[index]));
  return result;
}

Request Communicator::allreduce_sum_async(float* data, std::int64_t count) const {
  // One request: a bucket fits an int (distributed.bucket_mb is at most 8191 MiB).
  PHALANX_CHECK(count >= 0 && count <= INT_MAX, "an all-reduce of ", count,
                " elements is past MPI's int count");
  auto* request = new MPI_Request;
  const int status = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                    comm_of(handle_), request);
  if (status != MPI_SUCCESS) {
    delete request;
    check_mpi(status, "MPI_Iallreduce", __FILE__, __LINE__);
  }
  return Request(request);
}

void Communicator::send_string(const std::string& text, int destination, int tag) const {
  PHALANX_CHECK(text.size() <= static_cast<std::size_t>(INT_MAX), "message of ", text.size(),
                " bytes is too large");
  PHALANX_MPI(
      MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, destination, tag, comm_of(handle_)));
}

namespace {
// A matched probe (MPI_Improbe + MPI_Mrecv) takes the message out of the matching queue at
// once, so no other thread can receive it between the probe and the receive.
bool receive_matched(MPI_Comm comm, int source, int tag, Message& message) {
  int arrived = 0;
  MPI_Message handle;
  MPI_Status status;
  PHALANX_MPI(MPI_Improbe(source, tag, comm, &arrived, &handle, &status));
  if (!arrived) return false;
  int length = 0;
  PHALANX_MPI(MPI_Get_count(&status, MPI_CHAR, &length));
  message.source = status.MPI_SOURCE;
  message.tag = status.MPI_TAG;
  message.text.assign(static_cast<std::size_t>(length), '\0');
  PHALANX_MPI(MPI_Mrecv(message.text.data(), length, MPI_CHAR, &handle, MPI_STATUS_IGNORE));
  return true;
}
}  // namespace

bool Communicator::try_receive_string(int tag, Message& message) const {
  return receive_matched(comm_of(handle_), MPI_ANY_SOURCE, tag, message);
}

Message Communicator::receive_string(int source, int tag, double poll_seconds) const {
  const auto pause = std::chrono::duration<double>(poll_seconds);
  Message message;
  while (!receive_matched(comm_of(handle_), source, tag, message)) std::this_thread::sleep_for(pause);
  return message;
}

void Communicator::send(const double* data, std::int64_t count, int destination, int tag) const {
  PHALANX_CHECK(count >= 0 && count <= INT_MAX, "message of ", count, " doubles is out of range");
  PHALANX_MPI(MPI_Send(data, static_cast<int>(count), MPI_DOUBLE, destination, tag, comm_of(handle_)));
}

void Communicator::receive(double* data, std::int64_t count, int source, int tag, double poll_seconds) const {
  PHALANX_CHECK(count >= 0 && count <= INT_MAX, "message of ", count, " doubles is out of range");
  MPI_Comm comm = comm_of(handle_);
  MPI_Status status;
  if (poll_seconds <= 0) {
    PHALANX_MPI(MPI_Recv(data, static_cast<int>(count), MPI_DOUBLE, source, tag, comm, &status));
  } else {
    // Probing without a pause for the first poll_seconds catches a message that is about to
    // come at spinning latency; only a longer wait sleeps.
    const auto pause = std::chrono::duration<double>(poll_seconds);
    const auto spin_until = std::chrono::steady_clock::now() + pause;
    int arrived = 0;
    MPI_Message handle;
    for (;;) {
      PHALANX_MPI(MPI_Improbe(source, tag, comm, &arrived, &handle, &status));
      if (arrived) break;
      if (std::chrono::steady_clock::now() >= spin_until) std::this_thread::sleep_for(pause);
    }
    PHALANX_MPI(MPI_Mrecv(data, static_cast<int>(count), MPI_DOUBLE, &handle, &status));
  }
  // A shorter message than asked for would leave stale values behind; a longer one is already
  // an MPI_ERR_TRUNCATE above.
  int received = 0;
  PHALANX_MPI(MPI_Get_count(&status, MPI_DOUBLE, &received));
  PHALANX_CHECK(received == count, "expected ", count, " doubles from rank ", source, " (tag ", tag,
                "), got ", received);
}

}  // namespace phalanx::comm
