// A layer's forward and backward, composed once from a backend's kernels: conv2d (+ bias, batch
// norm, residual add, ReLU, pooling) and dense (+ bias, ReLU or softmax cross-entropy). The
// backward is split as the task kinds split it: the activation gradient (BA, for a slice of the
// samples, so that LayerPipe's BA parts each do their share) and the weight gradient (BW); a
// fused B is BA over all samples plus BW. Each step of the forward has its backward beside it in
// the reverse order below.
//
// The kernel interface K (pipetwin/exec/cpu/layer_kernels.hpp, exec/cuda/layer_kernels.hpp):
//   types    Tensor [features x n] (a value or a handle; results are always new tensors, so
//            tensors a task received are never written), Params (a layer's flat parameters,
//            W | bias | gamma | beta), Index (max-pooling winners), BatchNormStash, Labels
//   shapes   rows(t), cols(t), empty(t), columns(t, begin, count) (columns [begin, begin + count),
//            a view the input-gradient kernels and add read in place, or a tensor), optionally
//            copy_columns(t, begin, count) (the same as a tensor of its own, where a tensor
//            assigned from columns() would not come from the kernels' memory)
//   forward  dense(p, rows, cols, bias_at, x), conv2d(g, p, bias_at, x),
//            batch_norm(channels, positions, p, gamma_at, beta_at, z, stash&) -> y,
//            add_shortcut(g, x, z&) (z += S(x)), relu(z&), pool(g, z, argmax*),
//            optionally batch_norm_add_relu(channels, positions, p, gamma_at, beta_at, z, stash&,
//            shortcut geometry, x* (null: no residual), relu) -> y, the three in one pass, and
//            conv2d_relu(g, p, bias_at, x) (conv2d then ReLU),
//            softmax_cross_entropy(z, labels*, loss_scale, dlogits*) -> summed loss, zeros(rows, n)
//   backward pool_backward(g, dy, argmax), relu_backward(out, dy), shortcut_backward(g, dy),
//            batch_norm_backward(channels, positions, p, gamma_at, stash, dy, grad*, gamma_at, beta_at)
//            (dgamma, dbeta into grad when it is not null), optionally with it
//            batch_norm_backward_through_relu(..., stash, relu_output, dy, grad*, gamma_at, beta_at,
//            masked*) (dy masked by ReLU's output first; the masked dy into *masked when not null),
//            and relu_backward_in_place(out, dy&) (dy masked over its own buffer),
//            dense_backward_input(p, rows, cols, dz),
//            conv2d_backward_input(g, p, dz), add(x&, y) (x += y), param_buffer(count) (room for a
//            parameter gradient; every part of it gets written),
//            dense_backward_weight(x, dz, rows, cols, bias_at, grad&),
//            conv2d_backward_weight(g, x, dz, bias_at, grad&) (dW and db into grad)
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "pipetwin/exec/layers/layer_spec.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::exec {

// What a layer sends on: its output, and the block input when the next layer adds a residual.
template <typename Tensor>
struct ActivationOf {
  Tensor main;      // [out_features x n]
  Tensor shortcut;  // [block input features x n], or empty
};

// What a layer's BA sends back: the gradient at its input (the previous layer's output), and at
// the block input when it adds a residual; columns [first_sample, first_sample + cols) of the
// microbatch.
template <typename Tensor>
struct GradientOf {
  Tensor main;
  Tensor shortcut;
  std::int64_t first_sample = 0;
};

// Where a block's input goes between the layer that takes it (and feeds the residual) and the
// next layer (which adds it), when both run in one task: `lend_input` (on the first) sends the
// input on as the shortcut itself, its stash's input left empty, instead of a copy of it;
// `give_back` (on the second) sends the shortcut on after adding it, for the caller to put back
// in the first layer's stash. One buffer, no copy; the caller must do both or neither.
struct ShortcutHandoff {
  bool lend_input = false;
  bool give_back = false;
};

// Kept from a layer's forward for its backward.
template <typename K>
struct LayerStashOf {
  typename K::Tensor input;               // x [in_features x n]
  typename K::Tensor activation;          // after ReLU, before pooling [conv/dense out x n]
  typename K::BatchNormStash batch_norm;  // xhat and 1 / std per channel
  typename K::Index argmax;               // max pooling
  typename K::Tensor loss_gradient;       // loss layer: d loss / d logits [classes x n]
};

