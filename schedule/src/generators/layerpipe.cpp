// `layerpipe` (Unnikrishnan & Parhi, ICCAD 2021), as reconstructed in
// docs/papers.md §1.5 (the paper's full text is not public; every choice is in
// docs/schedules/layerpipe.md). Per layer l and iteration n (one iteration per microbatch, each
// with its own update): F_l; the activation gradient BA_l split into `ba_parts` parts (the
// inter-layer split: each part a slice of the GEMM, free to run beside the others or on the next
// layer's processor); the weight gradient BW_l, which needs only the incoming gradient and the
// stored input, so it runs in parallel with BA_l (the intra-layer split); and the update U_l.
// Layers are grouped into `stages` pipeline stages (balanced partition, cuts only between
// blocks); layer l's forward lags Delay(l) = 2 S(l) updates, S(l) = stages after l's (LayerPipe2's
// retiming rule), so its weight loop U_l -> F_l carries 1 + 2 S(l) iterations. A modulo scheduler
// places one iteration's tasks on the P processors with one period T for all; iteration n runs
// at the same offsets plus n T (greedy by default; `scheduler=exact`: the integer program of
// exact_modulo_scheduler.hpp, least period, then fewest bytes, then least stash memory). Data moves when producer and consumer differ: activations,
// gradient slices, a layer's weight gradient to the processor of its update, the weights to BA
// parts away from home (a part is a slice of the samples, so it needs all of them).
#include <algorithm>
#include <tuple>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/cost_model.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/buffers.hpp"
#include "pipetwin/schedule/copies_on_cores.hpp"
#include "pipetwin/schedule/exact_modulo_scheduler.hpp"
#include "pipetwin/schedule/generators.hpp"
#include "pipetwin/schedule/modulo_scheduler.hpp"
#include "pipetwin/schedule/weight_versions.hpp"
#include "../link_tasks.hpp"

