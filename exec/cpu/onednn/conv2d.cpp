// 2-D convolution on oneDNN: forward, input gradient and weight gradient. Activations [C*H*W x n]
// are NCHW as they are; the weights [Cout x C*k*k] (column-major) are OIHW with the output channel
// innermost. Each primitive picks its own layouts (format `any`, the blocked layouts its JIT
// kernels are written for) and the operands are reordered into them and the result back out.
#include "pipetwin/exec/cpu/onednn_kernels.hpp"

#include <unordered_map>

#include "onednn_call.hpp"

namespace pipetwin::cpu::onednn {
namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// The shapes of one convolution of n samples, as oneDNN describes them.
struct ConvShapes {
  Dims src, weights, bias, dst, strides, padding;
  ConvShapes(const ConvGeometry& g, std::int64_t n)
      : src{n, g.in_channels, g.height, g.width},
        weights{g.out_channels, g.in_channels, g.kernel, g.kernel},
        bias{g.out_channels},
        dst{n, g.out_channels, g.out_height(), g.out_width()},
        strides{g.stride, g.stride},
        padding{g.padding, g.padding} {}
  memory::desc user_src() const { return {src, kF32, Tag::nchw}; }
  memory::desc user_dst() const { return {dst, kF32, Tag::nchw}; }
  // [Cout x C*k*k] column-major: o has stride 1, then kw, kh, c.
  memory::desc user_weights() const {
    const std::int64_t o = weights[0], k = weights[2];
    return {weights, kF32, Dims{1, o * k * k, o * k, o}};
  }
  memory::desc user_bias() const { return {bias, kF32, Tag::x}; }
};

memory::desc any(const Dims& dims) { return {dims, kF32, Tag::any}; }

// With `relu`, ReLU as a post-op: applied to each output as the kernel writes it (alpha 0).
dnnl::primitive_attr user_scratchpad(bool relu = false) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one per call: calls on other threads never share it
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(Call& call, const ConvShapes& s, bool with_bias, bool relu = false) {
  const dnnl::convolution_forward::desc desc =
      with_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), s.user_bias(), any(s.dst), s.strides,
                                                  s.padding, s.padding)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), any(s.dst), s.strides, s.padding, s.padding);
  return {desc, user_scratchpad(relu), call.engine()};
}

}  // namespace

Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b,
                      const Matrix& x, bool relu) {
  Call call("conv2d forward");
  const ConvShapes s(g, x.cols());
  Matrix out(g.out_channels * g.out_height() * g.out_width(), x.cols());  // [Cout*Ho*Wo x n]
  try {
    const bool with_bias = b.size() > 0;
    const auto pd = forward_pd(call, s, with_bias, relu);
    std::unordered_map<int, memory> bias;
    if (with_bias) bias[DNNL_ARG_BIAS] = call.wrap(s.user_bias(), b.data());
    call.execute(dnnl::convolution_forward(pd), pd.scratchpad_desc(),
                 {{DNNL_ARG_SRC, call.wrap(s.user_src(), x.data()), pd.src_desc()},
                  {DNNL_ARG_WEIGHTS, call.wrap(s.user_weights(), w.data()), pd.weights_desc()}},
                 {DNNL_ARG_DST, call.wrap(s.user_dst(), out.data()), pd.dst_desc()}, bias);
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
  return out;
}

Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz) {
  Call call("conv2d input gradient");
  if (dz.outerStride() != dz.rows()) throw Error("internal: conv2d input gradient of columns that are not contiguous");
  const ConvShapes s(g, dz.cols());
  Matrix dx(g.in_channels * g.height * g.width, dz.cols());  // [C*H*W x n]
  try {
    const auto hint = forward_pd(call, s, false);
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, any(s.src), any(s.weights),
                                              any(s.dst), s.strides, s.padding, s.padding),
        user_scratchpad(), call.engine(), hint);
    call.execute(dnnl::convolution_backward_data(pd), pd.scratchpad_desc(),
                 {{DNNL_ARG_DIFF_DST, call.wrap(s.user_dst(), dz.data()), pd.diff_dst_desc()},
                  {DNNL_ARG_WEIGHTS, call.wrap(s.user_weights(), w.data()), pd.weights_desc()}},
                 {DNNL_ARG_DIFF_SRC, call.wrap(s.user_src(), dx.data()), pd.diff_src_desc()});
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
  return dx;
}

void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz, Eigen::Ref<Matrix> dw,
                            Vector* db) {
  Call call("conv2d weight gradient");
  const ConvShapes s(g, x.cols());
  if (dw.outerStride() != dw.rows()) throw Error("internal: conv2d weight gradient into a strided matrix");
  try {
    const bool with_bias = db != nullptr;
    if (with_bias) db->resize(g.out_channels);
    const auto hint = forward_pd(call, s, with_bias);
    const auto desc =
        with_bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(s.src),
                                                             any(s.weights), s.user_bias(), any(s.dst), s.strides,
                                                             s.padding, s.padding)
                  : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(s.src),
                                                             any(s.weights), any(s.dst), s.strides, s.padding,
                                                             s.padding);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), call.engine(), hint);
    std::unordered_map<int, memory> bias;
    if (with_bias) bias[DNNL_ARG_DIFF_BIAS] = call.wrap(s.user_bias(), db->data());
    call.execute(dnnl::convolution_backward_weights(pd), pd.scratchpad_desc(),
                 {{DNNL_ARG_SRC, call.wrap(s.user_src(), x.data()), pd.src_desc()},
                  {DNNL_ARG_DIFF_DST, call.wrap(s.user_dst(), dz.data()), pd.diff_dst_desc()}},
                 {DNNL_ARG_DIFF_WEIGHTS, call.wrap(s.user_weights(), dw.data()), pd.diff_weights_desc()}, bias);
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
}

}  // namespace pipetwin::cpu::onednn