// Whether kernels K have the fused epilogues (batch_norm_add_relu, batch_norm_backward_through_relu,
// conv2d_relu, relu_backward_in_place): the CPU kernels do; others run the convolution, batch
// norm, the residual add and ReLU one after the other, and ReLU's backward into a new tensor.
template <typename K, typename = void>
struct FusesEpilogues : std::false_type {};
template <typename K>
struct FusesEpilogues<K, std::void_t<decltype(&K::batch_norm_add_relu), decltype(&K::batch_norm_backward_through_relu),
                                     decltype(&K::conv2d_relu), decltype(&K::relu_backward_in_place)>>
    : std::true_type {};

// Whether kernels K copy columns into a tensor themselves (copy_columns): the CPU kernels do, into
// their pool's buffer.
template <typename K, typename = void>
struct CopiesColumns : std::false_type {};
template <typename K>
struct CopiesColumns<K, std::void_t<decltype(&K::copy_columns)>> : std::true_type {};

template <typename K>
class LayerComposition {
  static constexpr bool kFusesEpilogues = FusesEpilogues<K>::value;

 public:
  using Tensor = typename K::Tensor;
  using Params = typename K::Params;
  using Activation = ActivationOf<Tensor>;
  using Gradient = GradientOf<Tensor>;
  using LayerStash = LayerStashOf<K>;

  explicit LayerComposition(LayerSpec spec) : s_(std::move(spec)) {}
  const LayerSpec& spec() const { return s_; }
  // A tensor-parallel dense layer (Megatron's column- or row-parallel linear): its shards run on
  // the kernels' ranks.
  bool split() const { return s_.layer().tensor_split != TensorSplit::whole && s_.layer().tensor_parallel > 1; }
  std::int64_t ranks() const { return s_.layer().tensor_parallel; }

  // The loss layer also takes the labels, adds the summed loss to *loss and stashes the gradient
  // of (loss / loss_scale). `in` is the layer's: its buffer becomes the stash's input (a caller
  // done with its activation moves it in; one that is not passes a copy), or with
  // handoff.lend_input the shortcut it sends on (ShortcutHandoff).
  Activation forward(K& k, const Params& p, Activation in, LayerStash& stash, const typename K::Labels* labels,
                     double loss_scale, double* loss, ShortcutHandoff handoff = {}) const {
    if ((handoff.lend_input && !s_.feeds_residual()) || (handoff.give_back && (!s_.adds_residual() || s_.feeds_residual()))) {
      throw Error("internal: layer '" + s_.layer().name + "' asked to hand a block input on that it does not");
    }
    const ParamLayout& at = s_.parameter_layout();
    Activation out;
    if (s_.feeds_residual() && !handoff.lend_input) out.shortcut = in.main;
    // The input, once read: the stash's, or the shortcut sent on.
    const auto keep_input = [&] {
      if (handoff.lend_input) {
        out.shortcut = std::move(in.main);
      } else {
        stash.input = std::move(in.main);
      }
    };
    if (!s_.is_conv()) {
      Tensor z = split() ? k.dense_split(p, s_.weight_rows(), s_.weight_cols(), at.bias, in.main, ranks(), s_.layer().tensor_split)
                         : k.dense(p, s_.weight_rows(), s_.weight_cols(), at.bias, in.main);
      keep_input();
      if (s_.is_loss()) {
        if (labels == nullptr) throw Error("internal: loss layer without labels");
        *loss += k.softmax_cross_entropy(z, labels, loss_scale, &stash.loss_gradient);
        out.main = k.zeros(1, K::cols(z));  // what it sends on: nothing but the loss
        return out;
      }
      if (s_.has_relu()) k.relu(z);
      stash.activation = z;
      out.main = std::move(z);  // z's buffer goes on: one copy kept, not two
      return out;
    }
    // ReLU straight after the convolution (no batch norm, no residual) goes into the convolution.
    const bool relu_in_conv = kFusesEpilogues && s_.has_relu() && !s_.has_batch_norm() && !s_.adds_residual();
    Tensor z = convolve(k, p, in.main, relu_in_conv);
    keep_input();
    if (s_.adds_residual() && K::rows(in.shortcut) != s_.block_input_features()) {
      throw Error("internal: residual layer '" + s_.layer().name + "' without its block input");
    }
    bool finished = false;  // batch norm, the residual and ReLU done in one pass
    if constexpr (kFusesEpilogues) {
      if (s_.has_batch_norm()) {
        z = k.batch_norm_add_relu(s_.channels(), s_.positions(), p, at.gamma, at.beta, std::move(z), stash.batch_norm,
                                  s_.shortcut_geometry(), s_.adds_residual() ? &in.shortcut : nullptr, s_.has_relu());
        finished = true;
      }
    }
    if (!finished) {
      if (s_.has_batch_norm()) z = k.batch_norm(s_.channels(), s_.positions(), p, at.gamma, at.beta, std::move(z), stash.batch_norm);
      if (s_.adds_residual()) k.add_shortcut(s_.shortcut_geometry(), in.shortcut, z);
      if (s_.has_relu() && !relu_in_conv) k.relu(z);
    }
    if (handoff.give_back) out.shortcut = std::move(in.shortcut);  // added: back to its lender
    if (s_.is_pooled()) {
      out.main = k.pool(s_.pool_geometry(), z, &stash.argmax);
      stash.activation = std::move(z);  // pooling has read it: its buffer is the stash's, no copy
    } else {
      stash.activation = z;
      out.main = std::move(z);  // z's buffer goes on: one copy kept, not two
    }
    return out;
  }