namespace pipetwin {
namespace {

struct LayerTasks {
  int forward = -1;
  std::vector<int> input_grad_parts;  // BA parts with work
  int weight_grad = -1;
  int update = -1;
};

// What one iteration's modulo task stands for.
struct TaskRole {
  TaskKind kind;
  int layer;
  int part = 0;  // BA: which slice of the samples
};

}  // namespace

TaskGraph generate_layerpipe(const ScheduleRequest& request) {
  const Network& net = request.network;
  const HardwareProfile& hw = request.hardware;
  const int L = static_cast<int>(net.size());
  const int P = request.processors;
  const std::int64_t samples = net.batch / request.microbatches;
  const int max_stages = static_cast<int>(net.allowed_cuts().size()) + 1;
  int stage_count = static_cast<int>(request.params.get_int("stages", std::min(P, max_stages)));
  if (request.params.has("cuts")) stage_count = static_cast<int>(request.params.get_int_list("cuts", {}).size()) + 1;
  if (stage_count < 1 || stage_count > max_stages) {
    throw Error("layerpipe: stages=" + std::to_string(stage_count) + " but " + net.name + " can be cut into 1 to " +
                std::to_string(max_stages) + " stages (cuts only between blocks)");
  }
  const auto parts = request.params.get_int("ba_parts", 2);
  if (parts < 1 || parts > 8) throw Error("layerpipe: ba_parts must be between 1 and 8");
  const std::string scheduler = request.params.get_string("scheduler", "greedy");
  if (scheduler != "greedy" && scheduler != "exact") {
    throw Error("layerpipe: scheduler=" + scheduler + " is not one of greedy, exact");
  }
  if (scheduler != "exact" && (request.params.has("period") || request.params.has("solve_seconds") ||
                                request.params.has("solve_nodes"))) {
    throw Error("layerpipe: period=, solve_seconds= and solve_nodes= need scheduler=exact");
  }
  const StagePlan groups = plan_stages(request, stage_count);
  std::vector<int> delay(L, 0);  // Delay(l) = 2 S(l)
  for (int s = 0; s < stage_count; ++s) {
    for (int l = groups.partition.first_layer[s]; l <= groups.partition.last_layer[s]; ++l) {
      delay[l] = 2 * (stage_count - 1 - s);
    }
  }

  // One iteration's tasks, in dependency order: forwards, then per layer from the last: BA parts,
  // BW, U.
  std::vector<ModuloTask> tasks;
  std::vector<TaskRole> roles;
  std::vector<LayerTasks> layer(L);
  auto add = [&](TaskKind kind, int l, std::int64_t cost, int same_as = -1) {
    ModuloTask task;
    task.cost_cycles = cost;
    task.same_processor_as = same_as;
    tasks.push_back(task);
    roles.push_back({kind, l});
    return static_cast<int>(tasks.size() - 1);
  };
  for (int l = 0; l < L; ++l) {
    layer[l].forward = add(TaskKind::F, l, compute_task_cycles(hw, net, TaskKind::F, l, l, samples));
  }
  // No BA at the first layer: nothing needs the gradient at the network's input (its layer
  // declares no activation-gradient work, the executors compute none, a calibration times it at
  // 0), and a task there would only draw the layer's weights and stash to its processor (mlp's
  // LayerPipe at P = 2 copied its 785 KiB fc1 weights to the other processor every microbatch for
  // it). The unit model keeps it: the paper's abstract model charges every BA one cycle.
  const bool first_layer_ba = hw.cost_model == CostModelKind::unit || net.layers[0].activation_grad_flops > 0;
  for (int l = L - 1; l >= 0; --l) {
    if (l > 0 || first_layer_ba) {
      const std::int64_t work = layer_work_cycles(hw, net.layers[l], TaskKind::BA, samples);
      const std::int64_t overhead = compute_task_cycles(hw, net, TaskKind::BA, l, l, samples, SplitTaskSpan::layer) - work;
      // Every part goes back to the linear output over all samples (as a one-layer part does
      // where the calibration timed that); the dx splits by samples, but for what a part costs
      // whatever its samples, where the calibration measured it: the dx of one-layer parts where
      // the calibration timed that, else the rest of the table's BA past its way back.
      const std::int64_t way_back = std::min(work, to_linear_cycles(hw, net.layers[l], samples));
      const std::int64_t whole = part_to_linear_cycles(hw, net.layers[l], samples);
      const std::int64_t one_layer_dx = one_layer_dx_cycles(hw, net.layers[l], samples);
      const std::int64_t split = one_layer_dx >= 0 ? one_layer_dx : work - way_back;
      const std::int64_t fixed = parts > 1 ? std::min(split, activation_grad_fixed_cycles(hw, net.layers[l])) : -1;
      for (int i = 0; i < parts; ++i) {
        const std::int64_t part_samples = samples * (i + 1) / parts - samples * i / parts;
        const std::int64_t share = fixed < 0          ? split / parts + (i < split % parts ? 1 : 0)
                                   : part_samples == 0 ? 0
                                                       : fixed + (split - fixed) * part_samples / samples;
        if (share == 0 && !(i == 0 && split == 0)) continue;  // a part with nothing to do
        layer[l].input_grad_parts.push_back(add(TaskKind::BA, l, whole + share + overhead));
        roles.back().part = static_cast<int>(layer[l].input_grad_parts.size()) - 1;
      }
    }
    layer[l].weight_grad = add(TaskKind::BW, l, compute_task_cycles(hw, net, TaskKind::BW, l, l, samples, SplitTaskSpan::layer));
    layer[l].update = add(TaskKind::U, l, compute_task_cycles(hw, net, TaskKind::U, l, l, samples), layer[l].forward);
  }
  // Locality: layers are dealt to processors in contiguous runs of about equal work; a layer's
  // forward (and so its update) should run on its processor, its BA parts and BW there or on
  // a neighbour (the inter-layer split). The scheduler drops these preferences only where they
  // would cost period.
  {
    std::int64_t total = 0;
    for (const auto& t : tasks) total += t.cost_cycles;
    std::int64_t before = 0;
    for (int l = 0; l < L; ++l) {
      std::int64_t own = tasks[layer[l].forward].cost_cycles + tasks[layer[l].weight_grad].cost_cycles;
      for (const auto part : layer[l].input_grad_parts) own += tasks[part].cost_cycles;
      const double middle = total > 0 ? (static_cast<double>(before) + static_cast<double>(own) / 2.0) / static_cast<double>(total) : 0;
      const int home = std::min(P - 1, static_cast<int>(middle * P));
      before += own;
      tasks[layer[l].forward].preferred_processors = {home};
      std::vector<int> near{home};
      if (home > 0) near.push_back(home - 1);
      if (home + 1 < P) near.push_back(home + 1);
      tasks[layer[l].weight_grad].preferred_processors = near;
      for (const auto part : layer[l].input_grad_parts) tasks[part].preferred_processors = near;
    }
  }

  // Dependencies, with the bytes that cross when the two ends run on different processors (the
  // scheduler prices them as one hop of the profile's link). On a CPU whose every core runs a
  // processor, the sender's thread copies them (copies_on_cores.hpp): the copy, as the
  // calibration timed a sender's copy of that size, takes the sender's processor too, so that a
  // placement splitting a layer's tasks pays for the weights and gradients it moves (mlp at
  // P = 2: 41 us a microbatch for fc1's 785 KiB gradient; docs/executor.md, "LayerPipe's BA parts
  // at P = 2"). Across ranks a transfer is a message, not a sender's copy: none there.
  const bool senders_copy = copies_take_cores(P, hw) && hw.calibration->ranks <= 1;
  const auto sender_cycles = [&](std::int64_t bytes) -> std::int64_t {
    if (!senders_copy || bytes <= 0) return 0;
    const Calibration& calibration = *hw.calibration;
    const double bytes_per_s = calibration.core_copy_bytes_per_s > 0 ? calibration.core_copy_bytes_per_s : hw.link.bytes_per_s;
    return sender_copy_cycles(calibration, bytes, hw.clock_hz(), bytes_per_s / hw.clock_hz());
  };
  std::vector<ModuloEdge> edges;
  std::vector<Carries> carries;  // per edge: what flows along it
  auto edge = [&](int from, int to, int distance, std::int64_t bytes, Carries what) {
    edges.push_back({from, to, distance, bytes > 0 ? transfer_cycles(hw, hw.link, bytes) : 0, bytes, 0, sender_cycles(bytes)});
    carries.push_back(what);
  };
  const auto& layers = net.layers;
  for (int l = 0; l < L; ++l) {
    const LayerTasks& t = layer[l];
    if (l > 0) edge(layer[l - 1].forward, t.forward, 0, net.activation_bytes_after(l - 1) * samples, Carries::activation);
    // F_l's stash: BW_l reads all of it (x_l, and what goes back to the linear output: the ReLU
    // mask, batch norm's, pooling's); a BA part reads all but x_l. The last layer's stash holds
    // the gradient at its output (d loss / d logits); the others' comes from the slices the next
    // layer's BA parts produce.
    const std::int64_t stash = net.stash_bytes(l, l, samples);
    const std::int64_t stash_but_input = stash - layers[l].input_bytes * samples;
    edge(t.forward, t.weight_grad, 0, stash, Carries::stash);
    if (l + 1 < L) {
      const auto& next = layer[l + 1].input_grad_parts;
      const std::int64_t slice_bytes = net.activation_bytes_after(l) * samples / static_cast<std::int64_t>(next.size());
      for (const auto source : next) {
        for (const auto part : t.input_grad_parts) edge(source, part, 0, slice_bytes, Carries::activation_gradient);
        edge(source, t.weight_grad, 0, slice_bytes, Carries::activation_gradient);
      }
    }
    for (const auto part : t.input_grad_parts) {
      edge(t.forward, part, 0, stash_but_input, Carries::stash);
      edge(part, t.update, 0, 0, Carries::order);  // an iteration's update follows all of its parts
      // A part computes the gradient of a slice of the samples: it needs all of the layer's weights.
      edge(t.update, part, 1 + delay[l], layers[l].param_bytes, Carries::weights);
    }
    edge(t.weight_grad, t.update, 0, layers[l].param_bytes, Carries::weight_gradient);
    edge(t.update, t.forward, 1 + delay[l], 0, Carries::weights);  // Delay(l) = 2 S(l)
  }
  ModuloSchedule plan;
  std::vector<std::pair<std::string, double>> scheduler_metrics;
  if (scheduler == "exact") {
    // The stash of x_l is held from F_l to U_l: the exact scheduler's memory objective.
    std::vector<ModuloEdge> solver_edges = edges;
    for (auto& e : solver_edges) e.sender_cycles = 0;  // the integer program does not model a sender's copies
    for (int l = 0; l < L; ++l) {
      ModuloEdge held{layer[l].forward, layer[l].update, 0, 0, 0};
      held.held_bytes = layers[l].input_bytes * samples;
      solver_edges.push_back(held);
    }
    ExactModuloOptions options;
    options.time_limit_s = request.params.get_double("solve_seconds", 10);
    if (!(options.time_limit_s > 0)) throw Error("layerpipe: solve_seconds must be positive");
    options.max_nodes = static_cast<int>(request.params.get_int("solve_nodes", 0));
    if (options.max_nodes < 0) throw Error("layerpipe: solve_nodes must be 0 (no limit) or more");
    options.period_cycles = request.params.get_int("period", 0);
    if (request.params.has("period") && options.period_cycles < 1) throw Error("layerpipe: period must be a positive number of cycles");
    const ExactModuloResult exact = exact_modulo_schedule(tasks, solver_edges, P, options);
    plan = exact.schedule;
    scheduler_metrics = {{"period_proven_lower_cycles", static_cast<double>(exact.period_proven_lower_cycles)},
                     {"period_optimal", exact.period_optimal ? 1.0 : 0.0},
                     {"period_fixed", options.period_cycles > 0 ? 1.0 : 0.0},
                     {"solve_nodes", static_cast<double>(options.max_nodes)},
                     {"time_limit_reached", exact.time_limit_reached ? 1.0 : 0.0},
                     {"program_rows", static_cast<double>(exact.program_rows)},
                     {"program_too_large", exact.too_large ? 1.0 : 0.0},
                     {"scheduled_bytes", static_cast<double>(exact.bytes)},
                     {"scheduled_bytes_lower_bound", exact.bytes_lower_bound},
                     {"bytes_optimal", exact.bytes_optimal ? 1.0 : 0.0},
                     {"memory_optimal", exact.memory_optimal ? 1.0 : 0.0},
                     {"greedy_period_cycles", static_cast<double>(exact.heuristic_period_cycles)},
                     {"greedy_bytes", static_cast<double>(exact.heuristic_bytes)},
                     {"solve_s", exact.solve_s}};
  } else {
    plan = modulo_schedule(tasks, edges, P);
    scheduler_metrics = {{"scheduled_bytes", static_cast<double>(modulo_cross_bytes(plan, edges))}};
  }

  TaskGraph g = empty_graph(request, "layerpipe", WeightSemantics::delayed);
  g.schedule_metrics = {{"period_cycles", static_cast<double>(plan.period_cycles)},
                        {"iteration_bound_cycles", plan.iteration_bound_cycles},
                        {"processor_bound_cycles", static_cast<double>(plan.processor_bound_cycles)},
                        {"lower_bound_cycles", static_cast<double>(plan.lower_bound_cycles)},
                        {"pipeline_stages", static_cast<double>(stage_count)}};
  for (const auto& [name, value] : scheduler_metrics) g.schedule_metrics[name] = value;
  for (int l = 0; l < L; ++l) {
    const int home = plan.processor[layer[l].forward];
    g.stages.push_back({l, l, home, -1, delay[l]});
  }

  // Unroll the iterations; each processor runs its tasks in modulo-schedule time order (ties: the
  // earlier iteration, then dependency order).
  const int N = request.minibatches * request.microbatches;
  const int n_tasks = static_cast<int>(tasks.size());
  std::vector<std::int32_t> id_of(static_cast<std::size_t>(N) * n_tasks);
  struct Slot { std::int64_t start; int iteration; int task; };
  std::vector<std::vector<Slot>> slots(P);
  for (int n = 0; n < N; ++n) {
    for (int v = 0; v < n_tasks; ++v) {
      slots[plan.processor[v]].push_back({plan.start_cycles[v] + n * plan.period_cycles, n, v});
    }
  }
  for (int p = 0; p < P; ++p) {
    std::sort(slots[p].begin(), slots[p].end(), [](const Slot& a, const Slot& b) {
      return std::tie(a.start, a.iteration, a.task) < std::tie(b.start, b.iteration, b.task);
    });
    for (std::size_t i = 0; i < slots[p].size(); ++i) {
      const Slot& slot = slots[p][i];
      const TaskRole& role = roles[slot.task];
      Task t;
      t.id = static_cast<std::int32_t>(g.tasks.size());
      t.kind = role.kind;
      t.first_layer = t.last_layer = t.stage = role.layer;
      t.minibatch = slot.iteration / request.microbatches;
      t.microbatch = slot.iteration % request.microbatches;
      t.resource = p;
      t.order = static_cast<std::int32_t>(i);
      t.cost_cycles = tasks[slot.task].cost_cycles;
      // A BA part moves its share of the layer's BA traffic.
      const auto share = role.kind == TaskKind::BA ? static_cast<std::int64_t>(layer[role.layer].input_grad_parts.size()) : 1;
      t.memory_cycles = std::min(t.cost_cycles, memory_traffic_cycles(hw, net, role.kind, role.layer, role.layer, samples) / share);
      if (role.kind == TaskKind::BA) {
        t.part = role.part;
        t.parts = static_cast<std::int32_t>(layer[role.layer].input_grad_parts.size());
      }
      id_of[static_cast<std::size_t>(slot.iteration) * n_tasks + slot.task] = t.id;
      g.tasks.push_back(std::move(t));
    }
  }
  // Weight versions by the one rule: a forward lags Delay(l) updates, an update of iteration n
  // reads version n and writes n + 1, backwards read their forward's.
  assign_weight_versions(g);

  // Dependencies of every iteration, with transfers where data crosses processors.
  LinkTasks links(g, hw);
  for (int n = 0; n < N; ++n) {
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const ModuloEdge& e = edges[i];
      if (n - e.distance < 0) continue;  // initial weights are everywhere at the start
      const std::int32_t from = id_of[static_cast<std::size_t>(n - e.distance) * n_tasks + e.from];
      const std::int32_t to = id_of[static_cast<std::size_t>(n) * n_tasks + e.to];
      const int dst = plan.processor[e.to];
      const Dep arrival = e.cross_bytes > 0
                              ? links.transfer(from, dst, carries[i], e.cross_bytes, g.tasks[from].first_layer)
                              : Dep{from, carries[i], e.cross_bytes};
      g.tasks[to].deps.push_back(arrival);
    }
  }
  order_links_by_earliest_start(g);

  declare_buffers(g, net);
  return g;
}

}  // namespace pipetwin
