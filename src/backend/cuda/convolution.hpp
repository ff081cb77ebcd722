// Convolutions on cuDNN's legacy API (cuDNN 9 keeps it beside the graph API) with NHWC
// activations and NHWC ("KRSC") filters, the layout of the fast NHWC kernels. The caller's
// PyTorch [out, in, kh, kw] weights are transposed to [out, kh, kw, in] on the device before
// each forward/backward-data call, and the weight gradient back after backward-filter; those
// transposes touch only the small weight tensors, and are skipped where both layouts coincide
// (1x1 kernels, one input channel).
//
// Reduced precision (set_precision: bf16/fp16): the fp32 operands are cast into scratch, cuDNN runs
// the convolution on them with fp32 accumulation (the PSEUDO_HALF / PSEUDO_BFLOAT16 configurations,
// tensor-core math), and its result is cast back to the caller's fp32 buffer. With activations held
// in that precision too (set_storage), cuDNN reads and writes the activation buffers directly: only
// the weights (and their gradient) are cast, and the output pass exists only for a bias or ReLU.
// Plans and algorithm choices are cached per precision. A direction for which cuDNN offers no
// reduced-precision algorithm at a shape runs that shape in fp32 instead (it can lack them for a
// first layer's 1 or 3 input channels): slower there, never an error.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <unordered_map>

#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "geometry_hash.hpp"
#include "phalanx/backend/backend.hpp"
#include "reduction.hpp"

namespace phalanx::backend::cuda {

class Convolutions {
 public:
  Convolutions(cudnnHandle_t cudnn, cudaStream_t stream, ColumnSums& column_sums);
  ~Convolutions();

  void set_precision(ComputePrecision precision) { precision_ = precision; }
  // The type activations are held in (Backend::set_activation_precision): fp32 or the precision.
  void set_storage(ComputePrecision storage) { storage_ = storage; }
  // false: the fastest algorithm of any kind (Backend::set_deterministic). A direction chosen under
  // the other setting is searched again at its next call.
  void set_deterministic(bool deterministic) { deterministic_ = deterministic; }

  void forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
               const float* bias, float* output);
  void backward_data(const ConvolutionGeometry& geometry, const float* grad_output, const float* weight,
                     float* grad_input);
  void backward_weights(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                        float* grad_weight, float* grad_bias);
  // Both directions (grad_input may be null: then only the weights'). In bf16/fp16 grad_output, the
  // largest operand of the pair, is cast once and both cuDNN calls read that cast.
  void backward(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                const float* weight, float* grad_input, float* grad_weight, float* grad_bias);

 private:
  template <typename Algorithm>
  struct Choice;
  struct Plan;
  class Float32Scope;
  Plan& plan(const ConvolutionGeometry& geometry);
  // The cuDNN calls (the bias parts stay in fp32: forward's epilogue and backward_weights).
  void run_forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
                   const float* bias, float* output);
  // `grad_output_operand`, when not null, is grad_output already cast to the current precision
  // (backward's shared cast); a direction that runs in fp32 reads grad_output instead.
  void run_backward_data(const ConvolutionGeometry& geometry, const float* grad_output,
                         const void* grad_output_operand, const float* weight, float* grad_input);
  void run_backward_filter(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                           const void* grad_output_operand, float* grad_weight);
  template <typename Algorithm>
  bool fall_back_to_float32(Choice<Algorithm>& choice, const char* direction,
                            const ConvolutionGeometry& geometry) const;
  // The weights in cuDNN's layout: `weight` itself, or its transpose in weight_scratch_.
  const float* filter_for_cudnn(const ConvolutionGeometry& geometry, const float* weight);
  // Makes the workspace large enough for an algorithm search and returns its size.
  std::size_t prepare_search_workspace();
  // `count` values held as `held` (fp32 weights, or activations in storage_) as the operand type of
  // the current precision: `values` itself when the types agree, else their cast into `scratch`.
  const void* operand(const float* values, ComputePrecision held, std::size_t count, DeviceBuffer& scratch);
  // Where cuDNN writes a result of `count` elements for a destination held as `held`: `destination`
  // itself when the types agree, else `scratch`, cast into `destination` by finish_result.
  void* result_buffer(float* destination, ComputePrecision held, std::size_t count, DeviceBuffer& scratch);
  void finish_result(const void* result, ComputePrecision held, float* destination, std::size_t count);

  cudnnHandle_t cudnn_;
  cudaStream_t stream_;
  ColumnSums& column_sums_;
  DeviceBuffer workspace_;       // one workspace for every algorithm, grown to the largest need
  DeviceBuffer weight_scratch_;  // weights or their gradient in cuDNN's layout
  ComputePrecision precision_ = ComputePrecision::Float32;
  ComputePrecision storage_ = ComputePrecision::Float32;
  bool deterministic_ = true;
  // bf16/fp16 operands and results: activations (input side), activations (output side), filters.
  DeviceBuffer input_operand_, output_operand_, filter_operand_;
  std::array<std::unordered_map<ConvolutionGeometry, std::unique_ptr<Plan>, GeometryHash>, 3> plans_;
};

}  // namespace phalanx::backend::cuda
