// Readings of the machine's speed taken through a validation, and whether one is its usual speed.
#pragma once

#include <vector>

namespace pipetwin {

// Every reading a validation took (each a vector: seconds a fixed piece of work took per CPU,
// cpu::time_fixed_work_s), and the usual one: per CPU, the median of all readings so far (the
// upper one of an even count, median_of). A
// reading is "as usual" where on every CPU it is within `tolerance` (a fraction) of that median,
// the reading itself counted in.
class MachineReadings {
 public:
  explicit MachineReadings(double tolerance);
  // Records `seconds_by_cpu` and returns how far it is from the usual reading, as above: the
  // largest |reading / median - 1| over the CPUs. Throws Error for a reading of another CPU
  // count than the first one's, or a time that is not positive.
  double add(const std::vector<double>& seconds_by_cpu);
  bool as_usual(double off) const { return off <= tolerance_; }
  double tolerance() const { return tolerance_; }
  int count() const { return static_cast<int>(readings_.size()); }
  // Per CPU, the median of the readings so far; empty before the first.
  std::vector<double> usual_s() const;
  // Of the readings so far, the fraction not as usual at the time they were taken.
  double off_fraction() const { return readings_.empty() ? 0.0 : static_cast<double>(off_) / static_cast<double>(readings_.size()); }

 private:
  double tolerance_;
  std::vector<std::vector<double>> readings_;
  int off_ = 0;
};

}  // namespace pipetwin
