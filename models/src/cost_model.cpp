// Task cycles from the hardware profile: the unit model, the per-layer roofline, or the GPU
// operator-level model (each layer's kernels, gpu_kernels.hpp, timed by gpu_timing.hpp).
#include "pipetwin/models/cost_model.hpp"

#include "pipetwin/models/systolic_array.hpp"

#include <algorithm>
#include <cmath>

#include "pipetwin/models/calibration.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/gpu_kernels.hpp"

namespace pipetwin {
namespace {

// Whole cycles, rounded up; a cost no 64-bit count holds (or not a number) is an error, not a
// wrapped integer.
std::int64_t ceil_cycles(double cycles) {
  constexpr double kLimit = 4611686018427387904.0;  // 2^62
  if (!(cycles > -1.0 && cycles < kLimit)) {
    throw Error("a cost of " + short_number(cycles) + " cycles is beyond what pipetwin counts (2^62); check the "
                "hardware's clock, peak, efficiency and overheads, and the calibration's times");
  }
  return static_cast<std::int64_t>(std::ceil(cycles - 1e-9));
}

// Work and memory traffic of one layer's part of a task.
struct LayerWork {
  double flops = 0;
  double bytes = 0;
};

LayerWork layer_work(const Layer& layer, TaskKind kind, std::int64_t samples, const OptimizerSpec& optimizer) {
  const double n = static_cast<double>(samples);
  const double params = static_cast<double>(layer.param_bytes);
  const double activations = static_cast<double>(layer.input_bytes + layer.output_bytes) * n;
  switch (kind) {
    case TaskKind::F:
    case TaskKind::RC:
      return {layer.forward_flops * n, params + activations};
    case TaskKind::BA:
      return {layer.activation_grad_flops * n,
              layer.activation_grad_flops > 0 ? params + activations : 0.0};
    case TaskKind::BW:
      return {layer.weight_grad_flops * n, 2 * params + activations};
    case TaskKind::U:  // e.g. SGD: read weights and gradients, write weights
      return {2.0 * static_cast<double>(layer.parameters),
              static_cast<double>(layer.parameters) * optimizer.update_bytes_per_parameter(layer.element_bytes)};
    default:
      throw Error(std::string("no compute cost for task kind ") + to_string(kind));
  }
}

// Operator model: a layer's kernels on the GPU, overlapped with the host issuing them (the host
// runs ahead of the GPU; whichever is slower sets the pace). An update is one multi-tensor pass
// over the stage's weights, its launches counted once per task (compute_task_cycles).
double operator_layer_seconds(const ProcessorSpec& p, const Layer& layer, TaskKind kind, std::int64_t samples,
                              const OptimizerSpec& optimizer) {
  if (kind == TaskKind::U) {
    return static_cast<double>(layer.parameters) * optimizer.update_bytes_per_parameter(layer.element_bytes) /
           (p.memory_bytes_per_s * p.gpu.memory_efficiency);
  }
  const auto kernels = layer_kernels(layer, kind, samples, layer.element_bytes);
  double gpu_s = 0;
  for (const auto& kernel : kernels) gpu_s += gpu_kernel_seconds(p.gpu, p, kernel, static_cast<double>(layer.element_bytes));
  return std::max(gpu_s, layer_host_seconds(p.gpu, layer, kind, kernels.size()));
}

// DRAM bytes of the operator model's kernels (GEMMs: their operands and result once).
double operator_layer_bytes(const Layer& layer, TaskKind kind, std::int64_t samples, const OptimizerSpec& optimizer) {
  if (kind == TaskKind::U) {
    return static_cast<double>(layer.parameters) * optimizer.update_bytes_per_parameter(layer.element_bytes);
  }
  double bytes = 0;
  const double e = static_cast<double>(layer.element_bytes);
  for (const auto& k : layer_kernels(layer, kind, samples, layer.element_bytes)) {
    bytes += k.is_gemm ? gemm_dram_bytes(k.gemm, e) : k.bytes;
  }
  return bytes;
}

// The fixed cost of a task of `kind` beyond its layers: the calibration's (a split task's by what
// it spans), or the profile's. A calibration's gap to the processor's next task
// (Calibration::task_gap_s) is the task's too: its thread is not free for the next before it.
std::int64_t task_overhead_cycles(const HardwareProfile& hw, TaskKind kind, SplitTaskSpan span = SplitTaskSpan::stage) {
  if (!hw.calibration) return ceil_cycles(hw.processor.task_overhead_s * hw.processor.clock_hz);
  const Calibration& c = *hw.calibration;
  const double own_s = span == SplitTaskSpan::stage ? c.stage_task_overhead_s_of(kind) : c.task_overhead_s_of(kind);
  return ceil_cycles((own_s + c.charged_task_gap_s()) * hw.processor.clock_hz);
}

// A tensor-parallel layer's all-reduces among its ranks (the ranks of a group share a node): the
// profile's measured all-reduce for that many GPUs where it has one, else a ring over the
// profile's link between processors, 2(t-1) steps of latency and 1/t of the bytes. Counted in the
// task's time, as the ranks wait for them (Megatron-LM runs them on the compute stream); no other
// traffic shares these links in the placements pipetwin makes.
double tensor_parallel_seconds(const HardwareProfile& hw, const Layer& layer, TaskKind kind, std::int64_t samples) {
  double seconds = 0;
  const auto ranks = static_cast<std::int32_t>(layer.tensor_parallel);
  const double t = static_cast<double>(ranks);
  const double ring_latency_s = 2 * (t - 1) * hw.link.latency_s;
  for (const auto& all_reduce : tensor_parallel_all_reduces(layer, kind)) {
    const double bytes = static_cast<double>(all_reduce.bytes_per_sample) * static_cast<double>(samples);
    const double one_s = hw.all_reduce.covers(ranks) ? hw.all_reduce.seconds(ranks, bytes, ring_latency_s)
                                                     : ring_latency_s + 2 * (t - 1) * bytes / t / hw.link.bytes_per_s;
    seconds += all_reduce.count * one_s;
  }
  return seconds;
}

std::int64_t layer_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind, std::int64_t samples,
                          const OptimizerSpec& optimizer) {
  const bool calibrated = hw.cost_model != CostModelKind::unit && hw.calibration;
  if (kind == TaskKind::B && !calibrated) {  // a calibration prices the fused B itself (calibrated_seconds)
    return layer_cycles(hw, layer, TaskKind::BA, samples, optimizer) +
           layer_cycles(hw, layer, TaskKind::BW, samples, optimizer);
  }
  if (hw.cost_model == CostModelKind::unit) {
    return (kind == TaskKind::U) ? 0 : 1;
  }
  if (calibrated) {
    // The executor's own cost between layers, measured beside the layers (an update is one step).
    const double between_s = kind == TaskKind::U ? 0.0 : hw.calibration->layer_overhead_s;
    return ceil_cycles((calibrated_seconds(*hw.calibration, layer, kind, samples) + between_s) * hw.clock_hz());
  }
  if (hw.cost_model == CostModelKind::systolic) {
    return systolic_layer_cycles(layer, kind, samples, hw.processor.systolic);
  }
  if (hw.cost_model == CostModelKind::operator_level) {
    return ceil_cycles((operator_layer_seconds(hw.processor, layer, kind, samples, optimizer) +
                        tensor_parallel_seconds(hw, layer, kind, samples)) * hw.clock_hz());
  }
  const LayerWork work = layer_work(layer, kind, samples, optimizer);
  if (work.flops <= 0 && work.bytes <= 0) return 0;  // nothing to launch
  const ProcessorSpec& p = hw.processor;
  const double flops_per_cycle = p.peak_flops_per_s * p.efficiency / p.clock_hz;
  const double bytes_per_cycle = p.memory_bytes_per_s / p.clock_hz;
  const double roofline = std::max(work.flops / flops_per_cycle, work.bytes / bytes_per_cycle);
  // An update is one fused multi-tensor kernel for all its layers: no launch per layer.
  const double launch = kind == TaskKind::U ? 0.0 : p.layer_overhead_s * p.clock_hz;
  return ceil_cycles(roofline + launch + tensor_parallel_seconds(hw, layer, kind, samples) * p.clock_hz);
}

// The calibration's times of `layer`, where the cost model prices by a calibration that has the
// layer; null otherwise.
const LayerTimes* calibrated_times(const HardwareProfile& hw, const Layer& layer) {
  if (hw.cost_model == CostModelKind::unit || !hw.calibration) return nullptr;
  const auto it = hw.calibration->layers.find(layer.name);
  return it == hw.calibration->layers.end() ? nullptr : &it->second;
}

// A forward that is the only layer of its task, by a calibration that timed such forwards apart
// (LayerTimes::forward_one_layer_s, with the executor's cost between layers); -1 otherwise.
std::int64_t lone_forward_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->forward_one_layer_s < 0) return -1;
  const Calibration& c = *hw.calibration;
  return ceil_cycles((c.scaled_s(times->forward_one_layer_s, samples) + c.layer_overhead_s) * hw.clock_hz());
}

