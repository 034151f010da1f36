// Layer timings as an engine observer: keeps every layer_timed event an executor reports, for the
// run's layer_times (profiling and calibration read them).
#pragma once
#include <vector>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/schedule/engine.hpp"

namespace pipetwin::exec {

class LayerTimeLog final : public EngineObserver {
 public:
  void layer_timed(std::int32_t task, std::int32_t layer, TaskKind kind, double seconds, double to_linear_s) override {
    times_.push_back({task, layer, kind, seconds, to_linear_s});
  }
  std::vector<LayerTime> take() { return std::move(times_); }

 private:
  std::vector<LayerTime> times_;
};

}  // namespace pipetwin::exec
