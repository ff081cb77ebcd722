// Backend: the one interface through which layers, optimizers and the trainer touch a device.
// It owns memory (it is an Allocator), copies, and the op families. Pointers passed to an op
// are device pointers of this backend. Ops may run asynchronously; synchronize() waits.
//
// Gradient outputs are overwritten, never accumulated, unless the name says accumulate: the
// model zeroes nothing and sums residual paths explicitly, which keeps every op's contract simple.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/backend/geometry.hpp"
#include "phalanx/core/allocator.hpp"

namespace phalanx::backend {

// The arithmetic of convolutions and linear layers, and the storage of activations. Weights and
// their gradients stay fp32 in memory (fp32 master weights, fp32 optimizer); bf16/fp16 compute casts
// the operands of those ops on the way in and runs them on tensor cores with fp32 accumulation, as
// torch.autocast does. Activations are fp32 unless set_activation_precision says otherwise.
enum class ComputePrecision { Float32, BFloat16, Float16 };

// "fp32" | "bf16" | "fp16" (train.precision) -> ComputePrecision; anything else is an internal error.
ComputePrecision compute_precision_from_name(const std::string& name);
// ComputePrecision -> "fp32" | "bf16" | "fp16".
std::string compute_precision_name(ComputePrecision precision);

// What train.precision: auto computes in on a backend, and why (for the rank's start line).
struct PrecisionChoice {
  ComputePrecision precision = ComputePrecision::Float32;
  std::string reason;  // e.g. "bf16 dot products at 2.00x this core's fp32 FMA rate"; may be empty
};

// One block of host memory copied to the device by an Upload.
struct UploadPart {
  void* device_destination = nullptr;
  const void* host_source = nullptr;
  std::size_t bytes = 0;
};

// What an Upload cost: the copy's own time, and the part of it the compute work waited for (the
// rest was hidden behind earlier compute).
struct UploadTiming {
  double copy_seconds = 0;
  double exposed_seconds = 0;
  std::size_t bytes = 0;
};

// One host-to-device copy beside the compute work: the input pipeline uploads the next batch while
// the current step computes. GPU backends copy on a copy stream and order the compute stream after
// it with an event (the host does not wait, the device is never synchronised as a whole) and time it
// with events; the CPU backend copies in start(), where the data already is host memory.
class Upload {
 public:
  virtual ~Upload() = default;
  // Enqueues the copies and returns; the host buffers stay untouched until wait_host() returns.
  virtual void start(const std::vector<UploadPart>& parts) = 0;
  // Compute work queued from now on runs after the copy.
  virtual void order_compute_after() = 0;
  // Blocks until the copy has read its host buffers (they may then be reused).
  virtual void wait_host() = 0;
  // Of the upload, after order_compute_after. Waits only for the copy's end and for the compute
  // work to reach the point where it needs the data, never for the device as a whole.
  virtual UploadTiming timing() = 0;
  // The compute work queued so far is the last to read this upload's device buffers: the next
  // start() writes them only after that work has run. GPU backends make the copy stream wait for
  // an event (the host does not wait); where copies are synchronous there is nothing to order.
  virtual void order_next_start_after_compute() {}
};

// A point in the backend's work, for timing stages of a step without making the host wait: GPU
// backends record a timing event on the compute stream (the host goes on at once), the CPU
// backend reads the host's steady clock (its ops have finished when they return).
class TimingMarker {
 public:
  virtual ~TimingMarker() = default;
  // Marks the point the device reaches once the work queued so far has run.
  virtual void record() = 0;
  // Seconds from `earlier` (recorded first, by the same backend) to this marker. Waits until the
  // device has reached this marker, so callers read markers of work that has long finished.
  virtual double seconds_since(TimingMarker& earlier) = 0;
};

// One block of device memory taken to host memory and brought back (a gradient bucket of a GPU
// rank summed over MPI, which reads host memory), stopping the host only where it reads the bytes.
// GPU backends copy to the host on a stream of their own after an event that marks the work
// queued so far (the kernels that made the block final), and back on the compute stream; the host
// buffer should then come from staging_allocator() (page-locked), or the driver stages the copy
// synchronously. The base version (the CPU backend) copies synchronously.
class StagedCopy {
 public:
  virtual ~StagedCopy() = default;
  // Enqueues the copy of `bytes` at device_source to host_destination, after the work queued so
  // far, and returns.
  virtual void start_to_host(void* host_destination, const void* device_source, std::size_t bytes) = 0;
  // Whether that copy has landed in host memory; never waits.
  virtual bool landed() = 0;
  // Blocks until it has landed.
  virtual void wait_landed() = 0;
  // Enqueues the copy of the host bytes back to device_destination, before any work queued from
  // now on, and returns. The host bytes are read later: the caller leaves them as they are until
  // the next start_to_host of this object has landed (which is ordered after this copy).
  virtual void start_to_device(void* device_destination, const void* host_source, std::size_t bytes) = 0;
};

struct DeviceIdentity {
  int index = 0;
  std::string pci_bus_id;
};

struct DeviceMemory {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

struct LossTotals {
  double loss_sum = 0;       // sum over the batch of each sample's loss
  std::int64_t correct = 0;  // samples whose arg-max equals the label
};

// Mixed targets (mixup, CutMix): each sample's loss is own_weight x its loss against its own label
// plus (1 - own_weight) x its loss against partner_labels[sample] (device memory), each with the
// call's label smoothing: timm's SoftTargetCrossEntropy of mixup_target. A sample counts as correct
// when its arg-max is the label of the larger weight (its own at own_weight >= 0.5). Without
// partner labels the loss is the plain one.
struct LabelMix {
  const std::int32_t* partner_labels = nullptr;
  float own_weight = 1.0f;
};

struct SgdHyperparameters {
  float learning_rate = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

struct AdamWHyperparameters {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.01f;
  std::int64_t step = 1;  // 1-based step count for bias correction
};

class Backend : public Allocator {
 public:
  ~Backend() override = default;

