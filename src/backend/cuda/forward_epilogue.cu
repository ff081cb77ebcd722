// The fused forward epilogue of convolutions and linear layers (see forward_epilogue.hpp): one
// grid-stride kernel per combination of result type, output type, bias and ReLU, so none of them
// branches per element on what to do.
#include "cuda_check.hpp"
#include "forward_epilogue.hpp"
#include "launch.hpp"
#include "phalanx/core/error.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {
namespace {

template <typename Result, typename Output, bool with_bias, bool with_relu>
__global__ void forward_epilogue_kernel(const Result* result, std::int64_t count, int columns,
                                        const float* bias, Output* output) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float value = widen(result[i]);
    if constexpr (with_bias) value += bias[i % columns];
    if constexpr (with_relu) value = value < 0.0f ? 0.0f : value;
    output[i] = narrow<Output>(value);
  }
}

template <typename Result, typename Output, bool with_bias, bool with_relu>
void launch_typed(cudaStream_t stream, const void* result, std::int64_t count, int columns, const float* bias,
                  float* output) {
  forward_epilogue_kernel<Result, Output, with_bias, with_relu>
      <<<grid_blocks(count), threads_per_block, 0, stream>>>(static_cast<const Result*>(result), count,
                                                             columns, bias, stored<Output>(output));
  PHALANX_CUDA_LAUNCHED("forward_epilogue_kernel");
}

template <typename Result, typename Output>
void launch_for_types(cudaStream_t stream, const void* result, std::int64_t count, int columns,
                      const float* bias, bool relu, float* output) {
  if (bias && relu) launch_typed<Result, Output, true, true>(stream, result, count, columns, bias, output);
  if (bias && !relu) launch_typed<Result, Output, true, false>(stream, result, count, columns, bias, output);
  if (!bias && relu) launch_typed<Result, Output, false, true>(stream, result, count, columns, bias, output);
  if (!bias && !relu)
    launch_typed<Result, Output, false, false>(stream, result, count, columns, bias, output);
}

}  // namespace

void launch_forward_epilogue(cudaStream_t stream, ComputePrecision result_type, const void* result,
                             std::int64_t rows, int columns, const float* bias, FusedActivation activation,
                             ComputePrecision output_type, float* output) {
  const std::int64_t count = rows * columns;
  const bool relu = activation == FusedActivation::Relu;
  if (count <= 0) return;
  if (result_type == output_type && !bias && !relu) {
    PHALANX_CHECK(result == output, "a forward epilogue with nothing to do must have its result in place");
    return;
  }
  with_stored_type(result_type, [&](auto result_tag) {
    with_stored_type(output_type, [&](auto output_tag) {
      launch_for_types<StoredOf<decltype(result_tag)>, StoredOf<decltype(output_tag)>>(
          stream, result, count, columns, bias, relu, output);
    });
  });
}

}  // namespace phalanx::backend::cuda
