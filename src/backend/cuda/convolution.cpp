// cuDNN convolutions (see convolution.hpp).
//
// Algorithm choice: once per geometry and direction, on first use, cudnnFind*AlgorithmEx times
// every algorithm on the caller's real buffers with a workspace of up to 1 GiB (a quarter of the
// free memory on small GPUs), and the choice is cached with its workspace size. The fastest
// *deterministic* algorithm is taken (no atomics: the same inputs give the same bits on every
// step); only when none exists, or when train.deterministic is false (set_deterministic), does the
// fastest of any kind win. The choice follows the timings, so two runs may still pick different
// algorithms and differ in the last bits; speed comes first here, as with torch.backends.cudnn.benchmark.
//
// Math: fp32 parity with the CPU backend. The descriptors ask for CUDNN_FMA_MATH, which keeps
// cuDNN off TF32 tensor cores on Ampere and Hopper (CUDNN_DEFAULT_MATH would allow TF32 there,
// with 10-bit mantissas: relative errors near 1e-3 instead of 1e-6). The bf16/fp16 precisions take
// the tensor cores deliberately (CUDNN_TENSOR_OP_MATH on bf16/fp16 operands, fp32 accumulation).
// cuDNN selects a kernel by algorithm and math type together, so each call runs with the math type
// its algorithm was timed with (Find may time a tensor-op candidate without tensor cores).
#include "convolution.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "cudnn_refusal.hpp"
#include "elementwise.hpp"
#include "forward_epilogue.hpp"
#include "phalanx/core/error.hpp"
#include "precision_conversion.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr std::size_t search_workspace_cap = std::size_t{1} << 30;

// Same bytes in [out, in / groups, kh, kw] and [out, kh, kw, in / groups]: nothing to transpose
// (a depthwise layer's weights among them).
bool layouts_coincide(const ConvolutionGeometry& geometry) {
  return geometry.group_in_channels() == 1 || geometry.kernel_height * geometry.kernel_width == 1;
}

cudnnDataType_t operand_type(ComputePrecision precision) {
  switch (precision) {
    case ComputePrecision::BFloat16: return CUDNN_DATA_BFLOAT16;
    case ComputePrecision::Float16: return CUDNN_DATA_HALF;
    case ComputePrecision::Float32: break;
  }
  return CUDNN_DATA_FLOAT;
}

std::string describe(const ConvolutionGeometry& g) {
  return detail::concat(g.in_channels, "->", g.out_channels, " ", g.kernel_height, "x", g.kernel_width,
                        " stride ", g.stride, " padding ", g.padding, " groups ", g.groups, " dilation ",
                        g.dilation, " on ", g.batch, "x", g.in_height, "x", g.in_width);
}

// The math type a precision asks cuDNN for: FMA only in fp32 (never TF32), tensor cores otherwise.
cudnnMathType_t requested_math_type(ComputePrecision precision) {
  return precision == ComputePrecision::Float32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// How many candidates a search returned. A search that cuDNN refuses (cudnn_refusal.hpp: any code
// of the NOT_SUPPORTED or BAD_PARAM categories, e.g. for a bf16 NHWC shape with 1 or 3 channels)
// found none in bf16/fp16 (the direction then falls back to fp32); any other failure, and every
// failure in fp32, is an error.
int searched_candidates(cudnnStatus_t status, int returned, ComputePrecision precision, const char* call,
                        int line) {
  if (status == CUDNN_STATUS_SUCCESS) return returned;
  if (precision != ComputePrecision::Float32 && cudnn_refused(status)) return 0;
  throw_cudnn_error(status, call, __FILE__, line);
}

// Find returns the candidates fastest first: take the first deterministic success, or the first
// success of any kind when determinism is not asked for. An fp32 candidate timed with any math type
// but FMA (TF32 tensor cores) is never taken, whatever cuDNN reports. Nothing when no candidate ran.
template <typename Performance>
std::optional<Performance> choose_algorithm(const std::vector<Performance>& results, int returned,
                                            ComputePrecision precision, bool deterministic) {
  const Performance* fastest = nullptr;
  for (int i = 0; i < returned; ++i) {
    const Performance& result = results[i];
    if (result.status != CUDNN_STATUS_SUCCESS) continue;
    if (precision == ComputePrecision::Float32 && result.mathType != CUDNN_FMA_MATH) continue;
    if (result.determinism == CUDNN_DETERMINISTIC || !deterministic) return result;
    if (!fastest) fastest = &result;
  }
  if (fastest) return *fastest;
  return std::nullopt;
}

}  // namespace