  virtual std::string name() const = 0;  // e.g. "cpu (oneDNN 3.2.0, 2 threads)"
  virtual void synchronize() = 0;
  // Host memory for buffers copied to this device every step (the loader's ring of batches):
  // page-locked on GPU backends, so the DMA engine reads it at full bus speed without a staging
  // copy; plain host memory on the CPU backend.
  virtual Allocator& staging_allocator() { return HostAllocator::instance(); }
  // The arithmetic of the convolution and linear ops from now on. The base version computes in
  // fp32 only and refuses anything else; the CPU backend adds bf16, the CUDA backend bf16 and fp16.
  virtual void set_compute_precision(ComputePrecision precision);
  // What a user should know about the arithmetic in effect, for the rank's line at the start of a
  // run (the CPU backend: whether bf16 runs on AMX, on AVX-512 bf16 instructions or emulated);
  // empty when there is nothing to say.
  virtual std::string arithmetic_note() const { return {}; }
  // What train.precision: auto computes in on this backend: the faster precision where bf16 trains
  // to fp32's accuracy (measured on the main job, docs/BENCHMARKS.md). The base version (and the
  // CUDA backend, whose bf16 and fp16 have not been compared with fp32 on a GPU; docs/GPU.md) says
  // fp32; the CPU backend says bf16 on AMX, and on AVX512-BF16 where this core's bf16 dot products
  // outpace its fp32 FMAs (measured once per process: on some CPUs they run at half the rate).
  virtual PrecisionChoice preferred_precision() const { return {}; }
  // How activations are held in memory from now on: every float* an op reads or writes as a layer
  // input or output, its gradient, the logits and their gradient, and the input ops' output. fp32
  // (the default) or the compute precision itself (bf16/fp16, as torch.autocast keeps a
  // convolution's output): the backend then reads and writes 2-byte elements there, so the ops
  // pass half the bytes and only weights are cast for a convolution or GEMM. The buffers keep
  // their fp32 size (only the first half of their bytes is used), no op changes its signature, and
  // the host sees those bytes only through the ops. Weights, their gradients, optimizer state, batch
  // norm statistics and predict's probabilities stay fp32; fill, scale and all_finite are for those
  // fp32 buffers (a zero fill is zero in every precision). The base version keeps fp32 only and
  // refuses anything else; the CPU backend adds bf16 (under bf16 compute), the CUDA backend bf16
  // and fp16. A pair that activation_precision_refusal names a reason for is refused with it.
  virtual void set_activation_precision(ComputePrecision precision);
  // Why this backend cannot hold activations in `activations` while convolutions and linear layers
  // compute in `compute`, in the words set_activation_precision refuses that pair with; empty when
  // it can. A question, not a request: nothing changes. train.activation_dtype: auto asks it before
  // it chooses reduced activations, and a precision named outright that the backend cannot hold is
  // refused with this reason before the backend is touched. The base version holds fp32 only.
  virtual std::string activation_precision_refusal(ComputePrecision activations,
                                                   ComputePrecision compute) const;
  // Whether activation_precision_refusal(activations, compute) is empty.
  bool can_hold_activations(ComputePrecision activations, ComputePrecision compute) const {
    return activation_precision_refusal(activations, compute).empty();
  }
  // Whether ops keep to algorithms whose results are the same bits on every call (true, the
  // default), or may take a faster one that can differ in the last bits from run to run (a
  // convolution's backward that sums with atomics, say), as torch.backends.cudnn.deterministic =
  // False allows. The base version (the CPU backend, deterministic either way) has nothing to choose.
  virtual void set_deterministic(bool deterministic) { (void)deterministic; }
  // Free and total memory of the device, where the backend has a memory of its own (GPUs);
  // nullopt on the CPU backend.
  virtual std::optional<DeviceMemory> device_memory() { return std::nullopt; }
  // The GPU this backend drives (its CUDA device and PCI bus id, by which NVML finds it whatever
  // CUDA_VISIBLE_DEVICES says), for the machine metrics; nullopt on the CPU backend.
  virtual std::optional<DeviceIdentity> device_identity() const { return std::nullopt; }
  // An Upload for this backend (see Upload). The base version copies with copy_from_host.
  virtual std::unique_ptr<Upload> make_upload();
  // A TimingMarker for this backend (see TimingMarker). The base version reads the host clock.
  virtual std::unique_ptr<TimingMarker> make_timing_marker();
  // A StagedCopy for this backend (see StagedCopy). The base version copies with copy_to_host and
  // copy_from_host.
  virtual std::unique_ptr<StagedCopy> make_staged_copy();

