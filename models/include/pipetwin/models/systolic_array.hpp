// A systolic array (rows x columns of multiply-accumulate cells) running a layer task's GEMMs
// (docs/accelerators.md). Compute cycles follow SCALE-Sim v2's stall-free count per fold, for its
// three dataflows; DRAM traffic is an estimate for double-buffered operand SRAMs; element-wise work
// runs on a vector unit beside the array. Used by the "systolic" cost model and the simulator's
// systolic-array accelerator module, which computes each task's cycles from the layers' shapes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipetwin/models/layer.hpp"
#include "pipetwin/models/task_kind.hpp"

namespace pipetwin {

enum class Dataflow {
  output_stationary,  // "os": each cell keeps one output; operands stream through
  weight_stationary,  // "ws": each cell keeps one weight; inputs stream, partial sums flow down
  input_stationary,   // "is": each cell keeps one input element; weights stream
};

const char* to_string(Dataflow dataflow);       // "os", "ws", "is"
Dataflow dataflow_from_string(const std::string& text);  // throws on anything else

struct SystolicSpec {
  std::int64_t rows = 32;
  std::int64_t cols = 32;
  Dataflow dataflow = Dataflow::output_stationary;
  std::int64_t word_bytes = 2;               // one operand element
  std::int64_t ifmap_sram_bytes = 256 * 1024;
  std::int64_t filter_sram_bytes = 256 * 1024;
  std::int64_t ofmap_sram_bytes = 128 * 1024;
  double dram_bytes_per_cycle = 64;          // to and from the operand SRAMs
  double vector_ops_per_cycle = 32;          // element-wise work (bias, ReLU, pooling, updates)
};

// The hardware file's "accelerator" settings (rows, cols, dataflow, word_bytes, the SRAM sizes in
// bytes, dram_bytes_per_s, vector_ops_per_cycle) at `clock_hz`; throws naming a bad or unknown key.
SystolicSpec systolic_spec_from_settings(const std::map<std::string, std::string>& settings, double clock_hz);

// A GEMM C[m x n] = A[m x k] B[k x n] as SCALE-Sim maps it: m = Sr (output pixels), k = T (the
// convolution window), n = Sc (filters).
struct ArrayGemm {
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
};

// SCALE-Sim v2's compute cycles of one GEMM without memory stalls: the folds (the GEMM split into
// array-sized pieces) times each fold's fill, stream and drain.
std::int64_t gemm_compute_cycles(const ArrayGemm& gemm, const SystolicSpec& spec);
// Words read from DRAM and written back for one GEMM: an operand that fits half its SRAM (the
// other half being filled) is read once, otherwise once per fold of the other operand.
double gemm_dram_words(const ArrayGemm& gemm, const SystolicSpec& spec);
// The cycles those words take at the DRAM's bandwidth.
double gemm_dram_cycles(const ArrayGemm& gemm, const SystolicSpec& spec);

// The GEMMs of one layer's task of `kind` (F, BA, BW; B is BA then BW; RC is F) for `samples`
// samples: conv2d (per group) and dense layers. Throws for other layer types.
std::vector<ArrayGemm> layer_gemms(const Layer& layer, TaskKind kind, std::int64_t samples);

// Cycles of one layer's part of a task on the array: per GEMM the larger of its compute and its
// DRAM traffic (double buffering overlaps them), plus the element-wise work on the vector unit.
// An update (U) is element-wise over the layer's parameters.
std::int64_t systolic_layer_cycles(const Layer& layer, TaskKind kind, std::int64_t samples, const SystolicSpec& spec);

}  // namespace pipetwin
