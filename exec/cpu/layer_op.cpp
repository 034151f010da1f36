// The CPU executor's layers: the shared composition on the CPU kernels (oneDNN and Eigen).
#include "pipetwin/exec/cpu/layer_op.hpp"

#include <memory>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {

std::int64_t bytes_of(const Activation& a) { return bytes_of(a.main) + bytes_of(a.shortcut); }
std::int64_t bytes_of(const Gradient& g) { return bytes_of(g.main) + bytes_of(g.shortcut); }
std::int64_t bytes_of(const LayerStash& s) {
  return bytes_of(s.input) + bytes_of(s.activation) + bytes_of(s.batch_norm.normalized) +
         bytes_of(s.batch_norm.inv_std) + static_cast<std::int64_t>(s.argmax.size()) * 4 + bytes_of(s.loss_gradient);
}

LayerOp::LayerOp(exec::LayerSpec spec, std::shared_ptr<onednn::PlanCache> plans)
    : composition_(std::make_shared<const exec::LayerComposition<CpuLayerKernels>>(std::move(spec))),
      plans_(plans != nullptr ? std::move(plans) : std::make_shared<onednn::PlanCache>()) {}

CpuLayerKernels LayerOp::kernels_on_plans(const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels;
  kernels.plans = plans_.get();
  kernels.tensors = pool;
  return kernels;
}

const Layer& LayerOp::layer() const { return composition_->spec().layer(); }
const exec::LayerSpec& LayerOp::spec() const { return composition_->spec(); }

Linear LayerOp::to_linear(const Vector& params, const LayerStash& stash, const Gradient* out, bool want_shortcut,
                          Vector* grad, WeightGradient mode, const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels = kernels_on_plans(pool);
  kernels.grad_mode = mode;
  return composition_->to_linear(kernels, params, stash, out, want_shortcut, grad);
}

Gradient LayerOp::input_gradient(const Vector& params, const Linear& linear, const Gradient* out, std::int64_t begin,
                                 std::int64_t end, const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels = kernels_on_plans(pool);
  return composition_->input_gradient(kernels, params, linear, out, begin, end);
}

Vector LayerOp::gradient_buffer(WeightGradient mode) const {
  CpuLayerKernels kernels = kernels_on_plans();
  kernels.grad_mode = mode;
  return composition_->gradient_buffer(kernels);
}

void LayerOp::weight_gradient(const LayerStash& stash, const Linear& linear, Vector& grad, WeightGradient mode) const {
  CpuLayerKernels kernels = kernels_on_plans();
  kernels.grad_mode = mode;
  composition_->weight_gradient(kernels, stash, linear, grad);
}

std::string kernel_libraries() { return onednn::available() ? onednn::description() + " + Eigen" : "Eigen"; }

std::vector<LayerOp> make_layer_ops(const std::vector<Layer>& layers) {
  std::vector<LayerOp> ops;
  const auto plans = std::make_shared<onednn::PlanCache>();  // one for the network: one workspace a thread
  for (auto& spec : exec::make_layer_specs(layers)) ops.emplace_back(std::move(spec), plans);
  return ops;
}

Activation LayerOp::forward(const Vector& params, Activation in, LayerStash& stash,
                            const std::vector<std::int32_t>* labels, double loss_scale, double* loss,
                            exec::ShortcutHandoff handoff, const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels = kernels_on_plans(pool);
  return composition_->forward(kernels, params, std::move(in), stash, labels, loss_scale, loss, handoff);
}

Matrix LayerOp::logits(const Vector& params, const Activation& in) const {
  const exec::LayerSpec& s = spec();
  if (!s.is_loss()) throw Error("internal: logits of a layer without a loss");
  CpuLayerKernels kernels = kernels_on_plans();
  return kernels.dense(params, s.weight_rows(), s.weight_cols(), s.parameter_layout().bias, in.main);
}

Gradient LayerOp::backward_input(const Vector& params, const LayerStash& stash, const Gradient* out,
                                 std::int64_t begin, std::int64_t end, const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels = kernels_on_plans(pool);
  return composition_->backward_input(kernels, params, stash, out, begin, end);
}

Vector LayerOp::backward_weight(const Vector& params, const LayerStash& stash, const Gradient* out,
                                const std::shared_ptr<TensorPool>& pool) const {
  CpuLayerKernels kernels = kernels_on_plans(pool);
  return composition_->backward_weight(kernels, params, stash, out);
}

}  // namespace pipetwin::cpu