// A BW that is the only layer of its task, by a calibration that timed such BWs' dW apart
// (LayerTimes::weight_grad_dw_one_layer_s): the table's way back to the linear output (the first
// time; warm_to_linear.hpp swaps in the way back taken again) plus that dW, with the executor's cost
// between layers; -1 otherwise.
std::int64_t lone_weight_grad_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->weight_grad_dw_one_layer_s < 0 || times->to_linear_s() < 0) return -1;
  const Calibration& c = *hw.calibration;
  const double seconds = c.scaled_s(times->to_linear_s() + times->weight_grad_dw_one_layer_s, samples);
  return ceil_cycles((seconds + c.layer_overhead_s) * hw.clock_hz());
}

// A one-layer task's price by its table's one-layer figure, where the table has one for its kind;
// -1 otherwise.
std::int64_t lone_layer_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind, std::int64_t samples) {
  if (kind == TaskKind::F) return lone_forward_cycles(hw, layer, samples);
  if (kind == TaskKind::BW) return lone_weight_grad_cycles(hw, layer, samples);
  return -1;
}

}  // namespace

std::int64_t layer_work_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind,
                               std::int64_t samples) {
  return layer_cycles(hw, layer, kind, samples, OptimizerSpec{});
}

std::int64_t to_linear_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->to_linear_s() < 0) return 0;
  return ceil_cycles(hw.calibration->scaled_s(times->to_linear_s(), samples) * hw.clock_hz());
}

