// Convolutions on cuDNN's legacy API (cuDNN 9 keeps it beside the graph API) with NHWC
// activations and NHWC ("KRSC") filters, the layout of the fast NHWC kernels. The caller's
// PyTorch [out, in, kh, kw] weights are transposed to [out, kh, kw, in] on the device before
// each forward/backward-data call, and the weight gradient back after backward-filter; those
// transposes touch only the small weight tensors, and are skipped where both layouts coincide
// (1x1 kernels, one input channel).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <unordered_map>

#include "cuda_handles.hpp"
#include "device_buffer.hpp"
#include "geometry_hash.hpp"
#include "reduction.hpp"

namespace phalanx::backend::cuda {

class Convolutions {
 public:
  Convolutions(cudnnHandle_t cudnn, cudaStream_t stream, ColumnSums& column_sums);
  ~Convolutions();

  void forward(const ConvolutionGeometry& geometry, const float* input, const float* weight,
               const float* bias, float* output);
  void backward_data(const ConvolutionGeometry& geometry, const float* grad_output, const float* weight,
                     float* grad_input);
  void backward_weights(const ConvolutionGeometry& geometry, const float* input, const float* grad_output,
                        float* grad_weight, float* grad_bias);

 private:
  struct Plan;
  Plan& plan(const ConvolutionGeometry& geometry);
  // The weights in cuDNN's layout: `weight` itself, or its transpose in weight_scratch_.
  const float* filter_for_cudnn(const ConvolutionGeometry& geometry, const float* weight);
  // Makes the workspace large enough for an algorithm search and returns its size.
  std::size_t prepare_search_workspace();

  cudnnHandle_t cudnn_;
  cudaStream_t stream_;
  ColumnSums& column_sums_;
  DeviceBuffer workspace_;       // one workspace for every algorithm, grown to the largest need
  DeviceBuffer weight_scratch_;  // weights or their gradient in cuDNN's layout
  std::unordered_map<ConvolutionGeometry, std::unique_ptr<Plan>, GeometryHash> plans_;
};

}  // namespace phalanx::backend::cuda
