// Every backward of the CPU executor's layer kernels against central finite differences of its
// forward, in double-checked float: the scalar probed is sum(forward(x) .* r) for a fixed random r.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/cpu/onednn_kernels.hpp"
#include "random_matrix.hpp"
#include "pipetwin/exec/cpu/layer_kernels.hpp"
#include "pipetwin/exec/cpu/layer_op.hpp"
#include "pipetwin/exec/layers/layer_composition.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/models/layer.hpp"

namespace pipetwin::cpu {
namespace {

using test::random_matrix;

// Numerical gradient of f at x (f returns a double), central differences.
Matrix numerical_gradient(const std::function<double(const Matrix&)>& f, Matrix x, float step = 1e-2f) {
  Matrix grad(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const float saved = x.data()[i];
    x.data()[i] = saved + step;
    const double plus = f(x);
    x.data()[i] = saved - step;
    const double minus = f(x);
    x.data()[i] = saved;
    grad.data()[i] = static_cast<float>((plus - minus) / (2.0 * step));
  }
  return grad;
}

double relative_error(const Matrix& analytic, const Matrix& numeric) {
  return static_cast<double>((analytic - numeric).norm()) / std::max(1e-6, static_cast<double>(numeric.norm()));
}

double probe(const Matrix& y, const Matrix& r) { return static_cast<double>((y.cast<double>().array() * r.cast<double>().array()).sum()); }

constexpr double kTolerance = 2e-3;

// A 3x3 convolution of 4 output channels, padding 1.
Conv2dSpec conv3x3(std::int64_t stride, bool bias, bool batch_norm) {
  Conv2dSpec spec;
  spec.out_channels = 4;
  spec.kernel = 3;
  spec.stride = stride;
  spec.padding = 1;
  spec.bias = bias;
  spec.batch_norm = batch_norm;
  return spec;
}

}  // namespace

TEST_CASE("dense backward matches finite differences") {
  const Matrix w = random_matrix(5, 7, 1), x = random_matrix(7, 3, 2), r = random_matrix(5, 3, 3);
  const Vector b = random_matrix(5, 1, 4);
  const Matrix dx = dense_backward_input(w, r);
  Matrix dw(5, 7);
  Vector db;
  dense_backward_weight(x, r, dw, &db);
  CHECK(relative_error(dx, numerical_gradient([&](const Matrix& v) { return probe(dense_forward(w, b, v), r); }, x)) < kTolerance);
  CHECK(relative_error(dw, numerical_gradient([&](const Matrix& v) { return probe(dense_forward(v, b, x), r); }, w)) < kTolerance);
  CHECK(relative_error(db, numerical_gradient([&](const Matrix& v) { return probe(dense_forward(w, Vector(v), x), r); }, b)) < kTolerance);
}

TEST_CASE("conv2d backward matches finite differences (stride 2, padding 1)") {
  const ConvGeometry g{2, 6, 5, 3, 3, 2, 1};
  const Matrix w = random_matrix(g.out_channels, g.patch(), 5), x = random_matrix(2 * 6 * 5, 2, 6);
  const Vector b = random_matrix(3, 1, 7);
  const Matrix r = random_matrix(g.out_channels * g.out_height() * g.out_width(), 2, 8);
  const Matrix dx = conv2d_backward_input(g, w, r);
  Matrix dw(g.out_channels, g.patch());
  Vector db;
  conv2d_backward_weight(g, x, r, dw, &db);
  CHECK(relative_error(dx, numerical_gradient([&](const Matrix& v) { return probe(conv2d_forward(g, w, b, v), r); }, x)) < kTolerance);
  CHECK(relative_error(dw, numerical_gradient([&](const Matrix& v) { return probe(conv2d_forward(g, v, b, x), r); }, w)) < kTolerance);
  CHECK(relative_error(db, numerical_gradient([&](const Matrix& v) { return probe(conv2d_forward(g, w, Vector(v), x), r); }, b)) < kTolerance);
}

TEST_CASE("conv2d forward equals a direct convolution") {
  const ConvGeometry g{2, 4, 4, 2, 3, 1, 1};
  const Matrix w = random_matrix(2, g.patch(), 9), x = random_matrix(32, 1, 10);
  const Matrix y = conv2d_forward(g, w, Vector(), x);
  for (int o = 0; o < 2; ++o) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        double sum = 0;
        for (int c = 0; c < 2; ++c)
          for (int a = 0; a < 3; ++a)
            for (int bb = 0; bb < 3; ++bb) {
              const int yy = i - 1 + a, xx = j - 1 + bb;
              if (yy >= 0 && yy < 4 && xx >= 0 && xx < 4) sum += w(o, (c * 3 + a) * 3 + bb) * x((c * 4 + yy) * 4 + xx, 0);
            }
        CHECK(y((o * 4 + i) * 4 + j, 0) == doctest::Approx(sum).epsilon(1e-5));
      }
    }
  }
}

