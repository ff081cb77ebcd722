// The base Backend::make_staged_copy: synchronous copies with copy_to_host and copy_from_host. On
// the CPU backend "device" memory is host memory; a GPU backend overrides it with copies that do
// not stop the host.
#include "phalanx/backend/backend.hpp"

namespace phalanx::backend {
namespace {

class HostStagedCopy final : public StagedCopy {
 public:
  explicit HostStagedCopy(Backend& backend) : backend_(backend) {}

  void start_to_host(void* host_destination, const void* device_source, std::size_t bytes) override {
    backend_.copy_to_host(host_destination, device_source, bytes);
  }
  bool landed() override { return true; }
  void wait_landed() override {}
  void start_to_device(void* device_destination, const void* host_source, std::size_t bytes) override {
    backend_.copy_from_host(device_destination, host_source, bytes);
  }

 private:
  Backend& backend_;
};

}  // namespace

std::unique_ptr<StagedCopy> Backend::make_staged_copy() {
  return std::make_unique<HostStagedCopy>(*this);
}

}  // namespace phalanx::backend
