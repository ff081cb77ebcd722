// NcclCommunicator and NcclGradSync of a build without NCCL (PHALANX_CUDA=OFF or no toolkit),
// as src/backend/without_cuda does for the backend: such a build has no GPU ranks, so joining an
// NCCL group is a usage error that says why, and callers need no #ifdef. Not part of
// phalanx_comm_nccl (its glob does not descend here); a CPU-only build compiles this file instead.
#include "phalanx/comm/library_versions.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/comm/nccl_grad_sync.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

// Nothing to hold: no communicator can be constructed in this build.
struct NcclCommunicator::State {};
struct NcclGradSync::Steps {};

namespace {

[[noreturn]] void no_nccl() {
  throw_input_error(
      "NCCL gradient all-reduce was asked for, but this phalanx build has no NCCL (configure with the CUDA "
      "toolkit, cuDNN and NCCL present, or train on CPU ranks)");
}

}  // namespace

NcclCommunicator::NcclCommunicator(const Communicator&, backend::Backend&, double) {
  no_nccl();
}
NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}
NcclCommunicator::~NcclCommunicator() = default;
NcclCommunicator::NcclCommunicator(NcclCommunicator&& other) noexcept = default;
NcclCommunicator& NcclCommunicator::operator=(NcclCommunicator&& other) noexcept = default;
// No instance exists in this build, so every member below is unreachable; each still says why.
NcclCommunicator::State& NcclCommunicator::state() const {
  no_nccl();
}
int NcclCommunicator::rank() const {
  no_nccl();
}
int NcclCommunicator::size() const {
  no_nccl();
}
int NcclCommunicator::device() const {
  no_nccl();
}
double NcclCommunicator::timeout_seconds() const {
  no_nccl();
}
void NcclCommunicator::allreduce_sum(float*, std::int64_t, WireType) {
  no_nccl();
}
void NcclCommunicator::order_compute_after_communication() {
  no_nccl();
}
void NcclCommunicator::wait(double) {
  no_nccl();
}
void NcclCommunicator::wait_for(CUevent_st*, double, const char*) {
  no_nccl();
}
void NcclCommunicator::check_async_error(const char*) {
  no_nccl();
}
void NcclCommunicator::abort_on_error() {}
NcclCommunicator NcclCommunicator::split(int, int) {
  no_nccl();
}
CUstream_st* NcclCommunicator::compute_stream() const {
  no_nccl();
}
CUstream_st* NcclCommunicator::communication_stream() const {
  no_nccl();
}

NcclGradSync::NcclGradSync(NcclCommunicator& communicator, float* gradients, std::int64_t elements,
                           std::size_t bucket_bytes, std::size_t first_bucket_bytes, WireType wire, bool, OneRankSum)
    : communicator_(communicator),
      gradients_(gradients),
      wire_(wire),
      plan_(elements, bucket_bytes, first_bucket_bytes) {
  no_nccl();
}
NcclGradSync::~NcclGradSync() = default;
void NcclGradSync::begin_step() {
  no_nccl();
}
void NcclGradSync::gradients_ready(std::int64_t) {
  no_nccl();
}
double NcclGradSync::wait() {
  no_nccl();
}
CommunicationSeconds NcclGradSync::read_current() {
  no_nccl();
}
CommunicationSeconds NcclGradSync::read_previous() {
  no_nccl();
}
void NcclGradSync::wait_current() {
  no_nccl();
}
CommunicationSeconds NcclGradSync::read(std::size_t) {
  no_nccl();
}
void NcclGradSync::launch(const BucketPlan::Bucket&) {
  no_nccl();
}

}  // namespace phalanx::comm

namespace phalanx::comm {

// No NCCL in this build.
std::string nccl_version() {
  return "";
}

}  // namespace phalanx::comm
