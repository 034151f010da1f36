// Every CUDA layer kernel against the CPU executor's kernel on the same random data (ggml's
// harness idea: one reference backend, every other backend checked against it), within 1e-4
// relative (fp32, different summation orders). Skipped, with the reason, where no CUDA device is
// usable (the build machine has the toolkit but no GPU).
#include <doctest/doctest.h>

#include <cstring>
#include <iostream>
#include <utility>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "cuda_available.hpp"
#include "random_matrix.hpp"
#include "pipetwin/exec/cuda/kernels.hpp"

namespace pipetwin {
namespace {

using cpu::Matrix;
using cpu::Vector;

using test::have_gpu;
using test::random_matrix;

cuda::DeviceBuffer to_device(const Matrix& m) {
  cuda::DeviceBuffer buffer(m.size());
  buffer.upload(std::vector<float>(m.data(), m.data() + m.size()));
  return buffer;
}

Matrix to_host(const cuda::DeviceBuffer& buffer, Eigen::Index rows, Eigen::Index cols) {
  const auto values = buffer.download();
  return Eigen::Map<const Matrix>(values.data(), rows, cols);
}

double relative_difference(const Matrix& gpu, const Matrix& cpu_result) {
  return static_cast<double>((gpu - cpu_result).norm()) / std::max(1e-12, static_cast<double>(cpu_result.norm()));
}

constexpr double kTolerance = 1e-4;

}  // namespace

TEST_CASE("CUDA dense and conv2d match the CPU kernels") {
  if (!have_gpu()) return;
  cuda::Context context;
  {
    const int out = 7, in = 9, n = 5;
    const Matrix w = random_matrix(out, in, 1), x = random_matrix(in, n, 2), dy = random_matrix(out, n, 3);
    const Vector b = random_matrix(out, 1, 4);
    auto dw_ = to_device(w), dx_ = to_device(x), dgy = to_device(dy), db_ = to_device(b);
    cuda::DeviceBuffer y(out * n), dx(in * n), dw(out * in), dbias(out);
    cuda::dense_forward(context, dw_.data(), db_.data(), dx_.data(), y.data(), out, in, n);
    cuda::dense_backward_input(context, dw_.data(), dgy.data(), dx.data(), out, in, n);
    cuda::dense_backward_weight(context, dx_.data(), dgy.data(), dw.data(), dbias.data(), out, in, n);
    context.synchronize();
    Matrix cpu_dw(out, in);
    Vector cpu_db;
    cpu::dense_backward_weight(x, dy, cpu_dw, &cpu_db);
    CHECK(relative_difference(to_host(y, out, n), cpu::dense_forward(w, b, x)) < kTolerance);
    CHECK(relative_difference(to_host(dx, in, n), cpu::dense_backward_input(w, dy)) < kTolerance);
    CHECK(relative_difference(to_host(dw, out, in), cpu_dw) < kTolerance);
    CHECK(relative_difference(to_host(dbias, out, 1), cpu_db) < kTolerance);
    // Added to the sum the first call wrote: twice the gradients.
    cuda::dense_backward_weight(context, dx_.data(), dgy.data(), dw.data(), dbias.data(), out, in, n, true);
    context.synchronize();
    CHECK(relative_difference(to_host(dw, out, in), 2 * cpu_dw) < kTolerance);
    CHECK(relative_difference(to_host(dbias, out, 1), 2 * cpu_db) < kTolerance);
  }
  // Two shapes: 60 rows (fewer than a reduction block's threads) and 2046 (several strides of it,
  // not a whole number), as (C, H, W, Cout, k, stride, pad) and samples.
  const std::vector<std::pair<cpu::ConvGeometry, int>> shapes = {{{3, 9, 8, 4, 3, 2, 1}, 3}, {{2, 33, 31, 5, 3, 1, 1}, 2}};
  for (const auto& shape : shapes) {
    const cpu::ConvGeometry& g = shape.first;
    const int n = shape.second;
    const std::int64_t rows = g.out_height() * g.out_width() * n;  // of the GEMMs, and of each bias sum
    CAPTURE(rows);
    const cuda::ConvShape s{static_cast<int>(g.in_channels), static_cast<int>(g.height), static_cast<int>(g.width),
                            static_cast<int>(g.out_channels), static_cast<int>(g.kernel), static_cast<int>(g.stride),
                            static_cast<int>(g.padding)};
    const Eigen::Index cout = g.out_channels;
    const Matrix w = random_matrix(cout, g.patch(), 5), x = random_matrix(g.in_channels * g.height * g.width, n, 6);
    const Vector b = random_matrix(cout, 1, 7);
    const Matrix dz = random_matrix(cout * g.out_height() * g.out_width(), n, 8);
    auto w_ = to_device(w), x_ = to_device(x), b_ = to_device(b), dz_ = to_device(dz);
    cuda::DeviceBuffer z(dz.size()), dx(x.size()), dw(w.size()), dbias(cout), work(s.workspace(n));
    cuda::conv2d_forward(context, s, w_.data(), b_.data(), x_.data(), z.data(), n, work.data());
    context.synchronize();
    CHECK(relative_difference(to_host(z, dz.rows(), n), cpu::conv2d_forward(g, w, b, x)) < kTolerance);
    cuda::conv2d_backward_input(context, s, w_.data(), dz_.data(), dx.data(), n, work.data());
    context.synchronize();
    CHECK(relative_difference(to_host(dx, x.rows(), n), cpu::conv2d_backward_input(g, w, dz)) < kTolerance);
    cuda::conv2d_backward_weight(context, s, x_.data(), dz_.data(), dw.data(), dbias.data(), n, work.data());
    context.synchronize();
    Matrix cpu_dw(cout, g.patch());
    Vector cpu_db;
    cpu::conv2d_backward_weight(g, x, dz, cpu_dw, &cpu_db);
    CHECK(relative_difference(to_host(dw, cout, g.patch()), cpu_dw) < kTolerance);
    CHECK(relative_difference(to_host(dbias, cout, 1), cpu_db) < kTolerance);
    cuda::conv2d_backward_weight(context, s, x_.data(), dz_.data(), dw.data(), dbias.data(), n, work.data(), true);
    context.synchronize();
    CHECK(relative_difference(to_host(dw, cout, g.patch()), 2 * cpu_dw) < kTolerance);
    CHECK(relative_difference(to_host(dbias, cout, 1), 2 * cpu_db) < kTolerance);
  }
}

TEST_CASE("CUDA batch norm, ReLU, pooling, shortcut, softmax cross-entropy and SGD match the CPU kernels") {
  if (!have_gpu()) return;
  cuda::Context context;
  const int channels = 3, positions = 16, n = 4;
  {
    const Matrix z = random_matrix(channels * positions, n, 9), dy = random_matrix(channels * positions, n, 10);
    const Vector gamma = random_matrix(channels, 1, 11), beta = random_matrix(channels, 1, 12);
    cpu::BatchNormStash stash;
    const Matrix y = cpu::batch_norm_forward(channels, gamma, beta, z, stash);
    Vector dgamma, dbeta;
    const Matrix dz = cpu::batch_norm_backward(channels, gamma, stash, dy, &dgamma, &dbeta);
    auto z_ = to_device(z), dy_ = to_device(dy), g_ = to_device(gamma), b_ = to_device(beta);
    cuda::DeviceBuffer y_(z.size()), xhat(z.size()), inv(channels), dz_(z.size()), dg(channels), dbb(channels);
    cuda::batch_norm_forward(context, channels, positions, n, g_.data(), b_.data(), z_.data(), y_.data(), xhat.data(), inv.data());
    cuda::batch_norm_backward(context, channels, positions, n, g_.data(), xhat.data(), inv.data(), dy_.data(), dz_.data(),
                              dg.data(), dbb.data());
    context.synchronize();
    CHECK(relative_difference(to_host(y_, z.rows(), n), y) < kTolerance);
    CHECK(relative_difference(to_host(dz_, z.rows(), n), dz) < kTolerance);
    CHECK(relative_difference(to_host(dg, channels, 1), dgamma) < kTolerance);
    CHECK(relative_difference(to_host(dbb, channels, 1), dbeta) < kTolerance);
    // dgamma and dbeta added to what they hold; the input gradient written over as before.
    cuda::batch_norm_backward(context, channels, positions, n, g_.data(), xhat.data(), inv.data(), dy_.data(), dz_.data(),
                              dg.data(), dbb.data(), true);
    context.synchronize();
    CHECK(relative_difference(to_host(dz_, z.rows(), n), dz) < kTolerance);
    CHECK(relative_difference(to_host(dg, channels, 1), 2 * dgamma) < kTolerance);
    CHECK(relative_difference(to_host(dbb, channels, 1), 2 * dbeta) < kTolerance);
  }
  {
    Matrix x = random_matrix(2 * 6 * 6, n, 13);
    const Matrix dy = random_matrix(x.rows(), n, 14);
    Matrix relu = x;
    cpu::relu_forward(relu);
    auto x_ = to_device(x), dy_ = to_device(dy);
    cuda::DeviceBuffer dx(x.size());
    cuda::relu_forward(context, x_.data(), x.size());
    cuda::relu_backward(context, x_.data(), dy_.data(), dx.data(), x.size());
    context.synchronize();
    CHECK(relative_difference(to_host(x_, x.rows(), n), relu) < kTolerance);
    CHECK(relative_difference(to_host(dx, x.rows(), n), cpu::relu_backward(relu, dy)) < kTolerance);
  }
  for (const auto kind : {cpu::PoolKind::max, cpu::PoolKind::avg, cpu::PoolKind::global_avg}) {
    CAPTURE(static_cast<int>(kind));
    const cpu::PoolGeometry g{kind, 2, 7, 7, 3, 2};
    const cuda::PoolShape s{static_cast<cuda::PoolKind>(static_cast<int>(kind)), 2, 7, 7, 3, 2};
    const Matrix x = random_matrix(2 * 49, n, 15);
    std::vector<std::int32_t> argmax;
    const Matrix y = cpu::pool_forward(g, x, &argmax);
    const Matrix dy = random_matrix(y.rows(), n, 16);
    auto x_ = to_device(x), dy_ = to_device(dy);
    cuda::DeviceBuffer y_(y.size()), dx(x.size());
    cuda::DeviceBuffer argmax_(y.size());  // ints in float-sized slots
    auto* device_argmax = reinterpret_cast<std::int32_t*>(argmax_.data());
    cuda::pool_forward(context, s, x_.data(), y_.data(), device_argmax, n);
    cuda::pool_backward(context, s, dy_.data(), device_argmax, dx.data(), n);
    context.synchronize();
    CHECK(relative_difference(to_host(y_, y.rows(), n), y) < kTolerance);
    CHECK(relative_difference(to_host(dx, x.rows(), n), cpu::pool_backward(g, dy, argmax)) < kTolerance);
  }
  {
    const cpu::ShortcutGeometry g{2, 6, 6, 4, 3, 3};
    const cuda::ShortcutShape s{2, 6, 6, 4, 3, 3};
    const Matrix x = random_matrix(2 * 36, n, 17), y0 = random_matrix(4 * 9, n, 18), dy = random_matrix(4 * 9, n, 19);
    auto x_ = to_device(x), y_ = to_device(y0), dy_ = to_device(dy);
    cuda::DeviceBuffer dx(x.size());
    cuda::shortcut_forward_add(context, s, x_.data(), y_.data(), n);
    cuda::shortcut_backward(context, s, dy_.data(), dx.data(), n);
    context.synchronize();
    CHECK(relative_difference(to_host(y_, y0.rows(), n), y0 + cpu::shortcut_forward(g, x)) < kTolerance);
    CHECK(relative_difference(to_host(dx, x.rows(), n), cpu::shortcut_backward(g, dy)) < kTolerance);
  }
  {
    const Matrix logits = random_matrix(10, n, 20);
    const std::vector<std::int32_t> labels{3, 0, 9, 5};
    Matrix d;
    const double loss = cpu::softmax_cross_entropy(logits, labels, 8.0, &d);
    auto logits_ = to_device(logits);
    cuda::DeviceBuffer labels_(n), loss_(n), d_(logits.size());
    std::vector<float> label_bits(static_cast<std::size_t>(n));
    std::memcpy(label_bits.data(), labels.data(), labels.size() * sizeof(std::int32_t));
    labels_.upload(label_bits);
    cuda::softmax_cross_entropy(context, logits_.data(), reinterpret_cast<const int*>(labels_.data()), 10, n, 8.0f,
                                loss_.data(), d_.data());
    context.synchronize();
    const auto losses = loss_.download();
    double total = 0;
    for (const float l : losses) total += l;
    CHECK(total == doctest::Approx(loss).epsilon(kTolerance));
    CHECK(relative_difference(to_host(d_, 10, n), d) < kTolerance);
  }
  {
    const Vector w = random_matrix(50, 1, 21), g = random_matrix(50, 1, 22);
    auto w_ = to_device(w), g_ = to_device(g);
    cuda::DeviceBuffer velocity(50), next(50);
    velocity.upload(std::vector<float>(50, 0.0f));
    cuda::sgd_update(context, w_.data(), g_.data(), velocity.data(), next.data(), 50, 0.1f, 0.9f);
    context.synchronize();
    const Vector expected = w - 0.1f * g;  // momentum buffer starts at 0: velocity = g
    CHECK(relative_difference(to_host(next, 50, 1), expected) < kTolerance);
  }
}

TEST_CASE("without a CUDA device the kernels' context says why, clearly") {
  std::string reason;
  if (cuda::device_available(&reason)) return;
  CHECK_FALSE(reason.empty());
  CHECK_THROWS_WITH(cuda::Context(), doctest::Contains("no CUDA device"));
}

}  // namespace pipetwin
