// Readings of the machine's speed through a validation, against their median (machine_state.hpp).
#include "pipetwin/exec/machine_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "pipetwin/exec/profiling.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin {

MachineReadings::MachineReadings(double tolerance) : tolerance_(tolerance) {
  if (!(tolerance >= 0)) throw Error("machine readings: the tolerance must be a fraction >= 0");
}

double MachineReadings::add(const std::vector<double>& seconds_by_cpu) {
  if (seconds_by_cpu.empty()) throw Error("machine readings: a reading needs at least one CPU's time");
  if (!readings_.empty() && seconds_by_cpu.size() != readings_.front().size()) {
    throw Error("machine readings: a reading of " + std::to_string(seconds_by_cpu.size()) + " CPUs after readings of " +
                std::to_string(readings_.front().size()));
  }
  for (const double s : seconds_by_cpu) {
    if (!(s > 0) || !std::isfinite(s)) throw Error("machine readings: a time must be a positive number of seconds");
  }
  readings_.push_back(seconds_by_cpu);
  const std::vector<double> usual = usual_s();
  double off = 0;
  for (std::size_t cpu = 0; cpu < usual.size(); ++cpu) off = std::max(off, std::abs(seconds_by_cpu[cpu] / usual[cpu] - 1));
  if (!as_usual(off)) ++off_;
  return off;
}

std::vector<double> MachineReadings::usual_s() const {
  std::vector<double> usual;
  if (readings_.empty()) return usual;
  for (std::size_t cpu = 0; cpu < readings_.front().size(); ++cpu) {
    std::vector<double> values;
    for (const auto& reading : readings_) values.push_back(reading[cpu]);
    usual.push_back(median_of(values));
  }
  return usual;
}

}  // namespace pipetwin
