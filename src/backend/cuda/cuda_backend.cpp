// CudaBackend: device selection, handles, memory and copies, and the forwarding of each op to its
// family (see cuda_backend.hpp), plus make_cuda_backend, cuda_stream and cuda_device, the entry
// points the rest of phalanx uses.
#include "cuda_backend.hpp"

#include <type_traits>

#include "augment.hpp"
#include "batch_mixing.hpp"
#include "channel_scale.hpp"
#include "cuda_staged_copy.hpp"
#include "cuda_upload.hpp"
#include "elementwise.hpp"
#include "finite_check.hpp"
#include "optimizers.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"
#include "pooling.hpp"
#include "resample.hpp"

namespace phalanx::backend {

std::unique_ptr<Backend> make_cuda_backend(int device) {
  return std::make_unique<cuda::CudaBackend>(device);
}

namespace {

// Backend or const Backend in, CudaBackend of the same constness out.
template <typename AnyBackend>
auto& as_cuda_backend(AnyBackend& backend) {
  using Target = std::conditional_t<std::is_const_v<AnyBackend>, const cuda::CudaBackend, cuda::CudaBackend>;
  auto* cuda_backend = dynamic_cast<Target*>(&backend);
  if (!cuda_backend)
    throw_internal_error(detail::concat("backend ", backend.name(), " is not a CUDA backend"), __FILE__,
                         __LINE__);
  return *cuda_backend;
}

}  // namespace

CUstream_st* cuda_stream(Backend& backend) {
  return as_cuda_backend(backend).stream();
}

int cuda_device(const Backend& backend) {
  return as_cuda_backend(backend).device();
}

std::int64_t cuda_host_waits(const Backend& backend) {
  return as_cuda_backend(backend).host_waits();
}

bool cuda_work_pending(Backend& backend) {
  cuda::CudaBackend& cuda_backend = as_cuda_backend(backend);
  PHALANX_CUDA(cudaSetDevice(cuda_backend.device()));
  const cudaError_t status = cudaStreamQuery(cuda_backend.stream());
  if (status == cudaErrorNotReady) return true;
  PHALANX_CUDA(status);
  return false;
}

std::string cuda_pci_bus_id(const Backend& backend) {
  char bus_id[32] = {};
  const cudaError_t status = cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), as_cuda_backend(backend).device());
  if (status != cudaSuccess)
    throw_internal_error(std::string("cudaDeviceGetPCIBusId failed: ") + cudaGetErrorString(status), __FILE__,
                         __LINE__);
  return bus_id;
}

namespace cuda {

namespace {

// Validates `device` and makes it current, so that every handle created after it lives there.
int select_device(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw_internal_error(
        detail::concat("CUDA device ", device, " requested, but the CUDA runtime finds no ",
                       "usable device: ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")"),
        __FILE__, __LINE__);
  }
  if (device < 0 || device >= count)
    throw_internal_error(detail::concat("CUDA device ", device, " requested, but ", count, " device",
                                        count == 1 ? " is" : "s are", " visible"),
                         __FILE__, __LINE__);
  PHALANX_CUDA(cudaSetDevice(device));
  return device;
}

std::string describe_device(int device) {
  cudaDeviceProp properties{};
  PHALANX_CUDA(cudaGetDeviceProperties(&properties, device));
  const std::size_t version = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return detail::concat("cuda:", device, " (", properties.name, ", sm_", properties.major, properties.minor,
                        ", cuDNN ", version / 10000, ".", version % 10000 / 100, ".", version % 100, ")");
}

}  // namespace

CudaBackend::CudaBackend(int device)
    : device_(select_device(device)),
      name_(describe_device(device_)),
      convolutions_(cudnn_.get(), stream_.get(), column_sums_),
      batch_norms_(cudnn_.get(), stream_.get()),
      linears_(cublas_.get(), stream_.get(), column_sums_),
      staging_allocator_(device_) {
  PHALANX_CUDNN(cudnnSetStream(cudnn_.get(), stream_.get()));
  PHALANX_CUBLAS(cublasSetStream(cublas_.get(), stream_.get()));
  // Full fp32 GEMMs (no TF32), for parity with the CPU backend; see linear.cpp.
  PHALANX_CUBLAS(cublasSetMathMode(cublas_.get(), CUBLAS_DEFAULT_MATH));
}

