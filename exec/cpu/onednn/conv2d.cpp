// 2-D convolution on oneDNN: forward, input gradient and weight gradient. Activations [C*H*W x n]
// are NCHW as they are; the weights [Cout x C*k*k] (column-major) are OIHW with the output channel
// innermost. Each primitive picks its own layouts (format `any`, the blocked layouts its JIT
// kernels are written for) and the operands are reordered into them and the result back out. Each
// call runs a plan (plan.hpp): the network's, kept from an earlier call of its kernel and shape, or
// one made for it.
#include "pipetwin/exec/cpu/onednn_kernels.hpp"

#include <array>
#include <memory>

#include "onednn_call.hpp"
#include "plan.hpp"

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

dnnl::convolution_forward::primitive_desc forward_pd(const dnnl::engine& engine, const ConvShapes& s, bool with_bias,
                                                     bool relu = false) {
  const dnnl::convolution_forward::desc desc =
      with_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), s.user_bias(), any(s.dst), s.strides,
                                                  s.padding, s.padding)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  any(s.src), any(s.weights), any(s.dst), s.strides, s.padding, s.padding);
  return {desc, user_scratchpad(relu), engine};
}

// Which of the three kernels a plan runs.
enum class ConvKernel : std::int64_t { forward, input_gradient, weight_gradient };

// The plan's key: the kernel, the geometry, the samples, and whether it has a bias and ReLU.
PlanKey key_of(ConvKernel kernel, const ConvGeometry& g, std::int64_t n, bool with_bias, bool relu) {
  return {static_cast<std::int64_t>(kernel), g.in_channels, g.height, g.width, g.out_channels, g.kernel, g.stride,
          g.padding, n, (with_bias ? 2 : 0) + (relu ? 1 : 0)};
}

// The operands' buffers, in the order the plan's operands were added (oneDNN takes inputs as void*).
std::array<float*, Plan::kMaxOperands> buffers(const float* a, const float* b, const float* c = nullptr,
                                               const float* d = nullptr) {
  return {const_cast<float*>(a), const_cast<float*>(b), const_cast<float*>(c), const_cast<float*>(d)};
}

// Operands: src, weights, [bias], dst.
std::unique_ptr<Plan> forward_plan(const ConvShapes& s, bool with_bias, bool relu) {
  auto plan = std::make_unique<Plan>();
  const auto pd = forward_pd(plan->engine(), s, with_bias, relu);
  plan->add_input(DNNL_ARG_SRC, s.user_src(), pd.src_desc());
  plan->add_input(DNNL_ARG_WEIGHTS, s.user_weights(), pd.weights_desc());
  if (with_bias) plan->add_input(DNNL_ARG_BIAS, s.user_bias(), s.user_bias());
  plan->add_output(DNNL_ARG_DST, s.user_dst(), pd.dst_desc());
  plan->set_primitive(dnnl::convolution_forward(pd), pd.scratchpad_desc());
  return plan;
}

// Operands: diff_dst, weights, diff_src.
std::unique_ptr<Plan> input_gradient_plan(const ConvShapes& s) {
  auto plan = std::make_unique<Plan>();
  const auto hint = forward_pd(plan->engine(), s, false);
  const dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, any(s.src), any(s.weights), any(s.dst),
                                            s.strides, s.padding, s.padding),
      user_scratchpad(), plan->engine(), hint);
  plan->add_input(DNNL_ARG_DIFF_DST, s.user_dst(), pd.diff_dst_desc());
  plan->add_input(DNNL_ARG_WEIGHTS, s.user_weights(), pd.weights_desc());
  plan->add_output(DNNL_ARG_DIFF_SRC, s.user_src(), pd.diff_src_desc());
  plan->set_primitive(dnnl::convolution_backward_data(pd), pd.scratchpad_desc());
  return plan;
}

// Operands: src, diff_dst, diff_weights, [diff_bias].
std::unique_ptr<Plan> weight_gradient_plan(const ConvShapes& s, bool with_bias) {
  auto plan = std::make_unique<Plan>();
  const auto hint = forward_pd(plan->engine(), s, with_bias);
  const auto desc =
      with_bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(s.src),
                                                           any(s.weights), s.user_bias(), any(s.dst), s.strides,
                                                           s.padding, s.padding)
                : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(s.src),
                                                           any(s.weights), any(s.dst), s.strides, s.padding, s.padding);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), plan->engine(), hint);
  plan->add_input(DNNL_ARG_SRC, s.user_src(), pd.src_desc());
  plan->add_input(DNNL_ARG_DIFF_DST, s.user_dst(), pd.diff_dst_desc());
  plan->add_output(DNNL_ARG_DIFF_WEIGHTS, s.user_weights(), pd.diff_weights_desc());
  if (with_bias) plan->add_output(DNNL_ARG_DIFF_BIAS, s.user_bias(), s.user_bias());
  plan->set_primitive(dnnl::convolution_backward_weights(pd), pd.scratchpad_desc());
  return plan;
}

}  // namespace

Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b,
                      const Matrix& x, bool relu, PlanCache* cache, const Room& room) {
  const Call call("conv2d forward");
  Matrix out = room.take(g.out_channels * g.out_height() * g.out_width(), x.cols());  // [Cout*Ho*Wo x n]
  try {
    const bool with_bias = b.size() > 0;
    PlanLease plan(cache, key_of(ConvKernel::forward, g, x.cols(), with_bias, relu),
                   [&] { return forward_plan(ConvShapes(g, x.cols()), with_bias, relu); });
    plan.run(with_bias ? buffers(x.data(), w.data(), b.data(), out.data()) : buffers(x.data(), w.data(), out.data()));
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
  return out;
}

Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz,
                             PlanCache* cache, const Room& room) {
  const Call call("conv2d input gradient");
  if (dz.outerStride() != dz.rows()) throw Error("internal: conv2d input gradient of columns that are not contiguous");
  Matrix dx = room.take(g.in_channels * g.height * g.width, dz.cols());  // [C*H*W x n]
  try {
    PlanLease plan(cache, key_of(ConvKernel::input_gradient, g, dz.cols(), false, false),
                   [&] { return input_gradient_plan(ConvShapes(g, dz.cols())); });
    plan.run(buffers(dz.data(), w.data(), dx.data()));
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
  return dx;
}

void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz, Eigen::Ref<Matrix> dw,
                            Vector* db, WeightGradient mode, PlanCache* cache) {
  const Call call("conv2d weight gradient");
  if (dw.outerStride() != dw.rows()) throw Error("internal: conv2d weight gradient into a strided matrix");
  try {
    const bool with_bias = db != nullptr;
    if (with_bias) db->resize(g.out_channels);
    PlanLease plan(cache, key_of(ConvKernel::weight_gradient, g, x.cols(), with_bias, false),
                   [&] { return weight_gradient_plan(ConvShapes(g, x.cols()), with_bias); });
    const bool add = mode == WeightGradient::add;
    // [Cout x C*k*k]: dW itself, or (adding) room in the workspace, added to dW after
    float* const written = add ? plan.room(static_cast<std::size_t>(dw.size()) * sizeof(float)) : dw.data();
    plan.run(with_bias ? buffers(x.data(), dz.data(), written, db->data()) : buffers(x.data(), dz.data(), written));
    if (add) dw += Eigen::Map<const Matrix>(written, dw.rows(), dw.cols());
  } catch (const dnnl::error& e) {
    throw call.error(e);
  }
}

}  // namespace pipetwin::cpu::onednn
