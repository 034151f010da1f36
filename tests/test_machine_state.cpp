// The machine's speed readings: their usual value and tolerance (MachineReadings), and the CPU
// speed probe that takes them (cpu::time_fixed_work_s).
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "pipetwin/exec/cpu/speed_probe.hpp"
#include "pipetwin/exec/machine_state.hpp"
#include "pipetwin/exec/thread_pinning.hpp"
#include "pipetwin/models/error.hpp"

using namespace pipetwin;

TEST_CASE("machine readings: each is judged against the per-CPU median of the readings so far, itself included") {
  MachineReadings readings(0.1);
  CHECK(readings.usual_s().empty());
  CHECK(readings.add({1.0, 2.0}) == doctest::Approx(0.0));  // the first reading is the usual one
  CHECK(readings.add({1.05, 2.0}) == doctest::Approx(0.0));  // the upper median of 1 and 1.05: itself
  CHECK(readings.usual_s() == std::vector<double>{1.05, 2.0});
  // The second CPU 40% slower: off by 2.8 / 2.0 - 1 against the median of 2, 2, 2.8.
  const double off = readings.add({1.0, 2.8});
  CHECK(off == doctest::Approx(0.4));
  CHECK_FALSE(readings.as_usual(off));
  CHECK(readings.as_usual(0.1));
  CHECK(readings.count() == 3);
  CHECK(readings.off_fraction() == doctest::Approx(1.0 / 3));
  // A faster reading is off as well: the table was not taken at that speed either.
  CHECK(readings.add({0.7, 2.0}) == doctest::Approx(0.3));  // against the median of 0.7, 1, 1, 1.05
  CHECK(readings.off_fraction() == doctest::Approx(2.0 / 4));
  CHECK_THROWS_AS(readings.add({1.0}), Error);  // another CPU count
  CHECK_THROWS_AS(readings.add({1.0, 0.0}), Error);
  CHECK_THROWS_AS(MachineReadings(-0.1), Error);
}

TEST_CASE("the speed probe times its fixed work on each CPU it is given") {
  const std::vector<int> cpus = usable_cpu_ids();
  REQUIRE_FALSE(cpus.empty());
  const std::vector<double> unpinned = cpu::time_fixed_work_s({}, 3);
  REQUIRE(unpinned.size() == 1);
  CHECK(unpinned[0] > 0);
  CHECK(unpinned[0] < 1.0);  // about a millisecond's arithmetic, not a second's
  const std::vector<double> pinned = cpu::time_fixed_work_s({cpus.front(), cpus.back()}, 1);
  REQUIRE(pinned.size() == 2);
  CHECK(pinned[0] > 0);
  CHECK(pinned[1] > 0);
  CHECK_THROWS_AS(cpu::time_fixed_work_s({}, 0), Error);
  CHECK_THROWS_AS(cpu::time_fixed_work_s({-1}), Error);
}

TEST_CASE("a validation reads the pinned CPUs its largest P uses, or every CPU the OS may place a thread on") {
  CHECK(cpu::cpus_to_read({3, 5, 7}, 2) == std::vector<int>{3, 5});
  CHECK(cpu::cpus_to_read({3}, 4) == std::vector<int>{3});
  std::vector<int> usable = usable_cpu_ids();
  if (static_cast<int>(usable.size()) > cpu::kMostReadCpus) usable.resize(cpu::kMostReadCpus);
  CHECK(cpu::cpus_to_read({}, 1) == usable);  // P = 1 alone: its thread may still land on any of them
}