CudaBackend::~CudaBackend() {
  // Queued work on either stream may still use buffers and handles that are released next.
  PHALANX_CUDA_LOG(cudaSetDevice(device_));
  PHALANX_CUDA_LOG(cudaStreamSynchronize(stream_.get()));
  PHALANX_CUDA_LOG(cudaStreamSynchronize(copy_stream_.get()));
  PHALANX_CUDA_LOG(cudaStreamSynchronize(staging_stream_.get()));
}

void CudaBackend::make_current() const {
  PHALANX_CUDA(cudaSetDevice(device_));
}

void* CudaBackend::allocate(std::size_t bytes) {
  make_current();
  if (bytes == 0) return nullptr;
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    // Only "out of memory" is a memory error: a sticky fault from an earlier kernel also fails
    // cudaMalloc, and the batch size probe must not take that for a batch that does not fit.
    if (status != cudaErrorMemoryAllocation) throw_cuda_error(status, "cudaMalloc", __FILE__, __LINE__);
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    throw Error(ErrorKind::DeviceMemory, detail::concat("device allocation of ", bytes, " bytes on ", name_,
                                                        " failed (", cudaGetErrorString(status), "); ",
                                                        free_bytes, " of ", total_bytes, " bytes free"));
  }
  return pointer;
}

void CudaBackend::deallocate(void* pointer, std::size_t) noexcept {
  if (!pointer) return;
  PHALANX_CUDA_LOG(cudaSetDevice(device_));
  // cudaFree waits for the device, so no queued kernel still reads the block afterwards; a free in
  // a training step would stall the host like a synchronize, so it counts as one.
  PHALANX_CUDA_LOG(cudaFree(pointer));
  ++host_waits_;
}

void CudaBackend::set_compute_precision(ComputePrecision precision) {
  PHALANX_REQUIRE_INPUT(activations_ == ComputePrecision::Float32 || precision == activations_,
                        "activations held in reduced precision need convolutions and linear layers computed "
                        "in that same precision (set the activations back to fp32 first)");
  compute_precision_ = precision;
  convolutions_.set_precision(precision);
  linears_.set_precision(precision);
}

void CudaBackend::set_activation_precision(ComputePrecision precision) {
  const std::string refusal = activation_precision_refusal(precision, compute_precision_);
  PHALANX_REQUIRE_INPUT(refusal.empty(), refusal);
  activations_ = precision;
  convolutions_.set_storage(precision);
  batch_norms_.set_storage(precision);
  linears_.set_storage(precision);
  cross_entropy_.set_storage(precision);
}

std::string CudaBackend::activation_precision_refusal(ComputePrecision activations,
                                                      ComputePrecision compute) const {
  // bf16 activations with fp16 arithmetic (or the other way round) would cast every operand twice,
  // and fp32 arithmetic on reduced activations would keep none of the savings: only the two
  // combinations that pay are accepted, on every GPU (a convolution direction cuDNN has no bf16 or
  // fp16 algorithm for at a shape widens its operands instead of refusing).
  if (activations == ComputePrecision::Float32 || activations == compute) return {};
  return "activations can be held in fp32 or in the compute precision of the convolutions and linear layers "
         "only";
}

