// One network layer as the CPU executor runs it: the layer composition written once for every
// backend (pipetwin/exec/layers/layer_composition.hpp) on the Eigen kernels, parameters in one
// flat vector. Its forward stashes what the backward needs; its backward is split as the task
// kinds split it: the activation gradient (BA, for a slice of the samples) and the weight
// gradient (BW).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/cpu/layer_kernels.hpp"
#include "pipetwin/exec/layers/layer_composition.hpp"
#include "pipetwin/exec/layers/layer_spec.hpp"
#include "pipetwin/models/layer.hpp"

namespace pipetwin::cpu {

using Activation = exec::ActivationOf<PooledMatrix>;  // main [out_features x n], shortcut (block input) or empty
using Gradient = exec::GradientOf<PooledMatrix>;      // at the input, columns [first_sample, first_sample + cols)
using LayerStash = exec::LayerStashOf<CpuLayerKernels>;
using Linear = exec::LayerComposition<CpuLayerKernels>::Linear;  // the gradient at the conv / dense output

std::int64_t bytes_of(const Activation& a);
std::int64_t bytes_of(const Gradient& g);
std::int64_t bytes_of(const LayerStash& s);

class LayerOp {
 public:
  // `plans`: the oneDNN convolution plans it shares with the network's other layers (null: its own).
  explicit LayerOp(exec::LayerSpec spec, std::shared_ptr<onednn::PlanCache> plans = nullptr);

  const Layer& layer() const;
  const exec::LayerSpec& spec() const;
  std::int64_t parameter_count() const { return spec().parameter_count(); }
  Vector initial_parameters(std::uint64_t seed) const { return spec().initial_parameters(seed); }

  // The loss layer also takes the labels, adds the summed loss to *loss and stashes the gradient
  // of (loss / loss_scale). `in` becomes the stash's input: move in an activation done with
  // (or the shortcut sent on, with handoff.lend_input: exec::ShortcutHandoff).
  Activation forward(const Vector& params, Activation in, LayerStash& stash,
                     const std::vector<std::int32_t>* labels, double loss_scale, double* loss,
                     exec::ShortcutHandoff handoff = {}, const std::shared_ptr<TensorPool>& pool = nullptr) const;
  // The loss layer's logits [classes x n] (no loss, no stash): for measuring accuracy.
  Matrix logits(const Vector& params, const Activation& in) const;
  // Gradient at the input for samples [begin, end); `out` is the gradient at the output
  // (assembled over all samples), null for the loss layer.
  Gradient backward_input(const Vector& params, const LayerStash& stash, const Gradient* out,
                          std::int64_t begin, std::int64_t end, const std::shared_ptr<TensorPool>& pool = nullptr) const;
  // Gradient of every parameter, laid out as the parameters are.
  Vector backward_weight(const Vector& params, const LayerStash& stash, const Gradient* out,
                         const std::shared_ptr<TensorPool>& pool = nullptr) const;

  // The backward in the composition's three steps (layer_composition.hpp), for a fused B that
  // goes back to the linear output once: to_linear, then input_gradient and weight_gradient.
  // Weight gradients go into `grad` as `mode` says: added to what it holds (gradient_buffer(add)
  // gives zeros), or written (gradient_buffer(write) gives room, uninitialised); to_linear's
  // dgamma and dbeta and weight_gradient's dW and db are written once each.
  Linear to_linear(const Vector& params, const LayerStash& stash, const Gradient* out, bool want_shortcut,
                   Vector* grad, WeightGradient mode = WeightGradient::add, const std::shared_ptr<TensorPool>& pool = nullptr) const;
  Gradient input_gradient(const Vector& params, const Linear& linear, const Gradient* out, std::int64_t begin,
                          std::int64_t end, const std::shared_ptr<TensorPool>& pool = nullptr) const;
  Vector gradient_buffer(WeightGradient mode = WeightGradient::add) const;
  void weight_gradient(const LayerStash& stash, const Linear& linear, Vector& grad,
                       WeightGradient mode = WeightGradient::add) const;

 private:
  // The kernels on this layer's plans, making their tensors in `pool`'s buffers (or new ones).
  CpuLayerKernels kernels_on_plans(const std::shared_ptr<TensorPool>& pool = nullptr) const;

  std::shared_ptr<const exec::LayerComposition<CpuLayerKernels>> composition_;
  // The oneDNN convolution plans, kept between calls (shared with the network's other layers and
  // by copies of the op; calls on several threads at once take plans of their own, and each
  // thread has a workspace of its own: onednn_kernels.hpp).
  std::shared_ptr<onednn::PlanCache> plans_;
};

// What the CPU kernels run on, for the record: "oneDNN 2.6.3/avx2 + Eigen", or "Eigen".
std::string kernel_libraries();

// The ops of a whole network, in order, sharing one PlanCache (throws, naming the layer, for what
// the executors do not run).
std::vector<LayerOp> make_layer_ops(const std::vector<Layer>& layers);

}  // namespace pipetwin::cpu
