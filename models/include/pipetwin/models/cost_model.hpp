// Cycles of a task on a processor or a link (docs/cost-model.md): the unit model of the LayerPipe
// paper, the roofline model overhead + max(FLOPs / (peak x efficiency), bytes / bandwidth), or the
// GPU operator model (each layer's kernels timed, gpu_kernels.hpp), summed per layer so that
// stage costs add up exactly.
#pragma once
#include <cstdint>

#include "pipetwin/models/hardware.hpp"
#include "pipetwin/models/network.hpp"
#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

// What a split BA or BW task spans, for the per-task part a calibration charges it: its stage
// (zero bubble's; Calibration::stage_kind_overhead_s) or one layer of a stage of several, as
// LayerPipe splits them (Calibration::kind_overhead_s). Other kinds pay the same either way.
enum class SplitTaskSpan { stage, layer };

// Cycles of one compute task (F, B, BA, BW, U, RC) covering layers [first, last] for `samples`
// samples; a U costs the same whatever the samples. A forward of one layer takes the calibration's
// LayerTimes::forward_one_layer_s where it has one, a BW of one layer its to_linear_s() plus
// weight_grad_dw_one_layer_s.
std::int64_t compute_task_cycles(const HardwareProfile& hw, const Network& net, TaskKind kind,
                                 int first_layer, int last_layer, std::int64_t samples,
                                 SplitTaskSpan span = SplitTaskSpan::stage);

// Cycles of a selective recomputation (recompute=selective) of layers [first, last] for `samples`
// samples: each layer's selective_recompute_flops (roofline, writing its selective stash bytes)
// plus the per-task overhead; 0 when no layer has a part to recompute. Its memory traffic in
// cycles at full bandwidth goes to *memory_cycles.
std::int64_t selective_recompute_cycles(const HardwareProfile& hw, const Network& net, int first_layer,
                                        int last_layer, std::int64_t samples, std::int64_t* memory_cycles);

// Cycles of a block recomputation (recompute=blocks) of layers [first, last]: the forward of each
// transformer block among them, plus the per-task overhead; 0 when there is none. Its memory
// traffic in cycles at full bandwidth goes to *memory_cycles.
std::int64_t block_recompute_cycles(const HardwareProfile& hw, const Network& net, int first_layer, int last_layer,
                                    std::int64_t samples, std::int64_t* memory_cycles);

// Cycles of one layer's part of a task, without the per-task overhead (an update priced as plain
// SGD's: compute_task_cycles prices it with the network's optimizer).
std::int64_t layer_work_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind,
                               std::int64_t samples);

// Of a layer's BA cycles (layer_work_cycles), the part a BA split by samples cannot split: back
// through pooling, ReLU, the residual and batch norm to the linear output, which every part goes
// over all samples (batch norm's gradient needs them). From a calibration with a fused B: BA_s +
// BW_s - B_s, since the split BA and BW each go back to the linear output and the fused B once
// (clamped to [0, BA_s]); 0 otherwise (the other cost models split a BA's work evenly).
std::int64_t to_linear_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples);
// The same way back the first time by a one-layer BA part (LayerPipe's): the calibration's
// LayerTimes::activation_grad_to_linear_one_layer_s scaled to `samples` where it has one and a
// fused B, else to_linear_cycles; at most the layer's whole BA (layer_work_cycles), which a part's
// price holds it in.
std::int64_t part_to_linear_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples);
// The same way back taken again by a BA part or BW (`kind`) right after another of its layer, its
// data in cache (warm_to_linear.hpp): the calibration's LayerTimes::to_linear_again_s(kind) scaled
// to `samples`; -1 where it has none.
std::int64_t to_linear_again_cycles(const HardwareProfile& hw, const Layer& layer, TaskKind kind, std::int64_t samples);
// Of a BA's cycles beyond that way back, what a part of fewer samples still costs whole: the
// calibration's LayerTimes::activation_grad_fixed_s (not scaled: it does not shrink with
// samples); -1 where it has none (a BA then splits in proportion to samples).
std::int64_t activation_grad_fixed_cycles(const HardwareProfile& hw, const Layer& layer);
// The dx a one-layer BA's parts share (LayerPipe's: its cycles beyond the way back, split by
// samples with activation_grad_fixed_cycles): the calibration's
// LayerTimes::activation_grad_dx_one_layer_s scaled to `samples`; -1 where it has none (the parts
// then share the whole BA's dx, layer_work_cycles less to_linear_cycles).
std::int64_t one_layer_dx_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples);
// The gradient at the layer's output assembled from the next layer's BA parts, by the backward
// that assembles it (schedule/gradient_assembly.hpp): the calibration's LayerTimes::assembly_s
// scaled to `samples`; -1 where it has none.
std::int64_t gradient_assembly_cycles(const HardwareProfile& hw, const Layer& layer, std::int64_t samples);

// Cycles the task's memory traffic takes at the processor's full memory bandwidth (summed over
// its layers; 0 on the unit model). At most compute_task_cycles: the part of a task that
// processors sharing one memory system compete for.
std::int64_t memory_traffic_cycles(const HardwareProfile& hw, const Network& net, TaskKind kind,
                                   int first_layer, int last_layer, std::int64_t samples);

// Cycles to move `bytes` over one hop of `link` (latency + serialisation); 0 on the unit model.
std::int64_t transfer_cycles(const HardwareProfile& hw, const LinkSpec& link, std::int64_t bytes);

// Link parameters in cycles of the profile's clock.
double link_bytes_per_cycle(const HardwareProfile& hw, const LinkSpec& link);
std::int64_t link_latency_cycles(const HardwareProfile& hw, const LinkSpec& link);

}  // namespace pipetwin