namespace {

// A timing event on the compute stream: record() queues it and returns; the host waits only when
// it reads a marker, which the trainer does a step later, when the device has passed it.
class CudaTimingMarker final : public TimingMarker {
 public:
  CudaTimingMarker(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  void record() override {
    PHALANX_CUDA(cudaSetDevice(device_));
    PHALANX_CUDA(cudaEventRecord(event_.get(), stream_));
  }
  double seconds_since(TimingMarker& earlier) override {
    PHALANX_CUDA(cudaSetDevice(device_));
    PHALANX_CUDA(cudaEventSynchronize(event_.get()));
    float milliseconds = 0;
    PHALANX_CUDA(cudaEventElapsedTime(&milliseconds, static_cast<CudaTimingMarker&>(earlier).event_.get(),
                                      event_.get()));
    return milliseconds / 1000.0;
  }

 private:
  int device_;
  cudaStream_t stream_;
  TimingEvent event_;
};

}  // namespace

std::unique_ptr<TimingMarker> CudaBackend::make_timing_marker() {
  make_current();
  return std::make_unique<CudaTimingMarker>(device_, stream_.get());
}

std::unique_ptr<Upload> CudaBackend::make_upload() {
  // The upload's events are created in its constructor, on the calling thread's current device;
  // recording them on this backend's streams fails unless that device is this backend's.
  make_current();
  return std::make_unique<CudaUpload>(device_, copy_stream_.get(), stream_.get());
}

std::unique_ptr<StagedCopy> CudaBackend::make_staged_copy() {
  make_current();  // the copy's events belong to this backend's device
  return std::make_unique<CudaStagedCopy>(device_, staging_stream_.get(), stream_.get());
}

std::optional<DeviceIdentity> CudaBackend::device_identity() const {
  return DeviceIdentity{device(), cuda_pci_bus_id(*this)};
}

std::optional<DeviceMemory> CudaBackend::device_memory() {
  make_current();
  DeviceMemory memory;
  PHALANX_CUDA(cudaMemGetInfo(&memory.free_bytes, &memory.total_bytes));
  return memory;
}

void CudaBackend::synchronize() {
  make_current();
  PHALANX_CUDA(cudaStreamSynchronize(stream_.get()));
  ++host_waits_;
}

void CudaBackend::copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) {
  if (bytes == 0) return;
  make_current();
  PHALANX_CUDA(
      cudaMemcpyAsync(device_destination, host_source, bytes, cudaMemcpyHostToDevice, stream_.get()));
  // From pageable memory the runtime stages the bytes before returning; page-locked memory is
  // read later by the DMA engine, so wait for it: the caller may reuse the buffer on return.
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host_source) != cudaSuccess)
    (void)cudaGetLastError();
  else if (attributes.type == cudaMemoryTypeHost) {
    PHALANX_CUDA(cudaStreamSynchronize(stream_.get()));
    ++host_waits_;
  }
}

