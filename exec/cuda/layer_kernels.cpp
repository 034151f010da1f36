// The CUDA kernels behind the layer composition's kernel interface (see layer_kernels.hpp).
#include "layer_kernels.hpp"

#include <cuda_runtime.h>

#include <vector>

#include "cuda_check.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

int as_int(std::int64_t value) { return static_cast<int>(value); }
const float* part(const Tensor& p, std::int64_t at) { return at < 0 ? nullptr : p.data() + at; }
float* part(Tensor& p, std::int64_t at) { return at < 0 ? nullptr : p.data() + at; }

ConvShape shape(const exec::ConvGeometry& g) {
  return {as_int(g.in_channels), as_int(g.height), as_int(g.width), as_int(g.out_channels), as_int(g.kernel),
          as_int(g.stride), as_int(g.padding)};
}

PoolShape shape(const exec::PoolGeometry& g) {
  const PoolKind kind = g.kind == exec::PoolKind::max ? PoolKind::max
                        : g.kind == exec::PoolKind::avg ? PoolKind::avg
                                                        : PoolKind::global_avg;
  return {kind, as_int(g.channels), as_int(g.height), as_int(g.width), as_int(g.kernel), as_int(g.stride)};
}

ShortcutShape shape(const exec::ShortcutGeometry& g) {
  return {as_int(g.in_channels), as_int(g.in_height), as_int(g.in_width),
          as_int(g.out_channels), as_int(g.out_height), as_int(g.out_width)};
}

}  // namespace

Tensor CudaLayerKernels::dense(const Params& p, std::int64_t rows, std::int64_t cols, std::int64_t bias_at,
                               const Tensor& x) {
  Tensor z = lane.tensor(rows, x.cols);
  dense_forward(*lane.context, p.data(), part(p, bias_at), x.data(), z.data(), as_int(rows), as_int(cols), as_int(x.cols));
  return z;
}

Tensor CudaLayerKernels::conv2d(const exec::ConvGeometry& g, const Params& p, std::int64_t bias_at, const Tensor& x) {
  const ConvShape s = shape(g);
  const int n = as_int(x.cols);
  Tensor z = lane.tensor(g.out_channels * g.out_height() * g.out_width(), n);
  conv2d_forward(*lane.context, s, p.data(), part(p, bias_at), x.data(), z.data(), n, lane.workspace(s.workspace(n)));
  return z;
}

Tensor CudaLayerKernels::batch_norm(std::int64_t channels, std::int64_t positions, const Params& p, std::int64_t gamma_at,
                                    std::int64_t beta_at, const Tensor& z, BatchNormStash& stash) {
  const int n = as_int(z.cols);
  Tensor y = lane.tensor(z.rows, n);
  stash.normalized = lane.tensor(z.rows, n);
  stash.inv_std = lane.tensor(channels, 1);
  batch_norm_forward(*lane.context, as_int(channels), as_int(positions), n, part(p, gamma_at), part(p, beta_at), z.data(),
                     y.data(), stash.normalized.data(), stash.inv_std.data());
  return y;
}

void CudaLayerKernels::add_shortcut(const exec::ShortcutGeometry& g, const Tensor& x, Tensor& z) {
  shortcut_forward_add(*lane.context, shape(g), x.data(), z.data(), as_int(z.cols));
}

void CudaLayerKernels::relu(Tensor& z) { relu_forward(*lane.context, z.data(), z.size()); }

Tensor CudaLayerKernels::pool(const exec::PoolGeometry& g, const Tensor& z, Index* argmax) {
  const PoolShape s = shape(g);
  const int n = as_int(z.cols);
  const std::int64_t pooled = g.channels * g.out_height() * g.out_width();
  Tensor out = lane.tensor(pooled, n);
  if (g.kind == exec::PoolKind::max) *argmax = lane.tensor(pooled, n);
  pool_forward(*lane.context, s, z.data(), out.data(), argmax->empty() ? nullptr : argmax->ints(), n);
  return out;
}

double CudaLayerKernels::softmax_cross_entropy(const Tensor& z, const Labels* labels, double loss_scale, Tensor* dlogits) {
  const int n = as_int(z.cols);
  if (labels == nullptr || labels->size() != n) throw Error("internal: loss layer without labels");
  Context& c = *lane.context;
  Tensor per_sample = lane.tensor(1, n);
  *dlogits = lane.tensor(z.rows, n);
  cuda::softmax_cross_entropy(c, z.data(), labels->ints(), as_int(z.rows), n, static_cast<float>(loss_scale),
                              per_sample.data(), dlogits->data());
  std::vector<float> losses(static_cast<std::size_t>(n));
  check_cuda(cudaMemcpyAsync(losses.data(), per_sample.data(), losses.size() * 4, cudaMemcpyDeviceToHost, c.impl().stream),
             "loss download");
  c.synchronize();
  double sum = 0;
  for (const float l : losses) sum += l;
  return sum;
}

