// The fused forward epilogue of convolutions and linear layers (see forward_epilogue.hpp): one
// grid-stride kernel per combination of result type, output type, bias and fused activation, so
// none of them branches per element on what to do.
#include "activation_functions.hpp"
#include "cuda_check.hpp"
#include "forward_epilogue.hpp"
#include "launch.hpp"
#include "phalanx/core/error.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {
namespace {

template <typename Result, typename Output, bool with_bias, typename Activation>
__global__ void forward_epilogue_kernel(const Result* result, std::int64_t count, int columns,
                                        const float* bias, Activation activation, Output* output) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float value = widen(result[i]);
    if constexpr (with_bias) value += bias[i % columns];
    output[i] = narrow<Output>(activation(value));
  }
}

template <typename Result, typename Output, bool with_bias, typename Activation>
void launch_typed(cudaStream_t stream, const void* result, std::int64_t count, int columns, const float* bias,
                  Activation activation, float* output) {
  forward_epilogue_kernel<Result, Output, with_bias, Activation>
      <<<grid_blocks(count), threads_per_block, 0, stream>>>(
          static_cast<const Result*>(result), count, columns, bias, activation, stored<Output>(output));
  PHALANX_CUDA_LAUNCHED("forward_epilogue_kernel");
}

}  // namespace

void launch_forward_epilogue(cudaStream_t stream, ComputePrecision result_type, const void* result,
                             std::int64_t rows, int columns, const float* bias, FusedActivation activation,
                             ComputePrecision output_type, float* output) {
  const std::int64_t count = rows * columns;
  if (count <= 0) return;
  if (result_type == output_type && !bias && activation == FusedActivation::None) {
    PHALANX_CHECK(result == output, "a forward epilogue with nothing to do must have its result in place");
    return;
  }
  with_stored_type(result_type, [&](auto result_tag) {
    with_stored_type(output_type, [&](auto output_tag) {
      using Result = StoredOf<decltype(result_tag)>;
      using Output = StoredOf<decltype(output_tag)>;
      with_fused_activation(activation, [&](auto function) {
        if (bias)
          launch_typed<Result, Output, true>(stream, result, count, columns, bias, function, output);
        else
          launch_typed<Result, Output, false>(stream, result, count, columns, bias, function, output);
      });
    });
  });
}

}  // namespace phalanx::backend::cuda