namespace {

// A direct convolution and its adjoints, loop by loop: the reference for both implementations
// (Eigen's im2col + GEMM, oneDNN's), on shapes where the padding, the stride and the image's edge
// meet.
struct DirectConv {
  Matrix y, y_with_bias, dx, dw;  // forward, forward + bias, input gradient, weight gradient
  Vector db;
  DirectConv(const ConvGeometry& g, const Matrix& w, const Vector& b, const Matrix& x, const Matrix& dz) {
    const std::int64_t oh = g.out_height(), ow = g.out_width(), n = x.cols();
    y = Matrix::Zero(g.out_channels * oh * ow, n);
    dx = Matrix::Zero(x.rows(), n);
    dw = Matrix::Zero(w.rows(), w.cols());
    db = Vector::Zero(g.out_channels);
    for (std::int64_t s = 0; s < n; ++s)
      for (std::int64_t o = 0; o < g.out_channels; ++o)
        for (std::int64_t i = 0; i < oh; ++i)
          for (std::int64_t j = 0; j < ow; ++j) {
            const std::int64_t out = (o * oh + i) * ow + j;
            db[o] += dz(out, s);
            for (std::int64_t c = 0; c < g.in_channels; ++c)
              for (std::int64_t a = 0; a < g.kernel; ++a)
                for (std::int64_t bb = 0; bb < g.kernel; ++bb) {
                  const std::int64_t yy = i * g.stride - g.padding + a, xx = j * g.stride - g.padding + bb;
                  if (yy < 0 || yy >= g.height || xx < 0 || xx >= g.width) continue;
                  const std::int64_t in = (c * g.height + yy) * g.width + xx, k = (c * g.kernel + a) * g.kernel + bb;
                  y(out, s) += w(o, k) * x(in, s);
                  dx(in, s) += w(o, k) * dz(out, s);
                  dw(o, k) += x(in, s) * dz(out, s);
                }
          }
    y_with_bias = y;
    for (std::int64_t o = 0; o < g.out_channels; ++o) y_with_bias.middleRows(o * oh * ow, oh * ow).array() += b[o];
  }
};

const std::vector<ConvGeometry> kConvShapes = {
    {2, 5, 7, 3, 3, 1, 1}, {1, 6, 5, 2, 3, 2, 1}, {3, 7, 7, 2, 5, 1, 2}, {2, 5, 6, 2, 1, 2, 0},
    {1, 4, 4, 1, 3, 3, 2}, {2, 8, 3, 2, 3, 2, 0}, {1, 3, 3, 2, 5, 1, 1}, {16, 8, 8, 32, 3, 2, 1}};

// Every convolution of one implementation against DirectConv, on every shape.
template <typename Forward, typename InputGradient, typename WeightGradient>
void check_conv_against_direct_loops(Forward forward, InputGradient input_gradient, WeightGradient weight_gradient) {
  for (const auto& g : kConvShapes) {
    CAPTURE(g.in_channels);
    CAPTURE(g.height);
    CAPTURE(g.width);
    CAPTURE(g.kernel);
    CAPTURE(g.stride);
    CAPTURE(g.padding);
    const std::int64_t n = 3, outputs = g.out_channels * g.out_height() * g.out_width();
    const Matrix w = random_matrix(g.out_channels, g.patch(), 21);
    const Matrix x = random_matrix(g.in_channels * g.height * g.width, n, 22), dz = random_matrix(outputs, n, 23);
    const Vector b = random_matrix(g.out_channels, 1, 24);
    const DirectConv expected(g, w, b, x, dz);
    CHECK(relative_error(forward(g, w, b, x), expected.y_with_bias) < 1e-5);
    CHECK(relative_error(forward(g, w, Vector(), x), expected.y) < 1e-5);
    CHECK(relative_error(input_gradient(g, w, dz), expected.dx) < 1e-5);
    Matrix dw(g.out_channels, g.patch());
    Vector db;
    weight_gradient(g, x, dz, dw, &db);
    CHECK(relative_error(dw, expected.dw) < 1e-5);
    CHECK(relative_error(db, expected.db) < 1e-5);
  }
}

}  // namespace