Tensor CudaLayerKernels::zeros(std::int64_t rows, std::int64_t n) {
  Tensor t = lane.tensor(rows, n);
  check_cuda(cudaMemsetAsync(t.data(), 0, static_cast<std::size_t>(t.bytes()), lane.context->impl().stream), "memset");
  return t;
}

Tensor CudaLayerKernels::pool_backward(const exec::PoolGeometry& g, const Tensor& dy, const Index& argmax) {
  const int n = as_int(dy.cols);
  Tensor unpooled = lane.tensor(g.channels * g.height * g.width, n);
  cuda::pool_backward(*lane.context, shape(g), dy.data(), argmax.empty() ? nullptr : argmax.ints(), unpooled.data(), n);
  return unpooled;
}

Tensor CudaLayerKernels::relu_backward(const Tensor& out, const Tensor& dy) {
  Tensor masked = lane.tensor(dy.rows, dy.cols);
  cuda::relu_backward(*lane.context, out.data(), dy.data(), masked.data(), dy.size());
  return masked;
}

Tensor CudaLayerKernels::shortcut_backward(const exec::ShortcutGeometry& g, const Tensor& dy) {
  const int n = as_int(dy.cols);
  Tensor dx = lane.tensor(g.in_channels * g.in_height * g.in_width, n);
  cuda::shortcut_backward(*lane.context, shape(g), dy.data(), dx.data(), n);
  return dx;
}

Tensor CudaLayerKernels::batch_norm_backward(std::int64_t channels, std::int64_t positions, const Params& p,
                                             std::int64_t gamma_at, const BatchNormStash& stash, const Tensor& dy,
                                             Params* grad, std::int64_t dgamma_at, std::int64_t dbeta_at) {
  const int n = as_int(dy.cols);
  Tensor dz = lane.tensor(dy.rows, n);
  cuda::batch_norm_backward(*lane.context, as_int(channels), as_int(positions), n, part(p, gamma_at),
                            stash.normalized.data(), stash.inv_std.data(), dy.data(), dz.data(),
                            grad != nullptr ? part(*grad, dgamma_at) : nullptr,
                            grad != nullptr ? part(*grad, dbeta_at) : nullptr, add_weight_gradients);
  return dz;
}

Tensor CudaLayerKernels::dense_backward_input(const Params& p, std::int64_t rows, std::int64_t cols, const Tensor& dz) {
  const int m = as_int(dz.cols);
  Tensor dx = lane.tensor(cols, m);
  cuda::dense_backward_input(*lane.context, p.data(), dz.data(), dx.data(), as_int(rows), as_int(cols), m);
  return dx;
}

Tensor CudaLayerKernels::conv2d_backward_input(const exec::ConvGeometry& g, const Params& p, const Tensor& dz) {
  const ConvShape s = shape(g);
  const int m = as_int(dz.cols);
  Tensor dx = lane.tensor(g.in_channels * g.height * g.width, m);
  cuda::conv2d_backward_input(*lane.context, s, p.data(), dz.data(), dx.data(), m, lane.workspace(s.workspace(m)));
  return dx;
}

void CudaLayerKernels::add(Tensor& x, const Tensor& y) { add_into(*lane.context, y.data(), x.data(), x.size()); }

void CudaLayerKernels::dense_backward_weight(const Tensor& x, const Tensor& dz, std::int64_t rows, std::int64_t cols,
                                             std::int64_t bias_at, Params& grad) {
  cuda::dense_backward_weight(*lane.context, x.data(), dz.data(), grad.data(), part(grad, bias_at), as_int(rows),
                              as_int(cols), as_int(dz.cols), add_weight_gradients);
}

void CudaLayerKernels::conv2d_backward_weight(const exec::ConvGeometry& g, const Tensor& x, const Tensor& dz,
                                              std::int64_t bias_at, Params& grad) {
  const ConvShape s = shape(g);
  const int n = as_int(dz.cols);
  cuda::conv2d_backward_weight(*lane.context, s, x.data(), dz.data(), grad.data(), part(grad, bias_at), n,
                               lane.workspace(s.workspace(n)), add_weight_gradients);
}

}  // namespace pipetwin::cuda
