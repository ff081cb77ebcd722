// The base Backend::make_timing_marker: the host's steady clock. The CPU backend's ops have
// finished when they return, so the host clock at a stage boundary is the device's.
#include "phalanx/backend/backend.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::backend {
namespace {

class HostTimingMarker final : public TimingMarker {
 public:
  void record() override { seconds_ = steady_seconds(); }
  double seconds_since(TimingMarker& earlier) override {
    return seconds_ - static_cast<HostTimingMarker&>(earlier).seconds_;
  }

 private:
  double seconds_ = 0;
};

}  // namespace

std::unique_ptr<TimingMarker> Backend::make_timing_marker() {
  return std::make_unique<HostTimingMarker>();
}

}  // namespace phalanx::backend