TEST_CASE("conv2d (Eigen) forward and gradients equal direct loops for strides, paddings and kernels") {
  check_conv_against_direct_loops(
      [](auto&&... a) { return conv2d_forward(a...); }, [](auto&&... a) { return conv2d_backward_input(a...); },
      [](auto&&... a) { conv2d_backward_weight(a...); });
}

TEST_CASE("conv2d (oneDNN) forward and gradients equal direct loops for strides, paddings and kernels") {
  if (!onednn::available()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  check_conv_against_direct_loops(
      [](auto&&... a) { return onednn::conv2d_forward(a...); },
      [](auto&&... a) { return onednn::conv2d_backward_input(a...); },
      [](auto&&... a) { onednn::conv2d_backward_weight(a...); });
}

TEST_CASE("dense (oneDNN) forward and gradients equal the Eigen products") {
  if (!onednn::available()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  for (const auto& [out, in, n] : std::vector<std::array<Eigen::Index, 3>>{{5, 7, 3}, {10, 84, 32}, {1, 1, 1}, {120, 400, 5}}) {
    const Matrix w = random_matrix(out, in, 31), x = random_matrix(in, n, 32), dy = random_matrix(out, n, 33);
    const Vector b = random_matrix(out, 1, 34);
    const Eigen::MatrixXd expected = (w.cast<double>() * x.cast<double>()).colwise() + b.cast<double>();
    CHECK(relative_error(onednn::dense_forward(w, b, x), expected.cast<float>()) < 1e-5);
    CHECK(relative_error(onednn::dense_forward(w, Vector(), x), (w.cast<double>() * x.cast<double>()).cast<float>()) < 1e-5);
    CHECK(relative_error(onednn::dense_backward_input(w, dy), (w.cast<double>().transpose() * dy.cast<double>()).cast<float>()) < 1e-5);
    Matrix dw(out, in);
    Vector db;
    onednn::dense_backward_weight(x, dy, dw, &db);
    CHECK(relative_error(dw, (dy.cast<double>() * x.cast<double>().transpose()).cast<float>()) < 1e-5);
    CHECK(relative_error(db, dy.rowwise().sum()) < 1e-5);
  }
}

TEST_CASE("weight gradients added into a sum: what it held plus the gradient (Eigen and oneDNN dense, Eigen conv2d)") {
  // A gradient sum over microbatches: the kernels add dW into it (db is written either way). The
  // expected sum is taken in double from the held values and the products.
  const Matrix x = random_matrix(84, 16, 41), dy = random_matrix(10, 16, 42), held = random_matrix(10, 84, 43);
  const Eigen::MatrixXd expected = held.cast<double>() + dy.cast<double>() * x.cast<double>().transpose();
  const auto check_dense = [&](const auto& kernel) {
    Matrix dw = held;
    Vector db;
    kernel(x, dy, dw, &db, WeightGradient::add);
    CHECK(relative_error(dw, expected.cast<float>()) < 1e-5);
    CHECK(relative_error(db, dy.rowwise().sum()) < 1e-5);
  };
  check_dense([](auto&&... a) { dense_backward_weight(a...); });
  if (onednn::available()) check_dense([](auto&&... a) { onednn::dense_backward_weight(a...); });
  const ConvGeometry g{2, 6, 5, 3, 3, 2, 1};
  const Matrix cx = random_matrix(2 * 6 * 5, 3, 44), dz = random_matrix(g.out_channels * g.out_height() * g.out_width(), 3, 45);
  const Matrix conv_held = random_matrix(g.out_channels, g.patch(), 46);
  Matrix written(g.out_channels, g.patch()), added = conv_held;
  Vector db_written, db_added;
  conv2d_backward_weight(g, cx, dz, written, &db_written);
  conv2d_backward_weight(g, cx, dz, added, &db_added, WeightGradient::add);
  CHECK(relative_error(added, (conv_held.cast<double>() + written.cast<double>()).cast<float>()) < 1e-5);
  CHECK(relative_error(db_added, db_written) < 1e-6);
}

TEST_CASE("a layer's weight gradient written into room that held NaN equals it added into zeros, and adds on top") {
  // The first backward of a gradient sum writes every part of its layer's gradient (dW, db,
  // dgamma, dbeta) into uninitialised room, the later ones add: room filled with NaN shows a part
  // left unwritten, and adding the same gradient again must double it.
  const Conv2dSpec with_norm = conv3x3(1, false, true), with_bias = conv3x3(1, true, false);
  DenseSpec dense;
  dense.out_features = 6;
  const Layer dense_layer_whole = dense_layer("fc", {2, 6, 6}, dense, 4);
  const std::vector<Layer> layers{conv2d_layer("conv_bn", {2, 6, 6}, with_norm, 4), conv2d_layer("conv_bias", {2, 6, 6}, with_bias, 4),
                                  dense_layer_whole, tensor_parallel_layer(dense_layer_whole, 2, TensorSplit::columns),
                                  tensor_parallel_layer(dense_layer_whole, 2, TensorSplit::rows)};
  const Matrix x = random_matrix(72, 3, 50);
  for (std::size_t k = 0; k < layers.size(); ++k) {
    CAPTURE(k);
    const auto ops = make_layer_ops({layers[k]});
    const LayerOp& op = ops[0];
    const Vector p = op.initial_parameters(51);
    LayerStash stash;
    const Activation y = op.forward(p, Activation{x, Matrix()}, stash, nullptr, 1, nullptr);
    const Gradient out{random_matrix(y.main.rows(), 3, 52), Matrix(), 0};
    const auto into = [&](Vector& grad, WeightGradient mode) {
      op.weight_gradient(stash, op.to_linear(p, stash, &out, false, &grad, mode), grad, mode);
    };
    Vector written = op.gradient_buffer(WeightGradient::write);
    REQUIRE(written.size() == op.parameter_count());
    written.setConstant(std::numeric_limits<float>::quiet_NaN());
    into(written, WeightGradient::write);
    Vector added = op.gradient_buffer(WeightGradient::add);
    CHECK(added.isZero(0));
    into(added, WeightGradient::add);
    CHECK(written.allFinite());
    CHECK(relative_error(written, added) < 1e-6);
    into(written, WeightGradient::add);
    CHECK(relative_error(written, Vector(2 * added)) < 1e-6);
  }
}

TEST_CASE("batch norm backward matches finite differences") {
  const std::int64_t channels = 3;
  const Matrix z = random_matrix(channels * 4, 5, 11), r = random_matrix(channels * 4, 5, 12);
  const Vector gamma = random_matrix(channels, 1, 13), beta = random_matrix(channels, 1, 14);
  BatchNormStash stash;
  batch_norm_forward(channels, gamma, beta, z, stash);
  Vector dgamma, dbeta;
  const Matrix dz = batch_norm_backward(channels, gamma, stash, r, &dgamma, &dbeta);
  auto f = [&](const Matrix& zz, const Vector& gg, const Vector& bb) {
    BatchNormStash s;
    return probe(batch_norm_forward(channels, gg, bb, zz, s), r);
  };
  CHECK(relative_error(dz, numerical_gradient([&](const Matrix& v) { return f(v, gamma, beta); }, z, 1e-2f)) < 5e-3);
  CHECK(relative_error(dgamma, numerical_gradient([&](const Matrix& v) { return f(z, Vector(v), beta); }, gamma)) < kTolerance);
  CHECK(relative_error(dbeta, numerical_gradient([&](const Matrix& v) { return f(z, gamma, Vector(v)); }, beta)) < kTolerance);
}

// A float sum in the order batch norm documents (16 partial sums, lane k taking elements k, k + 16,
// ...; then lanes k and k + 8 added, k and k + 4, k and k + 2, k and k + 1), written out plainly:
// the order that gives every vector ISA's clone of the kernel the same bits.
float sum_in_lane_order(const std::vector<float>& values) {
  std::array<float, 16> lanes{};
  for (std::size_t i = 0; i < values.size(); ++i) lanes[i % 16] += values[i];
  for (std::size_t width = 8; width > 0; width /= 2) {
    for (std::size_t k = 0; k < width; ++k) lanes[k] += lanes[k + width];
  }
  return lanes[0];
}

TEST_CASE("batch norm's sums run in one fixed order, the same bits whatever the vector width") {
  // One channel of 37 positions (two blocks of 16 and five more) in two samples, with values of
  // mixed magnitude, so that another order of the additions rounds differently.
  const std::int64_t positions = 37;
  Matrix z = random_matrix(positions, 2, 41);
  for (Eigen::Index i = 0; i < z.size(); ++i) z.data()[i] *= (i % 3 == 0 ? 1000.0f : 0.001f);
  const Matrix dy = random_matrix(positions, 2, 42);
  const Vector gamma = Vector::Constant(1, 1.5f), beta = Vector::Constant(1, -0.25f);
  auto run_of = [](const Matrix& m, Eigen::Index s, auto value) {
    std::vector<float> run;
    for (Eigen::Index i = 0; i < m.rows(); ++i) run.push_back(value(i, s));
    return sum_in_lane_order(run);
  };
  const double count = 2.0 * positions;
  double sum = 0;
  for (Eigen::Index s = 0; s < 2; ++s) sum += run_of(z, s, [&](Eigen::Index i, Eigen::Index c) { return z(i, c); });
  const float mean = static_cast<float>(sum / count);
  double squares = 0;
  for (Eigen::Index s = 0; s < 2; ++s) {
    squares += run_of(z, s, [&](Eigen::Index i, Eigen::Index c) {
      const float d = z(i, c) - mean;
      return d * d;
    });
  }
  const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / count + kBatchNormEpsilon));
  BatchNormStash stash;
  const Matrix y = batch_norm_forward(1, gamma, beta, z, stash);
  CHECK(stash.inv_std[0] == inv_std);
  const float xhat = (z(5, 1) - mean) * inv_std;
  CHECK(stash.normalized(5, 1) == xhat);
  CHECK(y(5, 1) == xhat * 1.5f + -0.25f);

  double sum_dy = 0, sum_dy_xhat = 0;
  for (Eigen::Index s = 0; s < 2; ++s) {
    sum_dy += run_of(dy, s, [&](Eigen::Index i, Eigen::Index c) { return dy(i, c); });
    sum_dy_xhat += run_of(dy, s, [&](Eigen::Index i, Eigen::Index c) { return dy(i, c) * stash.normalized(i, c); });
  }
  Vector dgamma, dbeta;
  const Matrix dz = batch_norm_backward(1, gamma, stash, dy, &dgamma, &dbeta);
  CHECK(dbeta[0] == static_cast<float>(sum_dy));
  CHECK(dgamma[0] == static_cast<float>(sum_dy_xhat));
  const float total_dy = static_cast<float>(sum_dy), total_dy_xhat = static_cast<float>(sum_dy_xhat);
  const float n = static_cast<float>(count);
  CHECK(dz(7, 0) == (dy(7, 0) * n - total_dy - stash.normalized(7, 0) * total_dy_xhat) * (1.5f * inv_std / n));
}

