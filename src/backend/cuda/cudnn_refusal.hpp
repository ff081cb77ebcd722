// Whether a cuDNN status says the library will not run a call as described (a data type, layout,
// shape or mode it has no kernel for), as opposed to a failure while running it. The callers that
// ask try bf16/fp16 operands first and fall back to fp32 on a refusal. cuDNN 9 reports a refusal
// with a specific code inside its category (CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
// CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, ...), so the category decides, not a list of codes.
// A refusal caused by a real mistake (a null pointer) is refused again by the fp32 call, which
// reports it as an error.
#pragma once

#include <cudnn.h>

namespace phalanx::backend::cuda {

constexpr bool cudnn_refused(cudnnStatus_t status) {
  const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(status));
  return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_BAD_PARAM;
}

}  // namespace phalanx::backend::cuda
