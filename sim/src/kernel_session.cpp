// A fresh SystemC simulation context per run, and the time resolution for the run's clock.
#include "kernel_session.hpp"

#include <cmath>

#include "pipetwin/models/error.hpp"

namespace pipetwin::sim {
namespace {

// The longest SystemC time a run may reach, in resolution units (below 2^63, so that sums of a
// time and a duration cannot wrap).
constexpr double kMaxUnits = 9.0e18;

struct Resolution {
  double value;
  sc_core::sc_time_unit unit;
  double seconds;
};

}  // namespace

KernelSession::KernelSession(double clock_hz, std::int64_t longest_cycles) {
  if (sc_core::sc_curr_simcontext != nullptr && sc_core::sc_is_running()) {
    throw Error("the SystemC simulator is already running a graph in this process (simulate() is not reentrant)");
  }
  if (!(clock_hz > 0) || !std::isfinite(clock_hz)) throw Error("cannot simulate: the clock must be a positive number of Hz");
  static constexpr Resolution kResolutions[] = {
      {1, sc_core::SC_FS, 1e-15},  {10, sc_core::SC_FS, 1e-14},  {100, sc_core::SC_FS, 1e-13},
      {1, sc_core::SC_PS, 1e-12},  {10, sc_core::SC_PS, 1e-11},  {100, sc_core::SC_PS, 1e-10},
      {1, sc_core::SC_NS, 1e-9},   {10, sc_core::SC_NS, 1e-8},   {100, sc_core::SC_NS, 1e-7},
      {1, sc_core::SC_US, 1e-6},   {10, sc_core::SC_US, 1e-5},   {100, sc_core::SC_US, 1e-4},
      {1, sc_core::SC_MS, 1e-3},   {10, sc_core::SC_MS, 1e-2},   {100, sc_core::SC_MS, 1e-1},
      {1, sc_core::SC_SEC, 1}};
  const double longest = static_cast<double>(std::max<std::int64_t>(longest_cycles, 1));
  const Resolution* chosen = nullptr;
  for (const auto& resolution : kResolutions) {
    const double units = std::max(1.0, std::round(1.0 / (clock_hz * resolution.seconds)));
    if (longest * units <= kMaxUnits) {
      chosen = &resolution;
      period_units_ = static_cast<sc_dt::uint64>(units);
      break;
    }
  }
  if (chosen == nullptr) {
    throw Error("cannot simulate: the graph may last up to " + short_number(longest) +
                " cycles, more than SystemC's 64-bit time holds at any resolution; use the analytic engine");
  }
  horizon_cycles_ = static_cast<std::int64_t>(kMaxUnits / static_cast<double>(period_units_));
  previous_info_actions_ = sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  previous_ = sc_core::sc_curr_simcontext;
  previous_default_ = sc_core::sc_default_global_context;
  context_ = new sc_core::sc_simcontext();
  sc_core::sc_curr_simcontext = context_;
  sc_core::sc_default_global_context = context_;
  sc_core::sc_set_time_resolution(chosen->value, chosen->unit);
}

KernelSession::~KernelSession() {
  // The context's destructor still asks for the current context: it goes first, or SystemC
  // would make a new default one that nobody deletes.
  // The context that was current before the run (usually none) becomes current again.
  delete context_;
  sc_core::sc_curr_simcontext = previous_;
  sc_core::sc_default_global_context = previous_default_;
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, previous_info_actions_);
}

}  // namespace pipetwin::sim