TEST_CASE("batch norm over its input's buffer gives the values a new buffer gets, bit for bit") {
  const std::int64_t channels = 3;
  const Matrix z = random_matrix(channels * 16, 7, 21);
  const Vector gamma = random_matrix(channels, 1, 22), beta = random_matrix(channels, 1, 23);
  BatchNormStash apart, over;
  const Matrix y = batch_norm_forward(channels, gamma, beta, z, apart);
  Matrix in_place = z;
  const float* buffer = in_place.data();
  batch_norm_forward_in_place(channels, gamma, beta, in_place, over);
  CHECK(in_place.data() == buffer);  // no new buffer
  CHECK(in_place == y);
  CHECK(over.normalized == apart.normalized);
  CHECK(over.inv_std == apart.inv_std);
  CHECK(!(y == z));  // it did normalize
}

TEST_CASE("batch norm's fused epilogues give the separate kernels' values bit for bit") {
  const std::int64_t channels = 3;
  // Six positions per channel: runs that start off a vector's alignment in every other column.
  const Matrix z = random_matrix(channels * 6, 7, 31), residual = random_matrix(channels * 6, 7, 32);
  const Matrix dy = random_matrix(channels * 6, 7, 33);
  const Vector gamma = random_matrix(channels, 1, 34), beta = random_matrix(channels, 1, 35);
  for (const bool with_residual : {false, true}) {
    for (const bool relu : {false, true}) {
      CAPTURE(with_residual);
      CAPTURE(relu);
      BatchNormStash apart, fused;
      Matrix separate = z;
      batch_norm_forward_in_place(channels, gamma, beta, separate, apart);
      if (with_residual) separate += residual;
      if (relu) relu_forward(separate);
      Matrix one_pass = z;
      batch_norm_add_relu_in_place(channels, gamma, beta, one_pass, fused, with_residual ? &residual : nullptr, relu);
      CHECK(one_pass == separate);
      CHECK(fused.normalized == apart.normalized);
      CHECK(fused.inv_std == apart.inv_std);
      if (relu) CHECK((one_pass.array() == 0).count() > 0);  // ReLU did zero some
    }
  }
  // The backward through ReLU, against relu_backward then batch_norm_backward.
  BatchNormStash stash;
  Matrix out = z;
  batch_norm_add_relu_in_place(channels, gamma, beta, out, stash, &residual, true);
  Vector dgamma, dbeta, fused_dgamma, fused_dbeta;
  const Matrix masked_apart = relu_backward(out, dy);
  const Matrix dz = batch_norm_backward(channels, gamma, stash, masked_apart, &dgamma, &dbeta);
  Matrix masked;
  const Matrix fused_dz =
      batch_norm_backward_through_relu(channels, gamma, stash, out, dy, &fused_dgamma, &fused_dbeta, &masked);
  CHECK(fused_dz == dz);
  CHECK(fused_dgamma == dgamma);
  CHECK(fused_dbeta == dbeta);
  CHECK(masked == masked_apart);
  CHECK(batch_norm_backward_through_relu(channels, gamma, stash, out, dy, nullptr, nullptr) == dz);
  CHECK(!(masked_apart == dy));  // the mask did apply
  const Matrix wrong = residual.topRows(3);
  CHECK_THROWS_AS(batch_norm_add_relu_in_place(channels, gamma, beta, out, stash, &wrong, true), Error);
  CHECK_THROWS_AS(batch_norm_backward_through_relu(channels, gamma, stash, Matrix(out.topRows(3)), dy, nullptr, nullptr),
                  Error);
}

}  // namespace pipetwin::cpu