// One direction's cached choice. cuDNN picks a kernel from the algorithm *and* the descriptor's math
// type, and the three directions share one descriptor: each call sets the math type its algorithm
// was timed with.
template <typename Algorithm>
struct Convolutions::Choice {
  bool searched = false;
  bool searched_deterministic = true;  // the setting the choice was made under
  // bf16/fp16 only: cuDNN had no algorithm for this shape in the reduced precision (it may lack
  // reduced-precision kernels for a first layer's 1 or 3 channels), so the direction runs in fp32.
  bool in_float32 = false;
  Algorithm algorithm{};
  std::size_t workspace = 0;
  cudnnMathType_t math_type = CUDNN_FMA_MATH;

  template <typename Performance>
  void take(const Performance& chosen, bool deterministic) {
    algorithm = chosen.algo;
    workspace = chosen.memory;
    math_type = chosen.mathType;
    searched = true;
    searched_deterministic = deterministic;
  }
  bool needs_search(bool deterministic) const { return !searched || searched_deterministic != deterministic; }
};

struct Convolutions::Plan {
  Plan(const ConvolutionGeometry& geometry, ComputePrecision precision);

  TensorDescriptor input, output;
  FilterDescriptor filter;
  ConvolutionDescriptor convolution;
  Choice<cudnnConvolutionFwdAlgo_t> forward;
  Choice<cudnnConvolutionBwdDataAlgo_t> backward_data;
  Choice<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
  ComputePrecision compute_precision;
  // Before a search: the math type of the precision, so cuDNN times the candidates it allows.
  void request_math_type() const;
  void use_math_type(cudnnMathType_t math_type) const;
};

