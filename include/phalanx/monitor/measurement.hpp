// Running mean and peak of one sampled quantity, shared by the GPU and host monitors. A count of
// zero means "never measured": callers leave such a quantity out of their reports rather than
// write a made-up zero.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace phalanx::monitor {

struct Measurement {
  std::size_t count = 0;
  double sum = 0.0;
  double peak = 0.0;

  void add(double value) {
    peak = count == 0 ? value : std::max(peak, value);
    sum += value;
    ++count;
  }
  bool measured() const { return count > 0; }
  double mean() const { return count == 0 ? 0.0 : sum / static_cast<double>(count); }
};

// How one interval's value of a metric folds into the run's: a mean weighted by the intervals'
// lengths, the highest value, or a sum (energy, sample counts).
enum class RunTotal { Mean, Peak, Sum };

// One metric of an interval, as reported per epoch and folded into summary.json's totals.
struct MetricField {
  std::string name;
  double value = 0.0;
  RunTotal total = RunTotal::Mean;
};

// Seconds on the steady clock: the time base of every sample, immune to wall-clock jumps.
double steady_seconds();

}  // namespace phalanx::monitor