// The CPU kernels without batch norm's fused epilogues: the composition runs batch norm, the
// residual add and ReLU one after the other, as before the fusion.
namespace pipetwin::cpu::test_support {
struct UnfusedKernels : CpuLayerKernels {};
}  // namespace pipetwin::cpu::test_support
template <>
struct pipetwin::exec::FusesEpilogues<pipetwin::cpu::test_support::UnfusedKernels> : std::false_type {};

namespace pipetwin::cpu {

TEST_CASE("conv layers give the same values with the fused epilogues as one step after the other") {
  static_assert(exec::FusesEpilogues<CpuLayerKernels>::value);
  static_assert(!exec::FusesEpilogues<test_support::UnfusedKernels>::value);
  // Block input 4x6x6: conv (+ batch norm, ReLU); the same adding the identity shortcut; one of
  // stride 2 to 8 channels adding the option-A shortcut (zero-padded channels); conv + bias + ReLU
  // (ReLU in the convolution) with and without max pooling (ReLU's backward over pooling's
  // gradient). Equal as floats (==): oneDNN's ReLU may write a negative's zero as -0.
  Conv2dSpec plain = conv3x3(1, false, true), identity = plain, strided = plain;
  identity.residual_add = true;
  strided.residual_add = true;
  strided.stride = 2;
  strided.out_channels = 8;
  Conv2dSpec biased = conv3x3(1, true, false), pooled = biased;
  pooled.pool.kind = "max";
  pooled.pool.kernel = 2;
  pooled.pool.stride = 2;
  const std::vector<std::int64_t> block{4, 6, 6};
  const std::vector<Layer> layers{conv2d_layer("plain", block, plain, 4), conv2d_layer("identity", block, identity, 4),
                                  conv2d_layer("strided", block, strided, 4), conv2d_layer("biased", block, biased, 4),
                                  conv2d_layer("pooled", block, pooled, 4)};
  const auto specs = exec::make_layer_specs(layers);
  const Matrix x = random_matrix(4 * 36, 5, 60), block_input = random_matrix(4 * 36, 5, 61);
  for (std::size_t run = 0; run < 2 * specs.size(); ++run) {
    const std::size_t k = run % specs.size();
    const bool eigen = run >= specs.size();  // the Eigen convolutions (a build without oneDNN)
    CAPTURE(k);
    CAPTURE(eigen);
    if (!eigen && !onednn::available()) continue;
    const exec::LayerComposition<CpuLayerKernels> fused(specs[k]);
    const exec::LayerComposition<test_support::UnfusedKernels> apart(specs[k]);
    CpuLayerKernels fused_kernels;
    test_support::UnfusedKernels apart_kernels;
    fused_kernels.use_onednn = apart_kernels.use_onednn = !eigen;
    const Vector p = specs[k].initial_parameters(62) + Vector(random_matrix(specs[k].parameter_count(), 1, 63)) * 0.1f;
    const Matrix shortcut = specs[k].adds_residual() ? block_input : Matrix();
    LayerStash fused_stash;
    exec::LayerComposition<test_support::UnfusedKernels>::LayerStash apart_stash;
    const Activation y = fused.forward(fused_kernels, p, Activation{x, shortcut}, fused_stash, nullptr, 1, nullptr);
    const Activation y_apart = apart.forward(apart_kernels, p, Activation{x, shortcut}, apart_stash, nullptr, 1, nullptr);
    CHECK(y.main == y_apart.main);
    CHECK(fused_stash.activation == apart_stash.activation);
    CHECK(fused_stash.batch_norm.normalized == apart_stash.batch_norm.normalized);
    CHECK(fused_stash.argmax == apart_stash.argmax);
    CHECK((fused_stash.activation.array() == 0).count() > 0);  // ReLU zeroed some: the mask matters below
    const Gradient out{random_matrix(y.main.rows(), 5, 64), Matrix(), 0};
    for (const bool want_shortcut : {false, true}) {
      CAPTURE(want_shortcut);
      Vector fused_grad = Vector::Zero(p.size()), apart_grad = Vector::Zero(p.size());
      const auto linear = fused.to_linear(fused_kernels, p, fused_stash, &out, want_shortcut, &fused_grad);
      const auto linear_apart = apart.to_linear(apart_kernels, p, apart_stash, &out, want_shortcut, &apart_grad);
      CHECK(linear.dz == linear_apart.dz);
      CHECK(linear.shortcut_grad == linear_apart.shortcut_grad);
      CHECK(linear.shortcut_grad.size() == (want_shortcut && specs[k].adds_residual() ? block_input.size() : 0));
      fused.weight_gradient(fused_kernels, fused_stash, linear, fused_grad);
      apart.weight_gradient(apart_kernels, apart_stash, linear_apart, apart_grad);
      CHECK(fused_grad == apart_grad);
      const Gradient in = fused.input_gradient(fused_kernels, p, linear, &out, 1, 4);
      const Gradient in_apart = apart.input_gradient(apart_kernels, p, linear_apart, &out, 1, 4);
      CHECK(in.main == in_apart.main);
      CHECK(in.shortcut == in_apart.shortcut);
    }
  }
}

TEST_CASE("a block's input lent as the shortcut and given back: the values of a copy, one buffer") {
  // conv1 takes the block input (4x6x6) and feeds the residual; conv2 adds it (identity shortcut).
  Conv2dSpec first = conv3x3(1, false, true), second = first;
  second.residual_add = true;
  const std::vector<Layer> layers{conv2d_layer("conv1", {4, 6, 6}, first, 4), conv2d_layer("conv2", {4, 6, 6}, second, 4)};
  const auto ops = make_layer_ops(layers);
  REQUIRE(ops[0].spec().feeds_residual());
  const Vector p1 = ops[0].initial_parameters(70), p2 = ops[1].initial_parameters(71);
  const Matrix x = random_matrix(4 * 36, 3, 72);
  // As a copy (the default).
  LayerStash copied1, copied2;
  const Activation h = ops[0].forward(p1, Activation{x, Matrix()}, copied1, nullptr, 1, nullptr);
  const Activation y = ops[1].forward(p2, h, copied2, nullptr, 1, nullptr);
  CHECK(h.shortcut == x);
  CHECK(y.shortcut.size() == 0);
  // Lent and given back.
  Matrix input = x;
  const float* buffer = input.data();
  LayerStash lent1, lent2;
  Activation a = ops[0].forward(p1, Activation{std::move(input), Matrix()}, lent1, nullptr, 1, nullptr, {true, false});
  CHECK(lent1.input.size() == 0);    // lent, not kept
  CHECK(a.shortcut.data() == buffer);  // the block input's own buffer, no copy
  a = ops[1].forward(p2, std::move(a), lent2, nullptr, 1, nullptr, {false, true});
  CHECK(a.shortcut.data() == buffer);  // given back
  lent1.input = std::move(a.shortcut);
  CHECK(a.main == y.main);
  CHECK(lent1.input == copied1.input);
  CHECK(lent1.activation == copied1.activation);
  CHECK(lent2.activation == copied2.activation);
  // Asked of layers that do not take or add a block input: an error, not a silent copy.
  LayerStash unused;
  CHECK_THROWS_AS(ops[1].forward(p2, h, unused, nullptr, 1, nullptr, {true, false}), Error);
  CHECK_THROWS_AS(ops[0].forward(p1, Activation{x, Matrix()}, unused, nullptr, 1, nullptr, {false, true}), Error);
}

TEST_CASE("relu, pooling and the residual shortcut backward match finite differences") {
  // Inputs kept away from the kinks (|x| >= 0.1, distinct values in each window).
  Matrix x = random_matrix(2 * 6 * 6, 2, 15);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] += (x.data()[i] >= 0 ? 0.1f : -0.1f) + 0.01f * static_cast<float>(i % 7);
  const Matrix r6 = random_matrix(2 * 6 * 6, 2, 16);
  {
    Matrix y = x;
    relu_forward(y);
    const Matrix dx = relu_backward(y, r6);
    CHECK(relative_error(dx, numerical_gradient([&](const Matrix& v) { Matrix t = v; relu_forward(t); return probe(t, r6); }, x, 1e-2f)) < kTolerance);
  }
  for (const PoolKind kind : {PoolKind::max, PoolKind::avg, PoolKind::global_avg}) {
    CAPTURE(static_cast<int>(kind));
    const PoolGeometry g{kind, 2, 6, 6, 3, 2};
    std::vector<std::int32_t> argmax;
    const Matrix y = pool_forward(g, x, &argmax);
    const Matrix r = random_matrix(y.rows(), y.cols(), 17);
    const Matrix dx = pool_backward(g, r, argmax);
    CHECK(relative_error(dx, numerical_gradient([&](const Matrix& v) { return probe(pool_forward(g, v, nullptr), r); }, x, 1e-3f)) < kTolerance);
  }
  const ShortcutGeometry s{2, 6, 6, 4, 3, 3};
  const Matrix rs = random_matrix(4 * 3 * 3, 2, 18);
  CHECK(relative_error(shortcut_backward(s, rs),
                       numerical_gradient([&](const Matrix& v) { return probe(shortcut_forward(s, v), rs); }, x)) < kTolerance);
}

