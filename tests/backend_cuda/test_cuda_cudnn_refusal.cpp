// Which cuDNN statuses count as a refusal (cudnn_refusal.hpp), on which a bf16/fp16 convolution
// direction falls back to fp32 instead of failing (batch norm on bf16/fp16 runs own kernels). cuDNN 9
// reports refusals with specific codes inside a category; a list of codes missed those. Host only:
// runs wherever the CUDA backend builds.
#include <gtest/gtest.h>

#include "cudnn_refusal.hpp"

namespace phalanx::testing {
namespace {

using backend::cuda::cudnn_refused;

TEST(CudaCudnnRefusal, EveryCodeOfTheNotSupportedAndBadParamCategoriesIsARefusal) {
  for (const cudnnStatus_t status :
       {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED_SHAPE, CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
        CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, CUDNN_STATUS_NOT_SUPPORTED_PADDING,
        CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT, CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM,
        CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
        CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH})
    EXPECT_TRUE(cudnn_refused(status)) << "status " << static_cast<int>(status);
}

TEST(CudaCudnnRefusal, SuccessAndFailuresWhileRunningAreNotRefusals) {
  for (const cudnnStatus_t status :
       {CUDNN_STATUS_SUCCESS, CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH,
        CUDNN_STATUS_INTERNAL_ERROR, CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
        CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_EXECUTION_FAILED_CUDART})
    EXPECT_FALSE(cudnn_refused(status)) << "status " << static_cast<int>(status);
}

}  // namespace
}  // namespace phalanx::testing