std::int64_t part_to_linear_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const std::int64_t whole_ba = layer_work_cycles(hw, layer, TaskKind::BA, samples);
  const LayerTimes* times = calibrated_times(hw, layer);
  // Without a fused B the table's BA cannot tell its way back from its dx: the parts split it all.
  if (times == nullptr || times->activation_grad_to_linear_one_layer_s < 0 || times->to_linear_s() < 0) {
    return std::min(whole_ba, to_linear_cycles(hw, layer, samples));
  }
  return std::min(whole_ba,
                  ceil_cycles(hw.calibration->scaled_s(times->activation_grad_to_linear_one_layer_s, samples) * hw.clock_hz()));
}

std::int64_t to_linear_again_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->to_linear_again_s(kind) < 0) return -1;
  return ceil_cycles(hw.calibration->scaled_s(times->to_linear_again_s(kind), samples) * hw.clock_hz());
}

std::int64_t activation_grad_fixed_cycles(const HardwareProfile& hw, const Layer& layer) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->activation_grad_fixed_s < 0) return -1;
  return ceil_cycles(times->activation_grad_fixed_s * hw.clock_hz());
}

std::int64_t one_layer_dx_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->activation_grad_dx_one_layer_s < 0) return -1;
  return ceil_cycles(hw.calibration->scaled_s(times->activation_grad_dx_one_layer_s, samples) * hw.clock_hz());
}

std::int64_t gradient_assembly_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples) {
  const LayerTimes* times = calibrated_times(hw, layer);
  if (times == nullptr || times->assembly_s < 0) return -1;
  return ceil_cycles(hw.calibration->scaled_s(times->assembly_s, samples) * hw.clock_hz());
}

std::int64_t compute_task_cycles(const HardwareProfile& hw, const Network& net, TaskKind kind,
                                 int first_layer, int last_layer, std::int64_t samples, SplitTaskSpan span) {
  if (first_layer < 0 || last_layer >= static_cast<int>(net.size()) || first_layer > last_layer) {
    throw Error("task layers [" + std::to_string(first_layer) + ", " + std::to_string(last_layer) +
                "] outside network " + net.name + " (" + std::to_string(net.size()) + " layers)");
  }
  std::int64_t cycles = 0;
  for (int l = first_layer; l <= last_layer; ++l) {
    const std::int64_t alone = first_layer == last_layer ? lone_layer_cycles(hw, net.layers[l], kind, samples) : -1;
    cycles += alone >= 0 ? alone : layer_cycles(hw, net.layers[l], kind, samples, net.optimizer);
  }
  // A task with nothing to compute is free on a roofline (nothing to launch), but an executor
  // still runs it: a calibrated one pays its kind's overhead (zb-h1's BA over a first stage of
  // the first layer alone assembles its gradient for the BW: 13-26 us on lenet5, predicted 0).
  if (hw.cost_model != CostModelKind::unit && (cycles > 0 || hw.calibration)) cycles += task_overhead_cycles(hw, kind, span);
  if (hw.cost_model != CostModelKind::unit && hw.calibration && kind == TaskKind::F && first_layer == 0) {
    // The microbatch's load at the network's input, measured beside the layers.
    const Calibration& c = *hw.calibration;
    cycles += ceil_cycles(c.scaled_s(c.input_load_s, samples) * hw.clock_hz());
  }
  if (hw.cost_model == CostModelKind::operator_level && !hw.calibration && kind == TaskKind::U && cycles > 0) {
    // The update's multi-tensor kernels: launched once for the stage.
    const ProcessorSpec& p = hw.processor;
    cycles += ceil_cycles(net.optimizer.update_kernels() * std::max(p.gpu.kernel_s, p.gpu.dispatch_s + p.gpu.launch_s) *
                          p.clock_hz);
  }
  return cycles;
}

