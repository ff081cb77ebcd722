// onednn_version: the oneDNN library this process loaded (which may differ from the headers it
// was compiled with when a site swaps the shared library).
#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "phalanx/backend/library_versions.hpp"

namespace phalanx::backend {

std::string onednn_version() {
  const dnnl_version_t* version = dnnl_version();
  std::string text = std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                     std::to_string(version->patch);
  // Distribution builds (Debian's among them) have no git hash and say "N/A".
  const std::string hash = version->hash ? version->hash : "";
  if (!hash.empty() && hash != "N/A") text += " (git " + hash + ")";
  return text;
}

}  // namespace phalanx::backend
