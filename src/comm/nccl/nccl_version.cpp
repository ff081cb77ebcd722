// nccl_version: the NCCL library this process loaded (a site may put another on the library path
// than the one the build saw). Needs no GPU.
#include <nccl.h>

#include <string>

#include "phalanx/comm/library_versions.hpp"

namespace phalanx::comm {

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL 2.9 and later encode 2.28.9 as 22809 (major * 10000 + minor * 100 + patch).
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

}  // namespace phalanx::comm