Convolutions::Plan::Plan(const ConvolutionGeometry& g, ComputePrecision precision)
    : compute_precision(precision) {
  const cudnnDataType_t type = operand_type(precision);
  PHALANX_CUDNN(cudnnSetTensor4dDescriptor(input.get(), CUDNN_TENSOR_NHWC, type, g.batch, g.in_channels,
                                           g.in_height, g.in_width));
  PHALANX_CUDNN(cudnnSetTensor4dDescriptor(output.get(), CUDNN_TENSOR_NHWC, type, g.batch, g.out_channels,
                                           g.out_height(), g.out_width()));
  // A grouped filter is described as cuDNN and PyTorch both hold it: out_channels filters of
  // in_channels / groups each; the group count goes on the convolution descriptor.
  PHALANX_CUDNN(cudnnSetFilter4dDescriptor(filter.get(), type, CUDNN_TENSOR_NHWC, g.out_channels,
                                           g.group_in_channels(), g.kernel_height, g.kernel_width));
  // PyTorch's convolution is a cross-correlation (the kernel is not flipped). The compute type is
  // fp32 in every precision: bf16/fp16 operands, fp32 accumulation. cuDNN counts dilation as
  // PyTorch does (1: taps adjacent).
  PHALANX_CUDNN(cudnnSetConvolution2dDescriptor(convolution.get(), g.padding, g.padding, g.stride, g.stride,
                                                g.dilation, g.dilation, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
  PHALANX_CUDNN(cudnnSetConvolutionGroupCount(convolution.get(), g.groups));
  request_math_type();
  int dims[4] = {};
  PHALANX_CUDNN(cudnnGetConvolution2dForwardOutputDim(convolution.get(), input.get(), filter.get(), &dims[0],
                                                      &dims[1], &dims[2], &dims[3]));
  PHALANX_CHECK(dims[0] == g.batch && dims[1] == g.out_channels && dims[2] == g.out_height() &&
                    dims[3] == g.out_width(),
                "cuDNN's output shape ", dims[0], "x", dims[1], "x", dims[2], "x", dims[3],
                " differs from the geometry's for the convolution ", describe(g));
}

void Convolutions::Plan::request_math_type() const {
  use_math_type(requested_math_type(compute_precision));
}

void Convolutions::Plan::use_math_type(cudnnMathType_t math_type) const {
  PHALANX_CUDNN(cudnnSetConvolutionMathType(convolution.get(), math_type));
}

// Runs the calls within it in fp32, whatever the backend's precision: the fallback of a direction
// without a reduced-precision algorithm.
class Convolutions::Float32Scope {
 public:
  explicit Float32Scope(ComputePrecision& precision)
      : precision_(precision), saved_(std::exchange(precision, ComputePrecision::Float32)) {}
  ~Float32Scope() { precision_ = saved_; }
  Float32Scope(const Float32Scope&) = delete;
  Float32Scope& operator=(const Float32Scope&) = delete;

 private:
  ComputePrecision& precision_;
  ComputePrecision saved_;
};

// After a search that found nothing: an error in fp32; in bf16/fp16 the direction falls back to
// fp32 from now on (true: the caller reruns the call in fp32).
template <typename Algorithm>
bool Convolutions::fall_back_to_float32(Choice<Algorithm>& choice, const char* direction,
                                        const ConvolutionGeometry& geometry) const {
  if (precision_ == ComputePrecision::Float32)
    throw_internal_error(detail::concat("cuDNN has no ", direction, " algorithm for the convolution ",
                                        describe(geometry), " within the workspace limit"),
                         __FILE__, __LINE__);
  choice.in_float32 = true;
  return true;
}

Convolutions::Convolutions(cudnnHandle_t cudnn, cudaStream_t stream, ColumnSums& column_sums)
    : cudnn_(cudnn), stream_(stream), column_sums_(column_sums) {}

Convolutions::~Convolutions() = default;

Convolutions::Plan& Convolutions::plan(const ConvolutionGeometry& geometry) {
  // The fused ReLU is the epilogue's, not cuDNN's: fused and plain forward share one plan (and so
  // one algorithm, which keeps their results the same bit for bit).
  ConvolutionGeometry shape = geometry;
  shape.activation = FusedActivation::None;
  auto& plans = plans_[static_cast<std::size_t>(precision_)];
  auto found = plans.find(shape);
  if (found == plans.end()) found = plans.emplace(shape, std::make_unique<Plan>(shape, precision_)).first;
  return *found->second;
}

const void* Convolutions::operand(const float* values, ComputePrecision held, std::size_t count,
                                  DeviceBuffer& scratch) {
  if (held == precision_) return values;
  scratch.ensure(count * element_bytes(precision_));
  launch_convert(stream_, held, values, precision_, scratch.data(), static_cast<std::int64_t>(count));
  return scratch.data();
}

void* Convolutions::result_buffer(float* destination, ComputePrecision held, std::size_t count,
                                  DeviceBuffer& scratch) {
  if (held == precision_) return destination;
  scratch.ensure(count * element_bytes(precision_));
  return scratch.data();
}

void Convolutions::finish_result(const void* result, ComputePrecision held, float* destination,
                                 std::size_t count) {
  if (held != precision_)
    launch_convert(stream_, precision_, result, held, destination, static_cast<std::int64_t>(count));
}

const float* Convolutions::filter_for_cudnn(const ConvolutionGeometry& geometry, const float* weight) {
  if (layouts_coincide(geometry)) return weight;
  weight_scratch_.ensure(sizeof(float) * geometry.weight_elements());
  launch_transpose_samples(stream_, ComputePrecision::Float32, geometry.out_channels,
                           geometry.group_in_channels(), geometry.kernel_height * geometry.kernel_width,
                           weight, weight_scratch_.as<float>());
  return weight_scratch_.as<float>();
}

std::size_t Convolutions::prepare_search_workspace() {
  std::size_t free_bytes = 0, total_bytes = 0;
  PHALANX_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  workspace_.ensure(std::min(search_workspace_cap, free_bytes / 4));
  return workspace_.bytes();
}

void Convolutions::forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
                           const float* bias, float* output) {
  PHALANX_CHECK(!geometry.has_bias || bias != nullptr, "convolution with a bias needs its bias");
  run_forward(geometry, input, weight, bias, output);
}

void Convolutions::run_forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
                               const float* bias, float* output) {
  Plan& plan = this->plan(geometry);
  if (plan.forward.in_float32) {
    const Float32Scope float32(precision_);
    run_forward(geometry, input, weight, bias, output);
    return;
  }
  const void* filter = operand(filter_for_cudnn(geometry, weight), ComputePrecision::Float32,
                               geometry.weight_elements(), filter_operand_);
  const void* x = operand(input, storage_, geometry.input_elements(), input_operand_);
  void* y = result_buffer(output, storage_, geometry.output_elements(), output_operand_);
  if (plan.forward.needs_search(deterministic_)) {
    const std::size_t limit = prepare_search_workspace();
    plan.request_math_type();
    int capacity = 0, returned = 0;
    PHALANX_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &capacity));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(std::max(capacity, 1));
    const cudnnStatus_t status = cudnnFindConvolutionForwardAlgorithmEx(
        cudnn_, plan.input.get(), x, plan.filter.get(), filter, plan.convolution.get(), plan.output.get(), y,
        static_cast<int>(results.size()), &returned, results.data(), workspace_.data(), limit);
    returned =
        searched_candidates(status, returned, precision_, "cudnnFindConvolutionForwardAlgorithmEx", __LINE__);
    const auto chosen = choose_algorithm(results, returned, precision_, deterministic_);
    if (!chosen && fall_back_to_float32(plan.forward, "forward", geometry)) {
      run_forward(geometry, input, weight, bias, output);
      return;
    }
    plan.forward.take(*chosen, deterministic_);
  }
  workspace_.ensure(plan.forward.workspace);
  plan.use_math_type(plan.forward.math_type);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnConvolutionForward(cudnn_, &one, plan.input.get(), x, plan.filter.get(), filter,
                                        plan.convolution.get(), plan.forward.algorithm, workspace_.data(),
                                        plan.forward.workspace, &zero, plan.output.get(), y));
  // Conversion to the stored type, bias and fused ReLU in one pass over the output (none at all
  // when cuDNN wrote the stored type in place and there is no bias or ReLU).
  launch_forward_epilogue(
      stream_, precision_, y,
      static_cast<std::int64_t>(geometry.batch) * geometry.out_height() * geometry.out_width(),
      geometry.out_channels, geometry.has_bias ? bias : nullptr, geometry.activation, storage_, output);
}