void CudaBackend::copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  if (bytes == 0) return;
  make_current();
  PHALANX_CUDA(
      cudaMemcpyAsync(host_destination, device_source, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  PHALANX_CUDA(cudaStreamSynchronize(stream_.get()));  // the caller reads the host bytes next
  ++host_waits_;
}

void CudaBackend::copy(void* device_destination, const void* device_source, std::size_t bytes) {
  const auto* source = static_cast<const char*>(device_source);
  auto* destination = static_cast<char*>(device_destination);
  if (bytes == 0 || destination == source) return;
  make_current();
  // cudaMemcpy leaves overlapping ranges undefined; the CPU backend's copy is a memmove, so an
  // overlapping copy bounces through scratch.
  if (destination < source + bytes && source < destination + bytes) {
    copy_scratch_.ensure(bytes);
    PHALANX_CUDA(
        cudaMemcpyAsync(copy_scratch_.data(), source, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    PHALANX_CUDA(
        cudaMemcpyAsync(destination, copy_scratch_.data(), bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    return;
  }
  PHALANX_CUDA(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
}

void CudaBackend::fill(float* data, std::int64_t count, float value) {
  make_current();
  launch_fill(stream_.get(), data, count, value);
}

void CudaBackend::normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels,
                                   const float* mean, const float* standard_deviation, float* output) {
  make_current();
  launch_normalize_images(stream_.get(), activations_, images, pixels, channels, mean, standard_deviation,
                          output);
}

void CudaBackend::augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                                           const std::int32_t* draws, const float* mean,
                                           const float* standard_deviation, float* output) {
  make_current();
  augment_scratch_.ensure(augment_operations_scratch_bytes(geometry));
  launch_augment_normalize_images(stream_.get(), activations_, geometry, images, draws, mean,
                                  standard_deviation, output, augment_scratch_.as<std::uint8_t>());
}

void CudaBackend::resample_images(const ResampleGeometry& geometry, const std::uint8_t* images,
                                  const std::int32_t* windows, std::uint8_t* output) {
  make_current();
  launch_resample_images(stream_.get(), geometry, images, windows, output);
}

void CudaBackend::mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
                            std::int32_t* partner_labels) {
  make_current();
  launch_mix_batch(stream_.get(), activations_, geometry, images, labels, partner_labels);
}

void CudaBackend::convolution_forward(const ConvolutionGeometry& geometry, const float* input,
                                      const float* weight, const float* bias, float* output) {
  make_current();
  convolutions_.forward(geometry, input, weight, bias, output);
}

void CudaBackend::convolution_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                            const float* weight, float* grad_input) {
  make_current();
  convolutions_.backward_data(geometry, grad_output, weight, grad_input);
}

void CudaBackend::convolution_backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                               const float* grad_output, float* grad_weight,
                                               float* grad_bias) {
  make_current();
  convolutions_.backward_weights(geometry, input, grad_output, grad_weight, grad_bias);
}

void CudaBackend::convolution_backward(const ConvolutionGeometry& geometry, const float* input,
                                       const float* grad_output, const float* weight, float* grad_input,
                                       float* grad_weight, float* grad_bias) {
  make_current();
  convolutions_.backward(geometry, input, grad_output, weight, grad_input, grad_weight, grad_bias);
}

std::size_t CudaBackend::pooling_workspace_bytes(const PoolingGeometry& geometry) {
  return cuda::pooling_workspace_bytes(geometry);
}

void CudaBackend::pooling_forward(const PoolingGeometry& geometry, const float* input, float* output,
                                  void* workspace) {
  make_current();
  launch_pooling_forward(stream_.get(), activations_, geometry, input, output, workspace);
}

void CudaBackend::pooling_backward(const PoolingGeometry& geometry, const float* grad_output,
                                   const void* workspace, float* grad_input) {
  make_current();
  launch_pooling_backward(stream_.get(), activations_, geometry, grad_output, workspace, grad_input);
}

void CudaBackend::batch_norm_forward_training(const BatchNormGeometry& geometry, const float* input,
                                              const float* gamma, const float* beta, float* output,
                                              float* running_mean, float* running_variance, float momentum,
                                              float* saved_mean, float* saved_inverse_std) {
  make_current();
  batch_norms_.forward_training(geometry, input, gamma, beta, output, running_mean, running_variance,
                                momentum, saved_mean, saved_inverse_std);
}

void CudaBackend::batch_norm_forward_inference(const BatchNormGeometry& geometry, const float* input,
                                               const float* gamma, const float* beta,
                                               const float* running_mean, const float* running_variance,
                                               float* output) {
  make_current();
  batch_norms_.forward_inference(geometry, input, gamma, beta, running_mean, running_variance, output);
}

void CudaBackend::batch_norm_backward(const BatchNormGeometry& geometry, const float* input,
                                      const float* grad_output, const float* gamma, const float* saved_mean,
                                      const float* saved_inverse_std, float* grad_input, float* grad_gamma,
                                      float* grad_beta) {
  make_current();
  batch_norms_.backward(geometry, input, grad_output, gamma, saved_mean, saved_inverse_std, grad_input,
                        grad_gamma, grad_beta);
}

void CudaBackend::relu_forward(std::int64_t count, const float* input, float* output) {
  make_current();
  launch_relu_forward(stream_.get(), activations_, count, input, output);
}

void CudaBackend::relu_backward(std::int64_t count, const float* output, const float* grad_output,
                                float* grad_input) {
  make_current();
  launch_relu_backward(stream_.get(), activations_, count, output, grad_output, grad_input);
}

void CudaBackend::activation_forward(ActivationKind kind, std::int64_t count, const float* input,
                                     float* output) {
  make_current();
  launch_activation_forward(stream_.get(), activations_, kind, count, input, output);
}

void CudaBackend::activation_backward(ActivationKind kind, std::int64_t count, const float* input,
                                      const float* output, const float* grad_output, float* grad_input) {
  make_current();
  PHALANX_CHECK((backward_reads_output(kind) ? output : input) != nullptr,
                "an activation's backward needs its ", backward_reads_output(kind) ? "output" : "input");
  launch_activation_backward(stream_.get(), activations_, kind, count, input, output, grad_output,
                             grad_input);
}

void CudaBackend::add(std::int64_t count, const float* a, const float* b, float* output) {
  make_current();
  launch_add(stream_.get(), activations_, count, a, b, output);
}

void CudaBackend::add_relu(std::int64_t count, const float* a, const float* b, float* output) {
  make_current();
  launch_add_relu(stream_.get(), activations_, count, a, b, output);
}

void CudaBackend::accumulate(std::int64_t count, const float* source, float* destination) {
  make_current();
  launch_accumulate(stream_.get(), activations_, count, source, destination);
}

void CudaBackend::scale(std::int64_t count, float factor, float* data) {
  make_current();
  launch_scale(stream_.get(), count, factor, data);
}

bool CudaBackend::all_finite(std::int64_t count, const float* data) {
  make_current();
  if (count > 0) ++host_waits_;  // the check reads its flag back on the host
  return finite_check_.all_finite(stream_.get(), count, data);
}

void CudaBackend::moving_average(std::int64_t count, float decay, const float* source, float* average) {
  make_current();
  launch_moving_average(stream_.get(), count, decay, source, average);
}

double CudaBackend::sum_of_squares(std::int64_t count, const float* data) {
  make_current();
  if (count > 0) ++host_waits_;  // the total is read back on the host
  return sum_of_squares_.sum(stream_.get(), count, data);
}

void CudaBackend::dropout_forward(std::int64_t count, float probability, std::uint64_t seed,
                                  std::uint64_t stream, const float* input, float* output,
                                  std::uint8_t* mask) {
  make_current();
  launch_dropout_forward(stream_.get(), activations_, count, probability, seed, stream, input, output, mask);
}

void CudaBackend::dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                                   const float* grad_output, float* grad_input) {
  make_current();
  launch_dropout_backward(stream_.get(), activations_, count, probability, mask, grad_output, grad_input);
}

