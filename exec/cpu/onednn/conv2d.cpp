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

float* mutable_data(const float* p) { return const_cast<float*>(p); }  // oneDNN takes inputs as void*

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

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one per call: calls on other threads never share it
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(Call& call, const ConvShapes& s, bool with_bias) {
  const dnnl::convolution_forward::desc desc =
      with_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), s.user_bias(), any(s.dst), s.strides,
                                                  s.padding, s.padding)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), any(s.dst), s.strides, s.padding, s.padding);
  return {desc, user_scratchpad(), call.engine()};
}

}  // namespace

Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b,
                      const Matrix& x) {
  Call call("conv2d forward");
  const ConvShapes s(g, x.cols());
  Matrix out(g.out_channels * g.out_height() * g.out_width(), x.cols());  // [Cout*Ho*Wo x n]
  try {
    const bool with_bias = b.size() > 0;
    const auto pd = forward_pd(call, s, with_bias);
    memory user_x(s.user_src(), call.engine(), mutable_data(x.data()));
    memory user_w(s.user_weights(), call.engine(), mutable_data(w.data()));
    memory user_y(s.user_dst(), call.engine(), out.data());
    memory src = call.in_layout(user_x, pd.src_desc()), weights = call.in_layout(user_w, pd.weights_desc());
    memory dst = call.out_layout(user_y, pd.dst_desc());
    memory scratchpad(pd.scratchpad_desc(), call.engine());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (with_bias) args[DNNL_ARG_BIAS] = memory(s.user_bias(), call.engine(), mutable_data(b.data()));
    dnnl::convolution_forward(pd).execute(call.stream(), args);
    call.to_user(dst, user_y);
    call.stream().wait();
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
  return out;
}

Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Matrix& dz) {
  Call call("conv2d input gradient");
  const ConvShapes s(g, dz.cols());
  Matrix dx(g.in_channels * g.height * g.width, dz.cols());  // [C*H*W x n]
  try {
    const auto hint = forward_pd(call, s, false);
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, any(s.src), any(s.weights),
                                              any(s.dst), s.strides, s.padding, s.padding),
        user_scratchpad(), call.engine(), hint);
    memory user_dz(s.user_dst(), call.engine(), mutable_data(dz.data()));
    memory user_w(s.user_weights(), call.engine(), mutable_data(w.data()));
    memory user_dx(s.user_src(), call.engine(), dx.data());
    memory diff_dst = call.in_layout(user_dz, pd.diff_dst_desc()), weights = call.in_layout(user_w, pd.weights_desc());
    memory diff_src = call.out_layout(user_dx, pd.diff_src_desc());
    memory scratchpad(pd.scratchpad_desc(), call.engine());
    dnnl::convolution_backward_data(pd).execute(call.stream(), {{DNNL_ARG_DIFF_DST, diff_dst},
                                                                {DNNL_ARG_WEIGHTS, weights},
                                                                {DNNL_ARG_DIFF_SRC, diff_src},
                                                                {DNNL_ARG_SCRATCHPAD, scratchpad}});
    call.to_user(diff_src, user_dx);
    call.stream().wait();
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
    memory user_x(s.user_src(), call.engine(), mutable_data(x.data()));
    memory user_dz(s.user_dst(), call.engine(), mutable_data(dz.data()));
    memory user_dw(s.user_weights(), call.engine(), dw.data());
    memory src = call.in_layout(user_x, pd.src_desc()), diff_dst = call.in_layout(user_dz, pd.diff_dst_desc());
    memory diff_weights = call.out_layout(user_dw, pd.diff_weights_desc());
    memory scratchpad(pd.scratchpad_desc(), call.engine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, diff_dst},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (with_bias) args[DNNL_ARG_DIFF_BIAS] = memory(s.user_bias(), call.engine(), db->data());
    dnnl::convolution_backward_weights(pd).execute(call.stream(), args);
    call.to_user(diff_weights, user_dw);
    call.stream().wait();
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
}

}  // namespace pipetwin::cpu::onednn