void Convolutions::backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                 const float* weight, float* grad_input) {
  run_backward_data(geometry, grad_output, nullptr, weight, grad_input);
}

void Convolutions::run_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                                     const void* grad_output_operand, const float* weight,
                                     float* grad_input) {
  Plan& plan = this->plan(geometry);
  if (plan.backward_data.in_float32) {
    const Float32Scope float32(precision_);
    run_backward_data(geometry, grad_output, nullptr, weight, grad_input);
    return;
  }
  const void* filter = operand(filter_for_cudnn(geometry, weight), ComputePrecision::Float32,
                               geometry.weight_elements(), filter_operand_);
  const void* dy = grad_output_operand
                       ? grad_output_operand
                       : operand(grad_output, storage_, geometry.output_elements(), output_operand_);
  void* dx = result_buffer(grad_input, storage_, geometry.input_elements(), input_operand_);
  if (plan.backward_data.needs_search(deterministic_)) {
    const std::size_t limit = prepare_search_workspace();
    plan.request_math_type();
    int capacity = 0, returned = 0;
    PHALANX_CUDNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &capacity));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(std::max(capacity, 1));
    const cudnnStatus_t status = cudnnFindConvolutionBackwardDataAlgorithmEx(
        cudnn_, plan.filter.get(), filter, plan.output.get(), dy, plan.convolution.get(), plan.input.get(),
        dx, static_cast<int>(results.size()), &returned, results.data(), workspace_.data(), limit);
    returned = searched_candidates(status, returned, precision_,
                                   "cudnnFindConvolutionBackwardDataAlgorithmEx", __LINE__);
    const auto chosen = choose_algorithm(results, returned, precision_, deterministic_);
    if (!chosen && fall_back_to_float32(plan.backward_data, "backward-data", geometry)) {
      run_backward_data(geometry, grad_output, nullptr, weight, grad_input);
      return;
    }
    plan.backward_data.take(*chosen, deterministic_);
  }
  workspace_.ensure(plan.backward_data.workspace);
  plan.use_math_type(plan.backward_data.math_type);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnConvolutionBackwardData(cudnn_, &one, plan.filter.get(), filter, plan.output.get(), dy,
                                             plan.convolution.get(), plan.backward_data.algorithm,
                                             workspace_.data(), plan.backward_data.workspace, &zero,
                                             plan.input.get(), dx));
  finish_result(dx, storage_, grad_input, geometry.input_elements());
}

void Convolutions::backward_weights(const ConvolutionGeometry& geometry, const float* input,
                                    const float* grad_output, float* grad_weight, float* grad_bias) {
  run_backward_filter(geometry, input, grad_output, nullptr, grad_weight);
  if (geometry.has_bias && grad_bias)
    column_sums_.sum(stream_, storage_,
                     static_cast<std::int64_t>(geometry.batch) * geometry.out_height() * geometry.out_width(),
                     geometry.out_channels, grad_output, grad_bias);
}