  // The backward in three steps, so that a fused B (BA and BW of one layer in one task) goes back
  // through pooling, ReLU, the residual and batch norm once, and each step can be timed:
  //   to_linear: from the gradient at the output (`out`, assembled over all samples; null for
  //     the loss layer) back to the conv / dense output, before bias and batch norm; the
  //     residual's shortcut gradient when `want_shortcut`, dgamma and dbeta into *grad when it
  //     is not null;
  //   input_gradient: the gradient at the input for samples [begin, end) (BA);
  //   weight_gradient: dW and db into grad (BW), grad from gradient_buffer() (the CUDA kernels
  //     write it; the CPU ones add into it or write it, as their grad_mode says).
  struct Linear {
    Tensor dz;              // [conv / dense out x n]
    Tensor shortcut_grad;   // at the block input [block input features x n], or empty
  };
  Linear to_linear(K& k, const Params& p, const LayerStash& stash, const Gradient* out, bool want_shortcut,
                   Params* grad) const {
    Linear linear;
    linear.dz = output_to_linear(k, p, stash, out, want_shortcut ? &linear.shortcut_grad : nullptr, grad);
    return linear;
  }
  Gradient input_gradient(K& k, const Params& p, const Linear& linear, const Gradient* out, std::int64_t begin,
                          std::int64_t end) const {
    const auto slice = K::columns(linear.dz, begin, end - begin);  // read in place
    Gradient in;
    in.first_sample = begin;
    in.main = s_.is_conv() ? k.conv2d_backward_input(s_.conv_geometry(), p, slice)
                           : split() ? k.dense_split_backward_input(p, s_.weight_rows(), s_.weight_cols(), slice, ranks(),
                                                                    s_.layer().tensor_split)
                                     : k.dense_backward_input(p, s_.weight_rows(), s_.weight_cols(), slice);
    // This layer's input is a block input: add the gradient the next layer's residual sent back.
    if (s_.feeds_residual() && out != nullptr && !K::empty(out->shortcut)) {
      k.add(in.main, K::columns(out->shortcut, begin, end - begin));
    }
    if (!K::empty(linear.shortcut_grad)) {
      if constexpr (CopiesColumns<K>::value) {
        in.shortcut = k.copy_columns(linear.shortcut_grad, begin, end - begin);
      } else {
        in.shortcut = K::columns(linear.shortcut_grad, begin, end - begin);
      }
    }
    return in;
  }
  Params gradient_buffer(K& k) const { return k.param_buffer(s_.parameter_count()); }
  void weight_gradient(K& k, const LayerStash& stash, const Linear& linear, Params& grad) const {
    const ParamLayout& at = s_.parameter_layout();
    if (s_.is_conv()) {
      k.conv2d_backward_weight(s_.conv_geometry(), stash.input, linear.dz, at.bias, grad);
    } else {
      if (split()) {
        k.dense_split_backward_weight(stash.input, linear.dz, s_.weight_rows(), s_.weight_cols(), at.bias, grad, ranks(),
                                      s_.layer().tensor_split);
      } else {
        k.dense_backward_weight(stash.input, linear.dz, s_.weight_rows(), s_.weight_cols(), at.bias, grad);
      }
    }
  }

