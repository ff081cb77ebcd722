// The base Backend::make_upload: copies in start() with copy_from_host, timed with the steady clock.
// On the CPU backend "device" memory is host memory, so there is nothing to overlap: the copy is
// all exposed, where a training step can see it.
#include <chrono>

#include "phalanx/backend/backend.hpp"

namespace phalanx::backend {
namespace {

class HostUpload final : public Upload {
 public:
  explicit HostUpload(Backend& backend) : backend_(backend) {}

  void start(const std::vector<UploadPart>& parts) override {
    const auto begin = std::chrono::steady_clock::now();
    timing_ = UploadTiming{};
    for (const UploadPart& part : parts) {
      backend_.copy_from_host(part.device_destination, part.host_source, part.bytes);
      timing_.bytes += part.bytes;
    }
    timing_.copy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    timing_.exposed_seconds = timing_.copy_seconds;
  }
  void order_compute_after() override {}
  void wait_host() override {}
  UploadTiming timing() override { return timing_; }

 private:
  Backend& backend_;
  UploadTiming timing_;
};

}  // namespace

std::unique_ptr<Upload> Backend::make_upload() {
  return std::make_unique<HostUpload>(*this);
}

}  // namespace phalanx::backend