// The separate calls cast grad_output once each: two passes over the largest tensor of a layer's
// backward (ResNet-50 has 53 convolutions). Here one cast serves both. Nothing else is shared:
// backward-data alone reads the filter (transposed and cast), backward-filter alone the input.
// The cast lives in output_operand_, which neither direction writes when handed the cast: they
// cast the input and write their results in input_operand_ and filter_operand_, in stream order.
// The cast is made afresh by every call, never looked up by pointer: gradient buffers are reused
// by layer after layer.
void Convolutions::backward(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                            const float* weight, float* grad_input, float* grad_weight, float* grad_bias) {
  const Plan& plan = this->plan(geometry);
  // Nothing to share where cuDNN reads grad_output as it is held (fp32 in fp32, or bf16/fp16
  // activations in their own precision), for the first layer (one direction), or where both
  // directions of this shape fell back to fp32.
  const bool share = precision_ != storage_ && grad_input != nullptr &&
                     !(plan.backward_filter.in_float32 && plan.backward_data.in_float32);
  const void* dy =
      share ? operand(grad_output, storage_, geometry.output_elements(), output_operand_) : nullptr;
  run_backward_filter(geometry, input, grad_output, dy, grad_weight);
  if (geometry.has_bias && grad_bias)
    column_sums_.sum(stream_, storage_,
                     static_cast<std::int64_t>(geometry.batch) * geometry.out_height() * geometry.out_width(),
                     geometry.out_channels, grad_output, grad_bias);
  if (grad_input) run_backward_data(geometry, grad_output, dy, weight, grad_input);
}

void Convolutions::run_backward_filter(const ConvolutionGeometry& geometry, const float* input,
                                       const float* grad_output, const void* grad_output_operand,
                                       float* grad_weight) {
  Plan& plan = this->plan(geometry);
  if (plan.backward_filter.in_float32) {
    const Float32Scope float32(precision_);
    run_backward_filter(geometry, input, grad_output, nullptr, grad_weight);
    return;
  }
  // cuDNN writes the gradient in its own layout: straight into grad_weight when the layouts
  // coincide, else into scratch, transposed into grad_weight below.
  const bool transpose = !layouts_coincide(geometry);
  if (transpose) weight_scratch_.ensure(sizeof(float) * geometry.weight_elements());
  float* filter_gradient = transpose ? weight_scratch_.as<float>() : grad_weight;
  const void* x = operand(input, storage_, geometry.input_elements(), input_operand_);
  const void* dy = grad_output_operand
                       ? grad_output_operand
                       : operand(grad_output, storage_, geometry.output_elements(), output_operand_);
  void* dw =
      result_buffer(filter_gradient, ComputePrecision::Float32, geometry.weight_elements(), filter_operand_);
  if (plan.backward_filter.needs_search(deterministic_)) {
    const std::size_t limit = prepare_search_workspace();
    plan.request_math_type();
    int capacity = 0, returned = 0;
    PHALANX_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn_, &capacity));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(std::max(capacity, 1));
    const cudnnStatus_t status = cudnnFindConvolutionBackwardFilterAlgorithmEx(
        cudnn_, plan.input.get(), x, plan.output.get(), dy, plan.convolution.get(), plan.filter.get(), dw,
        static_cast<int>(results.size()), &returned, results.data(), workspace_.data(), limit);
    returned = searched_candidates(status, returned, precision_,
                                   "cudnnFindConvolutionBackwardFilterAlgorithmEx", __LINE__);
    const auto chosen = choose_algorithm(results, returned, precision_, deterministic_);
    if (!chosen && fall_back_to_float32(plan.backward_filter, "backward-filter", geometry)) {
      run_backward_filter(geometry, input, grad_output, nullptr, grad_weight);
      return;
    }
    plan.backward_filter.take(*chosen, deterministic_);
  }
  workspace_.ensure(plan.backward_filter.workspace);
  plan.use_math_type(plan.backward_filter.math_type);
  const float one = 1.0f, zero = 0.0f;
  PHALANX_CUDNN(cudnnConvolutionBackwardFilter(cudnn_, &one, plan.input.get(), x, plan.output.get(), dy,
                                               plan.convolution.get(), plan.backward_filter.algorithm,
                                               workspace_.data(), plan.backward_filter.workspace, &zero,
                                               plan.filter.get(), dw));
  finish_result(dw, ComputePrecision::Float32, filter_gradient, geometry.weight_elements());
  if (transpose)
    launch_transpose_samples(stream_, ComputePrecision::Float32, geometry.out_channels,
                             geometry.kernel_height * geometry.kernel_width, geometry.group_in_channels(),
                             filter_gradient, grad_weight);
}

}  // namespace phalanx::backend::cuda
