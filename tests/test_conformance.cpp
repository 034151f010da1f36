// The conformance matrix, in the spirit of ggml's test-backend-ops: every registered schedule x
// P = 1..4 (and again with recompute=full where the schedule takes it) x {lenet5, resnet8, mlp},
// run by every engine built here (analytic, systemc, cpu, and
// cuda where a GPU is present), each through the one engine interface with an event log. Per
// configuration it checks, against the graph and against independent references:
//   - every engine runs the graph's task set, each task started and ended once;
//   - on every processor and every in-order link, tasks start in the graph's order, each after
//     the one before it ended (from the event order the engine reported);
//   - analytic == systemc, cycle for cycle, wherever no two transfers were in service on one
//     shared medium at once (no bandwidth shared), on the executors' hardware and on h100;
//   - the executors' weights equal sequential SGD with gradient accumulation (synchronous
//     schedules, 1e-5 relative) or a delayed-SGD replay of the declared versions (asynchronous,
//     bit for bit on the CPU; 1e-4 on a GPU);
//   - the executors hold the graph's declared buffers, tensor by tensor (docs/design.md,
//     "Memory"): the same buffers (what each holds, whose, where), allocated by the declared
//     task, freed by one of the tasks the graph frees it after, and no others; per processor the
//     allocating tasks in the processor's order; every buffer has its declared size exactly (a
//     transfer of a stash too: what its backward reads of it);
//   - a prediction's memory, rebuilt by a MemoryObserver from the events the engine reported,
//     equals its Result's (peaks, host peak, out-of-memory events), and its Result (a
//     SummaryObserver's, from the events) equals the fast path's (evaluate / simulate, from the
//     task times), key for key.
// A second matrix runs data-parallel replicas (dp = 2, 3) of the synchronous schedules through
// the same checks, the CPU executor against SGD on the larger batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/executor_engine.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/engine.hpp"
#include "pipetwin/schedule/evaluator.hpp"
#include "pipetwin/schedule/memory_observer.hpp"
#include "pipetwin/schedule/validator.hpp"
#include "pipetwin/sim/engines.hpp"
#include "pipetwin/sim/simulator.hpp"
#include "schedule_test_helpers.hpp"
#include "synthetic_data.hpp"
#include "training_reference.hpp"
#ifdef PIPETWIN_TEST_CUDA
#include "pipetwin/exec/cuda/cuda_executor.hpp"
#include "pipetwin/exec/cuda/kernels.hpp"
#endif

