// Benchmark: what each layer's forward and backward parts take inside each schedule's tasks on the
// CPU executor, the schedules run in turn in one process (round after round), so that what tells
// them apart is their tasks' structure and order, not which runs came before in the process. The
// calibration table times every layer inside one schedule's tasks (sequential's, at P = 1); where
// another schedule runs the same layer faster or slower, this shows which layer and by how much
// (docs/executor.md, "One-layer tasks run some layers faster").
//
//   pipetwin_layer_times_benchmark [--model resnet8] [--schedules sequential,layerpipe]
//                                  [--processors 1] [--microbatches 4] [--minibatches 10] [--rounds 3]
//                                  [--calibration FILE]
//
// Prints per layer and task kind the median of its layer times (each layer's part of a task, as
// `pipetwin profile` times it) over the second half of every round's minibatches, per schedule,
// and each schedule's difference from the first; then per processor and kind those medians
// summed over its layers (docs/executor.md, "Where gpipe's time at P = 2 goes"); then the step
// times. With --calibration the graphs are laid out (LayerPipe's partition) by that table, as
// `pipetwin validate` lays out its rows; without, by the roofline. Asserts nothing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/dataset.hpp"
#include "pipetwin/exec/host_allocator.hpp"
#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"

namespace {

using namespace pipetwin;

struct Options {
  std::string model = "resnet8";
  std::vector<std::string> schedules{"sequential", "layerpipe"};
  int processors = 1;
  int microbatches = 4;
  int minibatches = 10;
  int rounds = 3;
  std::string calibration_path;  // empty: graphs laid out by the roofline
};

double median(std::vector<double> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

int parse_count(const std::string& flag, const std::string& text, int most) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < 1 || value > most) {
    throw Error(flag + " needs a whole number from 1 to " + std::to_string(most) + ", got '" + text + "'");
  }
  return static_cast<int>(value);
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  if (names.empty()) throw Error("--schedules needs at least one schedule name");
  return names;
}

const char* kUsage =
    "usage: pipetwin_layer_times_benchmark [--model NAME] [--schedules A,B,...] [--processors P]\n"
    "                                      [--microbatches M] [--minibatches N] [--rounds R]\n"
    "                                      [--calibration FILE]\n"
    "  each layer's part of each task kind, per schedule, the schedules run in turn in one process\n"
    "  (defaults: resnet8, sequential,layerpipe, P 1, M 4, N 10, R 3; the first half of each run's\n"
    "  minibatches is warm-up; --calibration: a `pipetwin profile` table that lays out the graphs,\n"
    "  as `pipetwin validate` does, in place of the roofline)\n";

// The layer times (seconds) of one run of `schedule`, keyed by (task kind, layer), after its
// first half of minibatches, with the processor each key ran on; and its step time.
struct RunTimes {
  std::map<std::pair<TaskKind, std::int32_t>, std::vector<double>> layer_s;
  std::map<std::pair<TaskKind, std::int32_t>, std::int32_t> processor;
  double step_s = 0;
};

RunTimes run_once(const Options& o, const std::string& schedule, const Dataset& data,
                  const std::shared_ptr<const Calibration>& calibration) {
  GraphConfig config = graph_config(o.model, schedule, "cpu-core", o.processors, o.microbatches, o.minibatches);
  config.calibration = calibration;
  const TaskGraph graph = make_graph(config);
  const Network network = make_request(config).network;
  const BatchSampler sampler(data, network.batch, o.microbatches, o.minibatches, 1);
  TrainingOptions training;
  training.record_layer_times = true;
  const TrainingRun run = cpu::run_cpu(graph, network, sampler, training);
  RunTimes times;
  times.step_s = run.result.iteration_s;
  for (const LayerTime& time : run.layer_times) {
    const Task& t = graph.tasks[static_cast<std::size_t>(time.task)];
    // A fused B also records what a split BA and BW would cost: its own parts are its B records.
    if (t.minibatch < o.minibatches / 2 || time.kind != t.kind) continue;
    times.layer_s[{time.kind, time.layer}].push_back(time.seconds);
    times.processor[{time.kind, time.layer}] = t.resource;
  }
  return times;
}

std::string layer_label(const Network& network, std::int32_t layer) {
  if (layer >= 0 && layer < static_cast<std::int32_t>(network.size())) return network.layers[static_cast<std::size_t>(layer)].name;
  if (layer == kInputLoadLayer) return "(input load)";
  if (layer == kGradientAssemblyLayer) return "(gradient assembly)";
  return "(mark " + std::to_string(layer) + ")";
}

// One schedule's cell of a row: `s`, and its difference from the first schedule's `base_s` when
// `against` (a row of the first schedule itself, or without a base to compare, prints `s` alone).
void print_cell(double s, double base_s, bool against) {
  if (against && base_s > 0) {
    std::printf(" %11.1f (%+5.1f%%)", s * 1e6, 100 * (s / base_s - 1));
  } else {
    std::printf(" %20.1f", s * 1e6);
  }
}