  // ---- memory -----------------------------------------------------------------------------
  virtual void copy_from_host(void* device_destination, const void* host_source, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) = 0;
  virtual void copy(void* device_destination, const void* device_source, std::size_t bytes) = 0;
  virtual void fill(float* data, std::int64_t count, float value) = 0;

  // ---- input ------------------------------------------------------------------------------
  // uint8 NHWC images -> float NHWC, (x / 255 - mean[c]) / std[c].
  virtual void normalize_images(const std::uint8_t* images, std::int64_t pixels, int channels,
                                const float* mean, const float* standard_deviation, float* output) = 0;
  // Training input augmented where it is normalised: per image, the crop, flip, auto-augment ops
  // (when geometry.operations), cutout and erased rectangle of its draws (data::AugmentDraws,
  // augment_draw_words 32-bit words per image), then normalize_images. Bit for bit
  // data::augment_image followed by normalize_images, so a GPU rank augments on the device exactly
  // what a CPU rank augments in its loader thread, and only uint8 bytes and 148 bytes of draws per
  // image cross the bus.
  virtual void augment_normalize_images(const AugmentGeometry& geometry, const std::uint8_t* images,
                                        const std::int32_t* draws, const float* mean,
                                        const float* standard_deviation, float* output) = 0;
  // Each image of `images` resized by its window (ResampleGeometry; `windows` holds
  // resample_window_words int32 per image) into `output`, all in device memory: a GPU rank's
  // RandomResizedCrop, before augment_normalize_images reads the training-size images.
  virtual void resample_images(const ResampleGeometry& geometry, const std::uint8_t* images,
                               const std::int32_t* windows, std::uint8_t* output) = 0;
  // Mixup or CutMix of a normalised batch (`images`, held in the activation precision) in place,
  // with each sample's partner (MixGeometry); partner_labels[i] = labels[batch - 1 - i], for the
  // loss's LabelMix. All three in device memory.
  virtual void mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
                         std::int32_t* partner_labels) = 0;

  // ---- convolution (input NHWC, weight [out,in,kh,kw], output NHWC) ------------------------
  // With geometry.activation == Relu the output is ReLU(convolution + bias), written in the same
  // pass (likewise linear_forward and batch_norm_forward_*): bitwise relu_forward of the plain
  // result on every value that is not NaN. Where a backend fuses it into a library kernel
  // (oneDNN post-ops) the ReLU is max(x, 0), which turns a NaN result into 0; where it cannot
  // fuse, it runs relu_forward in place after the op. Relu6, Sigmoid and Hardsigmoid likewise give
  // activation_forward of the plain result: bitwise with fp32 activations, and with bf16/fp16 ones
  // within the rounding of the plain result (the fused op rounds once, after the activation).
  virtual void convolution_forward(const ConvolutionGeometry& geometry, const float* input,
                                   const float* weight, const float* bias, float* output) = 0;
  virtual void convolution_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                         const float* weight, float* grad_input) = 0;
  // grad_bias may be null when the convolution has no bias.
  virtual void convolution_backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                            const float* grad_output, float* grad_weight,
                                            float* grad_bias) = 0;
  // Both backward directions of one convolution over the same grad_output: the weight (and bias)
  // gradients, and grad_input unless it is null (the first layer needs none). Backends whose
  // operands are converted per call (bf16/fp16 on a GPU) convert grad_output once for both. The
  // base version calls convolution_backward_weights, then convolution_backward_data.
  virtual void convolution_backward(const ConvolutionGeometry& geometry, const float* input,
                                    const float* grad_output, const float* weight, float* grad_input,
                                    float* grad_weight, float* grad_bias);