  // The two halves on their own, as a split BA or BW runs them (each goes back to the linear
  // output itself).
  Gradient backward_input(K& k, const Params& p, const LayerStash& stash, const Gradient* out, std::int64_t begin,
                          std::int64_t end) const {
    return input_gradient(k, p, to_linear(k, p, stash, out, true, nullptr), out, begin, end);
  }
  Params backward_weight(K& k, const Params& p, const LayerStash& stash, const Gradient* out) const {
    Params grad = gradient_buffer(k);
    weight_gradient(k, stash, to_linear(k, p, stash, out, false, &grad), grad);
    return grad;
  }

 private:
  // From the gradient at the output back to the conv / dense output (before bias add and batch
  // norm): pooling, ReLU, the residual's shortcut (its gradient into *shortcut_grad), batch norm
  // (dgamma and dbeta into *grad).
  Tensor output_to_linear(K& k, const Params& p, const LayerStash& stash, const Gradient* out, Tensor* shortcut_grad,
                          Params* grad) const {
    if (s_.is_loss()) return stash.loss_gradient;
    if (out == nullptr) throw Error("internal: layer '" + s_.layer().name + "' backward without its output gradient");
    // dy: the gradient as far back as it has come, first the one received (read, not copied),
    // then each step's result, held in `made`.
    const Tensor* dy = &out->main;
    Tensor made;
    const auto went_back = [&](Tensor next) {
      made = std::move(next);
      dy = &made;
    };
    if (s_.is_pooled()) went_back(k.pool_backward(s_.pool_geometry(), *dy, stash.argmax));
    if constexpr (kFusesEpilogues) {
      // ReLU's mask and batch norm's backward in one pass, where the shortcut's gradient (the
      // masked gradient itself, for an identity shortcut) comes from it too.
      const bool wants_shortcut = s_.adds_residual() && shortcut_grad != nullptr;
      if (s_.has_relu() && s_.has_batch_norm() && (!wants_shortcut || s_.shortcut_geometry().identity())) {
        const ParamLayout& at = s_.parameter_layout();
        return k.batch_norm_backward_through_relu(s_.channels(), s_.positions(), p, at.gamma, stash.batch_norm,
                                                  stash.activation, *dy, grad, at.gamma, at.beta,
                                                  wants_shortcut ? shortcut_grad : nullptr);
      }
    }
    if (s_.has_relu()) {
      bool masked = false;
      if constexpr (kFusesEpilogues) {
        if (dy == &made) {  // a gradient this layer made (pooling's): masked over its own buffer
          k.relu_backward_in_place(stash.activation, made);
          masked = true;
        }
      }
      if (!masked) went_back(k.relu_backward(stash.activation, *dy));
    }
    if (s_.adds_residual() && shortcut_grad != nullptr) *shortcut_grad = k.shortcut_backward(s_.shortcut_geometry(), *dy);
    if (s_.has_batch_norm()) {
      const ParamLayout& at = s_.parameter_layout();
      went_back(k.batch_norm_backward(s_.channels(), s_.positions(), p, at.gamma, stash.batch_norm, *dy, grad, at.gamma,
                                      at.beta));
    }
    return dy == &made ? std::move(made) : *dy;  // a copy only when no step applies
  }

  // The layer's convolution, with ReLU in it when `relu` (only where the kernels fuse it).
  Tensor convolve(K& k, const Params& p, const Tensor& x, bool relu) const {
    const ParamLayout& at = s_.parameter_layout();
    if constexpr (kFusesEpilogues) {
      if (relu) return k.conv2d_relu(s_.conv_geometry(), p, at.bias, x);
    }
    return k.conv2d(s_.conv_geometry(), p, at.bias, x);
  }

  LayerSpec s_;
};

}  // namespace pipetwin::exec