// Per processor and task kind: the sum of its layers' medians (the input load and assemblies
// left out), against the first schedule's where that processor ran the same layers of the kind.
void print_processor_sums(const Options& o, const Network& network, const std::map<std::string, RunTimes>& all) {
  // (processor, kind) -> per schedule: the summed seconds and the layers summed.
  std::map<std::pair<std::int32_t, TaskKind>, std::map<std::string, std::pair<double, std::set<std::int32_t>>>> sums;
  for (const auto& schedule : o.schedules) {
    const RunTimes& times = all.at(schedule);
    for (const auto& [key, seconds] : times.layer_s) {
      if (key.second < 0 || key.second >= static_cast<std::int32_t>(network.size())) continue;
      auto& [total_s, layers] = sums[{times.processor.at(key), key.first}][schedule];
      total_s += median(seconds);
      layers.insert(key.second);
    }
  }
  std::printf("per processor, its layers summed (us; against %s where it ran the same layers)\n",
              o.schedules.front().c_str());
  for (const auto& [where, per_schedule] : sums) {
    char label[32];
    std::snprintf(label, sizeof label, "p%d %s", where.first, to_string(where.second));
    std::printf("%-29s", label);
    const auto base = per_schedule.find(o.schedules.front());
    for (const auto& schedule : o.schedules) {
      const auto it = per_schedule.find(schedule);
      if (it == per_schedule.end()) {
        std::printf(" %20s", "-");
        continue;
      }
      const bool same_layers = base != per_schedule.end() && base->second.second == it->second.second;
      print_cell(it->second.first, same_layers ? base->second.first : -1, schedule != o.schedules.front());
    }
    std::printf("\n");
  }
}

int run_benchmark(const Options& o) {
  keep_freed_host_memory();  // as the CLI does: freed buffers stay on the heap for reuse
  const Network network = make_request(graph_config(o.model, o.schedules.front(), "cpu-core", o.processors,
                                                    o.microbatches, o.minibatches))
                              .network;
  const Dataset data = load_dataset_for("auto", kFashionMnistDir, network, "train");
  std::shared_ptr<const Calibration> calibration;
  if (!o.calibration_path.empty()) calibration = std::make_shared<const Calibration>(load_calibration(o.calibration_path));
  std::map<std::string, RunTimes> all;  // per schedule, every round's samples together
  std::map<std::string, std::vector<double>> steps_s;
  for (int round = 0; round < o.rounds; ++round) {
    for (const auto& schedule : o.schedules) {
      std::fprintf(stderr, "round %d of %d: %s on %d processor(s)\n", round + 1, o.rounds, schedule.c_str(), o.processors);
      RunTimes times = run_once(o, schedule, data, calibration);
      steps_s[schedule].push_back(times.step_s);
      for (auto& [key, seconds] : times.layer_s) {
        auto& into = all[schedule].layer_s[key];
        into.insert(into.end(), seconds.begin(), seconds.end());
      }
      all[schedule].processor.insert(times.processor.begin(), times.processor.end());
    }
  }
  std::set<std::pair<TaskKind, std::int32_t>> keys;
  for (const auto& [schedule, times] : all) {
    for (const auto& [key, seconds] : times.layer_s) keys.insert(key);
  }
  std::printf("%s, %d processor(s), %d microbatches, medians over %d rounds (us; against %s)\n", o.model.c_str(),
              o.processors, o.microbatches, o.rounds, o.schedules.front().c_str());
  std::printf("%-4s %-24s", "kind", "layer");
  for (const auto& schedule : o.schedules) std::printf(" %20s", schedule.c_str());
  std::printf("\n");
  for (const auto& key : keys) {
    std::printf("%-4s %-24s", to_string(key.first), layer_label(network, key.second).c_str());
    const auto& first = all[o.schedules.front()].layer_s;
    const auto base = first.find(key);
    const double base_s = base == first.end() ? -1 : median(base->second);
    for (const auto& schedule : o.schedules) {
      const auto& mine = all[schedule].layer_s;
      const auto it = mine.find(key);
      if (it == mine.end()) {
        std::printf(" %20s", "-");
        continue;
      }
      print_cell(median(it->second), base_s, schedule != o.schedules.front());
    }
    std::printf("\n");
  }
  print_processor_sums(o, network, all);
  std::printf("%-29s", "step (ms, median of rounds)");
  for (const auto& schedule : o.schedules) std::printf(" %20.2f", median(steps_s[schedule]) * 1e3);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (i + 1 >= argc) throw Error("unknown option or missing value: '" + arg + "'");
      const std::string value = argv[++i];
      if (arg == "--model") {
        o.model = value;
      } else if (arg == "--schedules") {
        o.schedules = split_names(value);
      } else if (arg == "--processors") {
        o.processors = parse_count(arg, value, 64);
      } else if (arg == "--microbatches") {
        o.microbatches = parse_count(arg, value, 1024);
      } else if (arg == "--minibatches") {
        o.minibatches = parse_count(arg, value, 100000);
      } else if (arg == "--rounds") {
        o.rounds = parse_count(arg, value, 1000);
      } else if (arg == "--calibration") {
        o.calibration_path = value;
      } else {
        throw Error("unknown option '" + arg + "'");
      }
    }
    if (o.minibatches < 2) throw Error("--minibatches needs at least 2 (the first half is warm-up)");
    return run_benchmark(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipetwin_layer_times_benchmark: %s\n%s", e.what(), kUsage);
    return 2;
  }
}
