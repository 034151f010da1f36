// One simulation run's own SystemC kernel: a fresh simulation context, so that every run starts at
// time zero, elaborates its own module hierarchy and leaves nothing behind when it ends (SystemC
// 2.3's context is process-global; replacing it is the only way to elaborate again after a
// run). The time resolution is chosen per run so that the hardware's clock period is a whole
// number of units (to 1 part in 1000 or better where the run's length allows) and the longest
// possible run fits SystemC's 64-bit time. SystemC's info messages ("simulation stopped by user",
// the VCD timescale) are silenced while the run lasts; its warnings and errors are not.
#pragma once
#include <cstdint>

#include <systemc>

namespace pipetwin::sim {

class KernelSession {
 public:
  // Throws when another run is in progress in this process, or when `longest_cycles` cannot be
  // represented at any resolution.
  KernelSession(double clock_hz, std::int64_t longest_cycles);
  ~KernelSession();
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  // The clock period in units of the time resolution; every event falls on a whole cycle.
  sc_dt::uint64 period_units() const { return period_units_; }
  sc_core::sc_time cycles(std::int64_t count) const {
    return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(count) * period_units_);
  }
  std::int64_t now_cycles() const {
    return static_cast<std::int64_t>(sc_core::sc_time_stamp().value() / period_units_);
  }
  sc_core::sc_time period() const { return cycles(1); }
  // The last cycle SystemC's time can reach in this run.
  std::int64_t horizon_cycles() const { return horizon_cycles_; }

 private:
  sc_core::sc_simcontext* context_ = nullptr;
  sc_core::sc_simcontext* previous_ = nullptr;          // current before this run
  sc_core::sc_simcontext* previous_default_ = nullptr;
  sc_core::sc_actions previous_info_actions_ = 0;  // SystemC's (process-global) actions for its info messages
  sc_dt::uint64 period_units_ = 1;
  std::int64_t horizon_cycles_ = 0;
};

}  // namespace pipetwin::sim
