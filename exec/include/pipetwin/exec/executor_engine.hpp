// An executor (the CPU one, or the CUDA one bound to its placement) behind the one engine
// interface (pipetwin/schedule/engine.hpp): it trains `network` on `data` under the graph's
// schedule and returns the measured Result; observers see every task and every allocation as
// they happen. The training run itself (losses, weights) stays available after run().
#pragma once
#include <string>

#include "pipetwin/exec/training.hpp"
#include "pipetwin/schedule/engine.hpp"

namespace pipetwin {

class ExecutorEngine final : public Engine {
 public:
  // `device`: the engine's name ("cpu", "cuda"); `runner`: cpu::run_cpu or the CUDA executor.
  ExecutorEngine(std::string device, Runner runner, const Network& network, const BatchSampler& data,
                 TrainingOptions training)
      : device_(std::move(device)), runner_(std::move(runner)), network_(network), data_(data),
        training_(std::move(training)) {}

  std::string name() const override { return device_; }
  bool measures() const override { return true; }
  Result run(const TaskGraph& graph, const EngineOptions& options) override {
    TrainingOptions training = training_;
    training.record_memory_timeline = training.record_memory_timeline || options.record_memory_timeline;
    training.observers.insert(training.observers.end(), options.observers.begin(), options.observers.end());
    last_ = runner_(graph, network_, data_, training);
    return last_.result;
  }
  const TrainingRun& last_run() const { return last_; }

 private:
  std::string device_;
  Runner runner_;
  const Network& network_;
  const BatchSampler& data_;
  TrainingOptions training_;
  TrainingRun last_;
};

}  // namespace pipetwin