namespace pipetwin {
namespace {

constexpr int kMinibatches = 3;
constexpr double kLearningRate = 0.05;

GraphConfig matrix_config(const std::string& schedule, const std::string& model, int processors) {
  GraphConfig config = graph_config(model, schedule, "cpu-core", processors, 2, kMinibatches);
  if (model == "mlp") config.params = {"widths=24,16,12,10,6"};
  config = test::with_schedule_file(config);
  const bool batch_set = std::any_of(config.params.begin(), config.params.end(),
                                     [](const std::string& p) { return p.rfind("model.batch=", 0) == 0; });
  if (!batch_set) config.params.push_back("model.batch=" + std::to_string(model == "mlp" ? 8 : 4));
  return config;
}

// Tasks on one processor or in-order link must alternate start(t_i), end(t_i), start(t_i+1), ...
// in the graph's order.
void check_resource_order(const std::vector<EventLog::Event>& events, const std::vector<std::int32_t>& order,
                          const std::string& what) {
  std::vector<std::int32_t> seen;
  std::int32_t open = -1;
  bool alternates = true;
  for (const auto& e : events) {
    if (e.kind == EventLog::Kind::start) {
      alternates = alternates && open < 0;
      open = e.task;
      seen.push_back(e.task);
    } else if (e.kind == EventLog::Kind::end) {
      alternates = alternates && open == e.task;
      open = -1;
    }
  }
  CHECK_MESSAGE(alternates, what << ": a task started before the one before it ended");
  CHECK_MESSAGE(seen == order, what << ": tasks started out of the graph's order");
}

// Sizes of the buffers matched between the graph and an executor, per kind: declared, measured.
using SizeTotals = std::map<BufferKind, std::pair<std::int64_t, std::int64_t>>;

std::string name_of(const BufferName& b, std::int32_t where, std::int32_t task) {
  return std::string(to_string(b.kind)) + " of task " + std::to_string(b.owner) + " (stage " + std::to_string(b.stage) +
         ") on " + (where == kHost ? std::string("host") : "p" + std::to_string(where)) + " by task " + std::to_string(task);
}

// The executor holds the graph's declared buffers and no others: each allocated on the declared
// memory by the declared task, each freed by one of the tasks it is declared to be freed after
// (or held to the end when none is declared); per processor, the allocating tasks come in the
// processor's order; each holds the bytes declared. Sizes are totalled per kind into `sizes`.
void check_buffers(const TaskGraph& g, const EventLog& log, const std::string& engine, SizeTotals& sizes) {
  using Key = std::tuple<BufferName, std::int32_t, std::int32_t>;  // (buffer, where, task)
  std::map<Key, std::int64_t> declared_allocs;                      // -> bytes
  std::map<std::pair<BufferName, std::int32_t>, std::vector<const Buffer*>> freed;  // (buffer, where) -> buffers freed
  for (const auto& b : g.buffers) {
    if (b.bytes == 0) continue;
    declared_allocs[{b.name, b.where, b.allocated_by}] += b.bytes;
    if (!b.freed_after.empty()) freed[{b.name, b.where}].push_back(&b);
  }
  std::map<Key, std::int64_t> measured_allocs;
  std::vector<std::string> problems;
  for (std::int32_t slot = 0; slot <= g.processor_count(); ++slot) {
    const std::int32_t where = slot == g.processor_count() ? kHost : slot;
    const auto& events = where == kHost ? log.in_host_memory() : log.on_processor(where);
    for (const auto& e : events) {
      if (e.kind == EventLog::Kind::alloc && e.bytes > 0 && e.buffer.kind != BufferKind::resident) {
        measured_allocs[{e.buffer, where, e.task}] += e.bytes;
      }
      if (e.kind != EventLog::Kind::free || e.bytes == 0) continue;
      auto& candidates = freed[{e.buffer, where}];
      const auto match = std::find_if(candidates.begin(), candidates.end(), [&](const Buffer* b) {
        return std::find(b->freed_after.begin(), b->freed_after.end(), e.task) != b->freed_after.end();
      });
      if (match == candidates.end()) {
        problems.push_back("frees " + name_of(e.buffer, where, e.task) + ", not declared freed after that task");
      } else {
        candidates.erase(match);
      }
    }
  }
  for (const auto& [key, buffers] : freed) {
    for (const Buffer* b : buffers) problems.push_back("never frees " + name_of(b->name, b->where, b->allocated_by));
  }
  for (const auto& [key, bytes] : declared_allocs) {
    const auto it = measured_allocs.find(key);
    if (it == measured_allocs.end()) {
      problems.push_back("does not allocate " + name_of(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
      continue;
    }
    const BufferKind kind = std::get<0>(key).kind;
    sizes[kind].first += bytes;
    sizes[kind].second += it->second;
    // Every buffer has the size the graph declares (a transfer of a forward's stash too: all of
    // it for a BW, all but the input for a BA part).
    if (bytes != it->second) {
      problems.push_back(name_of(std::get<0>(key), std::get<1>(key), std::get<2>(key)) + " holds " +
                         std::to_string(it->second) + " bytes, declared " + std::to_string(bytes));
    }
  }
  for (const auto& [key, bytes] : measured_allocs) {
    if (declared_allocs.count(key) == 0) {
      problems.push_back("allocates undeclared " + name_of(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
    }
  }
  CHECK_MESSAGE(problems.empty(), engine << ": " << problems.size() << " buffers differ from the declared ones, first: "
                                         << (problems.empty() ? "" : problems.front()));
  // Per processor, the tasks that allocate, in the processor's order.
  const auto by_processor = tasks_by_processor(g);
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    std::set<std::int32_t> allocating;
    for (const auto& [key, bytes] : declared_allocs) {
      if (std::get<1>(key) == static_cast<std::int32_t>(p)) allocating.insert(std::get<2>(key));
    }
    std::vector<std::int32_t> declared, measured;
    for (const auto id : by_processor[p]) {
      if (allocating.count(id)) declared.push_back(id);
    }
    for (const auto& e : log.on_processor(static_cast<std::int32_t>(p))) {
      if (e.kind != EventLog::Kind::alloc || e.task < 0 || e.bytes == 0) continue;
      const Task& t = g.tasks[static_cast<std::size_t>(e.task)];
      if (t.placement != Placement::processor || t.resource != static_cast<std::int32_t>(p)) continue;
      if (measured.empty() || measured.back() != e.task) measured.push_back(e.task);
    }
    CHECK_MESSAGE(measured == declared, engine << ": p" << p << " allocates in another order than the graph declares");
  }
}

struct Ran {
  Result result;
  std::unique_ptr<EventLog> log;
  std::unique_ptr<MemoryObserver> memory;
};

Ran run_with_log(Engine& engine, const TaskGraph& graph) {
  Ran ran{{}, std::make_unique<EventLog>(graph), std::make_unique<MemoryObserver>(graph)};
  EngineOptions options;
  options.observers = {ran.log.get(), ran.memory.get()};
  ran.result = engine.run(graph, options);
  if (!engine.measures()) {
    // A prediction's memory, rebuilt by an observer from the events the engine told it, is the
    // Result's; and the Result (summarized from the events) is the fast path's (from the times).
    const MemoryReport rebuilt = ran.memory->report(false);
    CHECK(rebuilt.peak_bytes == ran.result.peak_memory_bytes);
    CHECK(rebuilt.host_peak_bytes == ran.result.host_peak_memory_bytes);
    CHECK(rebuilt.out_of_memory.size() == ran.result.out_of_memory.size());
    const Result direct = engine.name() == "analytic" ? evaluate(graph) : simulate(graph);
    CHECK(result_to_json(graph, direct, true).dump() == result_to_json(graph, ran.result, true).dump());
  }
  return ran;
}

void check_engine_run(const TaskGraph& g, const Ran& ran, const std::string& engine) {
  REQUIRE(ran.result.tasks.size() == g.tasks.size());
  std::map<std::int32_t, int> starts, ends;
  std::map<std::int32_t, std::int64_t> started_at;  // each task's (last) start
  auto count = [&](const std::vector<EventLog::Event>& events) {
    for (const auto& e : events) {
      if (e.kind == EventLog::Kind::start) {
        ++starts[e.task];
        started_at[e.task] = e.cycles;
      }
      if (e.kind == EventLog::Kind::end) ++ends[e.task];
    }
  };
  for (std::int32_t p = 0; p < g.processor_count(); ++p) count(ran.log->on_processor(p));
  for (std::size_t k = 0; k < g.links.size(); ++k) count(ran.log->on_link(static_cast<std::int32_t>(k)));
  bool once = starts.size() == g.tasks.size() && ends.size() == g.tasks.size();
  for (const auto& [task, n] : starts) once = once && n == 1 && ends[task] == 1;
  CHECK_MESSAGE(once, engine << ": not every task started and ended exactly once");
  // Every engine tells an allocation at the start of the task that makes it, as the graph
  // declares its buffers: the predictions from the declared buffers, the executors as their tasks
  // run (they account a task's output once it is made).
  int allocations = 0, at_start = 0;
  for (std::int32_t slot = 0; slot <= g.processor_count(); ++slot) {
    for (const auto& e : slot == g.processor_count() ? ran.log->in_host_memory() : ran.log->on_processor(slot)) {
      if (e.kind != EventLog::Kind::alloc || e.task < 0) continue;
      ++allocations;
      const auto it = started_at.find(e.task);
      if (it != started_at.end() && it->second == e.cycles) ++at_start;
    }
  }
  CHECK_MESSAGE(at_start == allocations, engine << ": " << allocations - at_start << " of " << allocations
                                                << " allocations told at another time than their task's start");
  const auto by_processor = tasks_by_processor(g);
  for (std::size_t p = 0; p < by_processor.size(); ++p) {
    check_resource_order(ran.log->on_processor(static_cast<std::int32_t>(p)), by_processor[p], engine + " on p" + std::to_string(p));
  }
  const auto by_link = tasks_by_link(g);
  for (std::size_t k = 0; k < by_link.size(); ++k) {
    if (g.links[k].policy != LinkPolicy::in_order) continue;
    check_resource_order(ran.log->on_link(static_cast<std::int32_t>(k)), by_link[k], engine + " on link " + g.links[k].name);
  }
}

}  // namespace

TEST_CASE("conformance: every schedule x P = 1..4 x recompute x {lenet5, resnet8, mlp} x every engine built here") {
  int configurations = 0, not_buildable = 0, cycle_equal = 0, bandwidth_shared_runs = 0;
  std::set<std::string> engines_run;
  std::map<std::string, SizeTotals> buffer_sizes;  // per executor
#ifdef PIPETWIN_TEST_CUDA
  std::string no_gpu;  // not "skipped": the rest of the matrix runs (ctest skips on that word)
  const bool gpu = cuda::device_available(&no_gpu);
  if (!gpu) MESSAGE("the cuda engine is left out of the matrix: " << no_gpu);
#else
  MESSAGE("the cuda engine is left out of the matrix: this build has no CUDA");
#endif
  for (const auto& model : {std::string("lenet5"), std::string("resnet8"), std::string("mlp")}) {
    for (const auto& schedule : schedule_names()) {
      const auto& specs = find_schedule(schedule).params;
      const bool can_recompute =
          std::any_of(specs.begin(), specs.end(), [](const ParamSpec& p) { return p.name == "recompute"; });
      for (int variant = 0; variant < (can_recompute ? 8 : 4); ++variant) {
        const int P = 1 + variant % 4;
        const bool recompute = variant >= 4;
        GraphConfig config = matrix_config(schedule, model, P);
        if (config.processors != P) continue;  // pipefb rounds odd P up: that P is covered already
        if (recompute) config.params.push_back("recompute=full");
        CAPTURE(model);
        CAPTURE(schedule);
        CAPTURE(P);
        CAPTURE(recompute);
        TaskGraph g;
        ScheduleRequest request;
        try {
          request = make_request(config);
          g = make_graph(config);
        } catch (const Error&) {  // more stages than the network has cut points, ...
          ++not_buildable;
          continue;
        }
        ++configurations;
        REQUIRE(validate(g).empty());

        // The predicting engines, on the executors' hardware (its links share one medium) and on
        // h100 (links of their own: no bandwidth is ever shared, so analytic == systemc always).
        for (const std::string hardware : {"cpu-core", "h100"}) {
          CAPTURE(hardware);
          GraphConfig on_hardware = config;
          on_hardware.hardware = hardware;
          const TaskGraph graph = hardware == config.hardware ? g : make_graph(on_hardware);
          std::map<std::string, Ran> predicted;
          for (const auto& name : engine_names()) {
            predicted[name] = run_with_log(*make_engine(name), graph);
            engines_run.insert(name);
            check_engine_run(graph, predicted[name], name);
          }
          if (predicted.count("systemc") == 0) continue;
          const auto& simulated = predicted["systemc"].result.tasks;
          if (test::transfers_overlap_on_a_medium(graph, simulated)) {
            CHECK(hardware != "h100");
            ++bandwidth_shared_runs;
            continue;
          }
          bool equal = true;
          for (std::size_t i = 0; i < simulated.size(); ++i) {
            equal = equal && simulated[i].start_cycles == predicted["analytic"].result.tasks[i].start_cycles &&
                    simulated[i].end_cycles == predicted["analytic"].result.tasks[i].end_cycles;
          }
          CHECK_MESSAGE(equal, "analytic and systemc differ where no bandwidth is shared");
          ++cycle_equal;
        }

        // The executors, against the references.
        const Network& net = request.network;
        const Dataset data = test::synthetic_data_for(net);
        const BatchSampler sampler(data, net.batch, g.microbatches, g.minibatches, 7);
        TrainingOptions training;
        training.learning_rate = kLearningRate;
        std::vector<std::unique_ptr<ExecutorEngine>> executors;
        executors.push_back(std::make_unique<ExecutorEngine>("cpu", cpu::run_cpu, net, sampler, training));
#ifdef PIPETWIN_TEST_CUDA
        if (gpu) {
          executors.push_back(std::make_unique<ExecutorEngine>(
              "cuda",
              [](const TaskGraph& graph, const Network& network, const BatchSampler& samples, const TrainingOptions& options) {
                return cuda::run_cuda(graph, network, samples, options, cuda::CudaOptions{"streams", 0, 0, false});
              },
              net, sampler, training));
        }
#endif
        for (auto& executor : executors) {
          const Ran ran = run_with_log(*executor, g);
          engines_run.insert(executor->name());
          check_engine_run(g, ran, executor->name());
          check_buffers(g, *ran.log, executor->name(), buffer_sizes[executor->name()]);
          const TrainingRun& run = executor->last_run();
          const bool synchronous = g.semantics == WeightSemantics::synchronous;
          const auto expected =
              synchronous ? test::sequential_sgd(net, sampler, g.minibatches, g.microbatches, {kLearningRate, 0.0}, run.initial_weights)
                          : test::delayed_sgd_replay(g, net, sampler, {kLearningRate, 0.0}, run.initial_weights);
          const double difference = test::max_relative_difference(run.final_weights, expected);
          const double tolerance = executor->name() == "cpu" ? (synchronous ? 1e-5 : 0.0) : 1e-4;
          CHECK_MESSAGE(difference <= tolerance, executor->name() << ": weights differ from the reference by " << difference);
        }
      }
    }
  }
  MESSAGE("configurations " << configurations << " (not buildable: " << not_buildable << "); analytic == systemc on "
                            << cycle_equal << ", bandwidth shared on " << bandwidth_shared_runs);
  for (const auto& [engine, totals] : buffer_sizes) {
    for (const auto& [kind, bytes] : totals) {
      MESSAGE(engine << " " << std::string(to_string(kind)) << " buffers: declared " << bytes.first << " bytes, measured "
                     << bytes.second << " (measured / declared " << static_cast<double>(bytes.second) / static_cast<double>(bytes.first) << ")");
    }
  }
  // Every registered schedule is in the matrix at least once per network.
  CHECK(configurations >= static_cast<int>(schedule_names().size()) * 3);
  CHECK(engines_run.count("analytic") == 1);
  CHECK(engines_run.count("cpu") == 1);
}

TEST_CASE("conformance: data-parallel replicas of the synchronous schedules on every engine built here") {
  int configurations = 0;
  for (const auto& model : {std::string("lenet5"), std::string("mlp")}) {
    for (const std::string schedule : {"sequential", "gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b"}) {
      for (const auto& each_p_d : {std::pair<int, int>{1, 2}, {2, 2}, {2, 3}}) {
        // Named, not structured bindings: a C++17 lambda (CAPTURE's) cannot capture those.
        const auto& P = each_p_d.first;
        const auto& d = each_p_d.second;
        GraphConfig config = matrix_config(schedule, model, P);
        if (config.processors != P) continue;
        config.processors = P * d;
        config.params.push_back("dp=" + std::to_string(d));
        CAPTURE(model);
        CAPTURE(schedule);
        CAPTURE(P);
        CAPTURE(d);
        TaskGraph g;
        ScheduleRequest request;
        try {
          request = make_request(config);
          g = make_graph(config);
        } catch (const Error&) {  // more stages than cut points
          continue;
        }
        ++configurations;
        REQUIRE(validate(g).empty());
        REQUIRE(!g.collectives.empty());
        for (const auto& name : engine_names()) check_engine_run(g, run_with_log(*make_engine(name), g), name);
        // The CPU executor: the declared buffers, tensor by tensor, and large-batch SGD's weights.
        const Network& net = request.network;
        const Dataset data = test::synthetic_data_for(net);
        const BatchSampler sampler = graph_sampler(data, g, net, 7);
        TrainingOptions training;
        training.learning_rate = kLearningRate;
        ExecutorEngine cpu_engine("cpu", cpu::run_cpu, net, sampler, training);
        const Ran ran = run_with_log(cpu_engine, g);
        check_engine_run(g, ran, "cpu");
        SizeTotals sizes;
        check_buffers(g, *ran.log, "cpu", sizes);
        Network large = net;
        large.batch *= d;
        const auto expected = test::sequential_sgd(large, sampler, g.minibatches, g.microbatches * d, {kLearningRate, 0.0},
                                                   cpu_engine.last_run().initial_weights, d);
        CHECK(test::max_relative_difference(cpu_engine.last_run().final_weights, expected) <= 1e-5);
      }
    }
  }
  MESSAGE("data-parallel configurations " << configurations);
  CHECK(configurations >= 24);
}

}  // namespace pipetwin
