// The CUDA backend's entry points (cuDNN + cuBLAS + own kernels; src/backend/cuda). Every build
// defines them: a build without CUDA links src/backend/without_cuda, where the device count is 0
// and asking for a device is a usage error, so callers need no #ifdef. No CUDA headers here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"

// cudaStream_t is `CUstream_st*`; naming the struct here keeps CUDA headers out of this header.
struct CUstream_st;

namespace phalanx::backend {

// Number of usable CUDA devices; 0 when the runtime reports any error (no driver, "driver version
// is insufficient" on a machine without a GPU, no device). Never throws, never aborts.
int cuda_device_count() noexcept;
// The PCI bus ids of the usable CUDA devices, in CUDA's order (device 0 first); empty whenever
// cuda_device_count() is 0. Never throws.
std::vector<std::string> cuda_visible_devices() noexcept;

// A backend on device `device` (0-based, as CUDA numbers the visible devices). Throws
// phalanx::Error when that device does not exist or cannot be initialised.
//
// Its ops run asynchronously on one non-blocking stream, in call order; synchronize() waits.
// Host-visible results come back only through copy_to_host, softmax_cross_entropy,
// take_deferred_loss_totals and all_finite, which wait for the stream. copy_from_host returns
// once the host buffer may be reused.
// Numerics: full fp32 (no TF32) so that results match the CPU backend within float rounding.
// Like the CPU backend, one instance serves one training thread; it makes its device current on
// the calling thread at every call, so that thread may differ from the constructing one.
std::unique_ptr<Backend> make_cuda_backend(int device);

// The stream every op of `backend` runs on, for code that orders its own work (NCCL all-reduce,
// input copies) against the backend's through events. Throws when `backend` is not a CUDA backend.
CUstream_st* cuda_stream(Backend& backend);
// The device index `backend` runs on. Throws when it is not a CUDA backend.
int cuda_device(const Backend& backend);
// How many times an op of `backend` has made the host wait for the device so far (synchronize,
// copies to the host, a synchronous loss, a take of deferred loss totals, finite checks, a freed
// device buffer, since cudaFree waits for the whole device): tests
// count them to show that a training step queues its work without waiting. Throws when `backend`
// is not a CUDA backend.
std::int64_t cuda_host_waits(const Backend& backend);
// Whether work queued on `backend`'s compute stream has not finished yet (cudaStreamQuery; never
// waits): with cuda_host_waits, how a test sees that the host returned before the device was done.
// Throws when `backend` is not a CUDA backend.
bool cuda_work_pending(Backend& backend);
// Its PCI bus id ("0000:3B:00.0"): what NVML matches on, since NVML numbers all of a node's GPUs
// and ignores CUDA_VISIBLE_DEVICES. Throws when `backend` is not a CUDA backend.
std::string cuda_pci_bus_id(const Backend& backend);

}  // namespace phalanx::backend