  // ---- pooling (NHWC). `workspace` holds what backward needs (max indices); its size in
  // bytes comes from pooling_workspace_bytes. Global average pooling is Average with
  // kernel = stride = the input size.
  virtual std::size_t pooling_workspace_bytes(const PoolingGeometry& geometry) = 0;
  virtual void pooling_forward(const PoolingGeometry& geometry, const float* input, float* output,
                               void* workspace) = 0;
  virtual void pooling_backward(const PoolingGeometry& geometry, const float* grad_output,
                                const void* workspace, float* grad_input) = 0;

  // ---- batch normalisation (NHWC, channels last; gamma/beta/running stats per channel) -----
  // Training: normalises with batch statistics, saves mean and 1/sqrt(var+eps) for backward,
  // and updates running stats as PyTorch does (unbiased variance, momentum on the new value).
  virtual void batch_norm_forward_training(const BatchNormGeometry& geometry, const float* input,
                                           const float* gamma, const float* beta, float* output,
                                           float* running_mean, float* running_variance, float momentum,
                                           float* saved_mean, float* saved_inverse_std) = 0;
  virtual void batch_norm_forward_inference(const BatchNormGeometry& geometry, const float* input,
                                            const float* gamma, const float* beta, const float* running_mean,
                                            const float* running_variance, float* output) = 0;
  virtual void batch_norm_backward(const BatchNormGeometry& geometry, const float* input,
                                   const float* grad_output, const float* gamma, const float* saved_mean,
                                   const float* saved_inverse_std, float* grad_input, float* grad_gamma,
                                   float* grad_beta) = 0;

  // ---- activation and element-wise ----------------------------------------------------------
  virtual void relu_forward(std::int64_t count, const float* input, float* output) = 0;
  // Uses the forward output (ReLU(x) > 0 exactly where x > 0), so the input need not be kept.
  virtual void relu_backward(std::int64_t count, const float* output, const float* grad_output,
                             float* grad_input) = 0;
  // output = kind(input), element-wise (ActivationKind in geometry.hpp); output may be input.
  virtual void activation_forward(ActivationKind kind, std::int64_t count, const float* input,
                                  float* output) = 0;
  // grad_input = grad_output * kind'(x). Kinds whose backward reads the output (Relu6, Sigmoid,
  // Hardsigmoid: backward_reads_output) read `output` only and `input` may be null; the others read
  // `input` only and `output` may be null. At a kink the derivative is one of its one-sided values
  // (backends may differ there; torch's choices are documented in docs/CONFIG.md). grad_input may
  // be grad_output.
  virtual void activation_backward(ActivationKind kind, std::int64_t count, const float* input,
                                   const float* output, const float* grad_output, float* grad_input) = 0;
  // output = a + b
  virtual void add(std::int64_t count, const float* a, const float* b, float* output) = 0;
  // output = ReLU(a + b) in one pass (a residual block's sum); bitwise add then relu_forward, NaN
  // stays NaN. The base version runs exactly those two.
  virtual void add_relu(std::int64_t count, const float* a, const float* b, float* output);
  // destination += source
  virtual void accumulate(std::int64_t count, const float* source, float* destination) = 0;
  virtual void scale(std::int64_t count, float factor, float* data) = 0;
  // True when no element is infinite or NaN (waits for the device): dynamic loss scaling asks it
  // of the summed gradients before every update.
  virtual bool all_finite(std::int64_t count, const float* data) = 0;
  // The sum of the squares of an fp32 buffer, accumulated in double in an order fixed by `count`
  // alone, so every call on the same bits gives the same answer (waits for the device): gradient
  // clipping asks it of the summed gradients. Inf or NaN elements give inf or NaN.
  virtual double sum_of_squares(std::int64_t count, const float* data) = 0;
  // average = decay * average + (1 - decay) * source, element-wise: the weight average's update
  // (train.ema), torchvision's formula, as fma(decay, average, (1 - decay) * source) in fp32 on every
  // backend, so CPU and GPU ranks agree bitwise whatever a compiler would contract.
  virtual void moving_average(std::int64_t count, float decay, const float* source, float* average) = 0;