TEST_CASE("softmax cross-entropy gradient matches finite differences") {
  const Matrix logits = random_matrix(6, 4, 19);
  const std::vector<std::int32_t> labels{0, 3, 5, 1};
  Matrix d;
  softmax_cross_entropy(logits, labels, 4.0, &d);
  const Matrix numeric = numerical_gradient([&](const Matrix& v) { return softmax_cross_entropy(v, labels, 4.0, nullptr) / 4.0; }, logits, 1e-2f);
  CHECK(relative_error(d, numeric) < kTolerance);
}

TEST_CASE("a whole residual conv layer (conv, batch norm, shortcut, ReLU, pooling): BA and BW match finite differences") {
  // Block input 2x6x6 -> conv1 (4 channels, stride 2) -> conv2 adds the option-A shortcut, pools.
  const Conv2dSpec first = conv3x3(2, false, true);
  Conv2dSpec second = first;
  second.stride = 1;
  second.residual_add = true;
  second.pool.kind = "avg";
  second.pool.kernel = 3;
  second.pool.stride = 3;
  const Layer l1 = conv2d_layer("conv1", {2, 6, 6}, first, 4);
  const Layer l2 = conv2d_layer("conv2", l1.output_shape, second, 4);
  const auto ops = make_layer_ops({l1, l2});
  const Vector p1 = ops[0].initial_parameters(1), p2 = ops[1].initial_parameters(2) + Vector(random_matrix(ops[1].parameter_count(), 1, 3)) * 0.1f;
  const Matrix x = random_matrix(72, 3, 20);
  const Matrix r = random_matrix(shape_elements(l2.output_shape), 3, 21);
  auto loss = [&](const Matrix& input, const Vector& q2) {
    Activation a{input, Matrix()};
    LayerStash s1, s2;
    a = ops[0].forward(p1, a, s1, nullptr, 1, nullptr);
    a = ops[1].forward(q2, a, s2, nullptr, 1, nullptr);
    return probe(a.main, r);
  };
  Activation a{x, Matrix()};
  LayerStash s1, s2;
  const Activation h = ops[0].forward(p1, a, s1, nullptr, 1, nullptr);
  ops[1].forward(p2, h, s2, nullptr, 1, nullptr);
  const Gradient out{r, Matrix(), 0};
  const Gradient g2 = ops[1].backward_input(p2, s2, &out, 0, 3);
  const Gradient g1 = ops[0].backward_input(p1, s1, &g2, 0, 3);
  const Vector dp2 = ops[1].backward_weight(p2, s2, &out);
  CHECK(relative_error(g1.main, numerical_gradient([&](const Matrix& v) { return loss(v, p2); }, x, 2e-3f)) < 1e-2);
  CHECK(relative_error(dp2, numerical_gradient([&](const Matrix& v) { return loss(x, Vector(v)); }, p2, 2e-3f)) < 1e-2);
  // BA parts: slices of the samples put together give the whole.
  const Gradient first_part = ops[1].backward_input(p2, s2, &out, 0, 1);
  const Gradient second_part = ops[1].backward_input(p2, s2, &out, 1, 3);
  CHECK(second_part.first_sample == 1);
  CHECK((first_part.main - g2.main.leftCols(1)).norm() <= 1e-6f * g2.main.norm());
  CHECK((second_part.main - g2.main.rightCols(2)).norm() <= 1e-6f * g2.main.norm());
}

}  // namespace pipetwin::cpu