void CudaBackend::channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                        const float* input, const float* scale, float* output) {
  make_current();
  launch_channel_scale_forward(stream_.get(), activations_, batch, spatial, channels, input, scale, output);
}

void CudaBackend::channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                         const float* input, const float* scale, const float* grad_output,
                                         float* grad_input, float* grad_scale) {
  make_current();
  launch_channel_scale_backward(stream_.get(), activations_, batch, spatial, channels, input, scale,
                                grad_output, grad_input, grad_scale);
}

void CudaBackend::scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                                float keep_scale, const float* input, float* output) {
  make_current();
  launch_scale_samples(stream_.get(), activations_, batch, sample_elements, keep, keep_scale, input, output);
}

void CudaBackend::transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                                    const float* input, float* output) {
  make_current();
  launch_transpose_samples(stream_.get(), activations_, batch, rows, columns, input, output);
}

void CudaBackend::linear_forward(const LinearGeometry& geometry, const float* input, const float* weight,
                                 const float* bias, float* output) {
  make_current();
  linears_.forward(geometry, input, weight, bias, output);
}

void CudaBackend::linear_backward(const LinearGeometry& geometry, const float* input, const float* weight,
                                  const float* grad_output, float* grad_input, float* grad_weight,
                                  float* grad_bias) {
  make_current();
  linears_.backward(geometry, input, weight, grad_output, grad_input, grad_weight, grad_bias);
}

LossTotals CudaBackend::softmax_cross_entropy(int batch, int classes, const float* logits,
                                              const std::int32_t* labels, float label_smoothing,
                                              float gradient_scale, float* grad_logits, const LabelMix& mix) {
  make_current();
  return cross_entropy_.softmax_cross_entropy(stream_.get(), batch, classes, logits, labels, label_smoothing,
                                              gradient_scale, grad_logits, mix);
}

void CudaBackend::softmax_cross_entropy_deferred(int batch, int classes, const float* logits,
                                                 const std::int32_t* labels, float label_smoothing,
                                                 float gradient_scale, float* grad_logits,
                                                 const LabelMix& mix) {
  make_current();
  cross_entropy_.softmax_cross_entropy_deferred(stream_.get(), batch, classes, logits, labels,
                                                label_smoothing, gradient_scale, grad_logits, mix);
}

std::vector<LossTotals> CudaBackend::take_deferred_loss_totals() {
  make_current();
  return cross_entropy_.take_deferred(stream_.get());
}

std::int64_t CudaBackend::host_waits() const {
  return host_waits_ + cross_entropy_.host_waits();
}

void CudaBackend::predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
                          float* probabilities) {
  make_current();
  cross_entropy_.predict(stream_.get(), batch, classes, logits, predicted_class, probabilities);
}

void CudaBackend::sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
                           const float* gradients, float* momentum_buffer) {
  make_current();
  launch_sgd_step(stream_.get(), count, hyperparameters, parameters, gradients, momentum_buffer);
}

void CudaBackend::adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters,
                             float* parameters, const float* gradients, float* first_moment,
                             float* second_moment) {
  make_current();
  launch_adamw_step(stream_.get(), count, hyperparameters, parameters, gradients, first_moment,
                    second_moment);
}

}  // namespace cuda
}  // namespace phalanx::backend