  // Inverted dropout with a counter-based mask: keep with probability 1-p, scale by 1/(1-p).
  // The mask is a pure function of (seed, stream), so backward regenerates nothing: it reads
  // the stored mask (one byte per element).
  virtual void dropout_forward(std::int64_t count, float probability, std::uint64_t seed,
                               std::uint64_t stream, const float* input, float* output,
                               std::uint8_t* mask) = 0;
  virtual void dropout_backward(std::int64_t count, float probability, const std::uint8_t* mask,
                                const float* grad_output, float* grad_input) = 0;

  // Per sample, [rows, columns] -> [columns, rows]: NHWC <-> PyTorch's CHW feature order at a
  // flatten. The base version runs on host memory; device backends override it.
  virtual void transpose_samples(std::int64_t batch, std::int64_t rows, std::int64_t columns,
                                 const float* input, float* output);

  // ---- scaling per sample and channel (squeeze-and-excitation, stochastic depth) ------------
  // Over NHWC activations seen as [batch, spatial, channels]: output[n, p, c] = input[n, p, c] *
  // scale[n, c]. `scale` is an activation too (a sigmoid's output), held in the activation
  // precision. output may alias input.
  virtual void channel_scale_forward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                     const float* input, const float* scale, float* output) = 0;
  // grad_input = grad_output * scale (skipped when grad_input is null), and grad_scale[n, c] = the
  // sum over p of grad_output[n, p, c] * input[n, p, c].
  virtual void channel_scale_backward(std::int64_t batch, std::int64_t spatial, std::int64_t channels,
                                      const float* input, const float* scale, const float* grad_output,
                                      float* grad_input, float* grad_scale) = 0;
  // output[n, i] = keep[n] ? input[n, i] * keep_scale : 0 over [batch, sample_elements], with `keep`
  // one byte per sample in device memory: stochastic depth's forward and, on the gradient, its
  // backward. output may alias input.
  virtual void scale_samples(std::int64_t batch, std::int64_t sample_elements, const std::uint8_t* keep,
                             float keep_scale, const float* input, float* output) = 0;

  // ---- linear (input [batch, in], weight [out, in], bias [out], output [batch, out]) -------
  virtual void linear_forward(const LinearGeometry& geometry, const float* input, const float* weight,
                              const float* bias, float* output) = 0;
  // grad_input may be null (first layer); grad_bias may be null.
  virtual void linear_backward(const LinearGeometry& geometry, const float* input, const float* weight,
                               const float* grad_output, float* grad_input, float* grad_weight,
                               float* grad_bias) = 0;

  // ---- loss --------------------------------------------------------------------------------
  // Softmax cross-entropy with label smoothing, as torch.nn.CrossEntropyLoss(label_smoothing).
  // grad_logits (may be null for evaluation) = d(sum of losses)/d(logits) * gradient_scale,
  // so gradient_scale = 1/global_batch yields the gradient of the global mean loss.
  virtual LossTotals softmax_cross_entropy(int batch, int classes, const float* logits,
                                           const std::int32_t* labels, float label_smoothing,
                                           float gradient_scale, float* grad_logits,
                                           const LabelMix& mix = {}) = 0;
  // The same loss for a training step whose totals the host needs only now and then (a log
  // interval, an epoch's end, a stop): the backend keeps each call's totals where it computed them
  // and returns without waiting for the device. take_deferred_loss_totals waits for them and hands
  // over one entry per call since the last take, oldest first, so the host adds exactly the values
  // softmax_cross_entropy would have returned, in the same order. A label outside [0, classes) is
  // reported by the take. The base version (the CPU backend) computes synchronously and keeps the
  // totals in host memory.
  virtual void softmax_cross_entropy_deferred(int batch, int classes, const float* logits,
                                              const std::int32_t* labels, float label_smoothing,
                                              float gradient_scale, float* grad_logits,
                                              const LabelMix& mix = {});
  virtual std::vector<LossTotals> take_deferred_loss_totals();
  // Arg-max per row (predictions) and the softmax probabilities (may be null).
  virtual void predict(int batch, int classes, const float* logits, std::int32_t* predicted_class,
                       float* probabilities) = 0;

  // ---- optimizer: one pass over the flat parameter buffer ---------------------------------
  virtual void sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* parameters,
                        const float* gradients, float* momentum_buffer) = 0;
  virtual void adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters, float* parameters,
                          const float* gradients, float* first_moment, float* second_moment) = 0;

 private:
  std::vector<LossTotals> deferred_loss_totals_;  // the base version's (host) record
};

// The CPU backend (oneDNN + OpenMP). `threads` <= 0 keeps OpenMP's default.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace phalanx::backend