std::int64_t selective_recompute_cycles(const HardwareProfile& hw, const Network& net, int first_layer,
                                        int last_layer, std::int64_t samples, std::int64_t* memory_cycles) {
  *memory_cycles = 0;
  const double n = static_cast<double>(samples);
  std::int64_t cycles = 0;
  double bytes = 0;
  for (int l = first_layer; l <= last_layer; ++l) {
    const Layer& layer = net.layers[static_cast<std::size_t>(l)];
    if (layer.selective_stash_bytes == 0) continue;
    if (hw.cost_model == CostModelKind::unit) {
      cycles += 1;
      continue;
    }
    // Calibrations time whole layers, not their attention cores: the roofline stands in.
    const ProcessorSpec& p = hw.processor;
    const double flops = layer.selective_recompute_flops * n;
    const double written = static_cast<double>(layer.selective_stash_bytes) * n;
    bytes += written;
    const double roofline = std::max(flops / (p.peak_flops_per_s * p.efficiency / p.clock_hz),
                                     written / (p.memory_bytes_per_s / p.clock_hz));
    cycles += ceil_cycles(roofline + p.layer_overhead_s * p.clock_hz);
  }
  if (hw.cost_model != CostModelKind::unit && cycles > 0) {
    cycles += task_overhead_cycles(hw, TaskKind::RC);
    *memory_cycles = std::min(cycles, ceil_cycles(bytes / (hw.processor.memory_bytes_per_s / hw.processor.clock_hz)));
  }
  return cycles;
}

std::int64_t block_recompute_cycles(const HardwareProfile& hw, const Network& net, int first_layer, int last_layer,
                                    std::int64_t samples, std::int64_t* memory_cycles) {
  *memory_cycles = 0;
  std::int64_t cycles = 0, memory = 0;
  for (int l = first_layer; l <= last_layer; ++l) {
    if (net.layers[static_cast<std::size_t>(l)].type != "transformer_block") continue;
    cycles += layer_cycles(hw, net.layers[static_cast<std::size_t>(l)], TaskKind::RC, samples, net.optimizer);
    memory += memory_traffic_cycles(hw, net, TaskKind::RC, l, l, samples);
  }
  if (hw.cost_model != CostModelKind::unit && cycles > 0) cycles += task_overhead_cycles(hw, TaskKind::RC);
  *memory_cycles = std::min(memory, cycles);
  return cycles;
}

std::int64_t memory_traffic_cycles(const HardwareProfile& hw, const Network& net, TaskKind kind,
                                   int first_layer, int last_layer, std::int64_t samples) {
  // Calibrated times were measured with the memory traffic in them.
  // A systolic array's DRAM traffic is part of its own cycle count (systolic_array.hpp).
  if (hw.cost_model == CostModelKind::unit || hw.cost_model == CostModelKind::systolic || hw.calibration) return 0;
  if (kind == TaskKind::B) {
    return memory_traffic_cycles(hw, net, TaskKind::BA, first_layer, last_layer, samples) +
           memory_traffic_cycles(hw, net, TaskKind::BW, first_layer, last_layer, samples);
  }
  const double bytes_per_cycle = hw.processor.memory_bytes_per_s / hw.processor.clock_hz;
  double bytes = 0;
  for (int l = first_layer; l <= last_layer; ++l) {
    const Layer& layer = net.layers[static_cast<std::size_t>(l)];
    bytes += hw.cost_model == CostModelKind::operator_level ? operator_layer_bytes(layer, kind, samples, net.optimizer)
                                                            : layer_work(layer, kind, samples, net.optimizer).bytes;
  }
  return ceil_cycles(bytes / bytes_per_cycle);
}

double link_bytes_per_cycle(const HardwareProfile& hw, const LinkSpec& link) {
  return link.bytes_per_s / hw.clock_hz();
}

std::int64_t link_latency_cycles(const HardwareProfile& hw, const LinkSpec& link) {
  return ceil_cycles(link.latency_s * hw.clock_hz());
}

std::int64_t transfer_cycles(const HardwareProfile& hw, const LinkSpec& link, std::int64_t bytes) {
  if (hw.cost_model == CostModelKind::unit || bytes <= 0) return 0;
  return link_latency_cycles(hw, link) +
         ceil_cycles(static_cast<double>(bytes) / link_bytes_per_cycle(hw, link));
}

}  // namespace pipetwin
