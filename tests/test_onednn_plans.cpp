// The oneDNN convolutions' kept plans (exec/cpu/onednn/plan.hpp): a call that runs a plan made by an
// earlier call computes its own operands' values, bit for bit those of a call that makes
// everything afresh, also when several threads share one cache at once, and a weight gradient
// added into a sum is what the sum held plus the gradient written.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "pipetwin/exec/cpu/kernels.hpp"
#include "pipetwin/exec/cpu/onednn_kernels.hpp"
#include "random_matrix.hpp"

using namespace pipetwin;
using namespace pipetwin::cpu;
using pipetwin::test::random_matrix;

namespace {

// One layer's three convolutions on fresh operands (from `seed`), with or without kept plans.
struct ConvResults {
  Matrix y, y_plain, dx, dw, dw_added;  // y with bias and ReLU, y_plain without either
  Vector db, db_added;
};
ConvResults convolve(const ConvGeometry& g, std::int64_t n, std::uint64_t seed, onednn::PlanCache* cache) {
  const Matrix w = random_matrix(g.out_channels, g.patch(), seed);
  const Vector b = random_matrix(g.out_channels, 1, seed + 1);
  const Matrix x = random_matrix(g.in_channels * g.height * g.width, n, seed + 2);
  const Matrix dz = random_matrix(g.out_channels * g.out_height() * g.out_width(), n, seed + 3);
  ConvResults r;
  r.y = onednn::conv2d_forward(g, w, b, x, true, cache);
  r.y_plain = onednn::conv2d_forward(g, w, Vector(), x, false, cache);
  r.dx = onednn::conv2d_backward_input(g, w, dz, cache);
  r.dw.resize(g.out_channels, g.patch());
  onednn::conv2d_backward_weight(g, x, dz, r.dw, &r.db, WeightGradient::write, cache);
  r.dw_added = random_matrix(g.out_channels, g.patch(), seed + 4);  // a sum that held something
  onednn::conv2d_backward_weight(g, x, dz, r.dw_added, &r.db_added, WeightGradient::add, cache);
  return r;
}

void check_same(const ConvResults& a, const ConvResults& b) {
  CHECK(a.y == b.y);
  CHECK(a.y_plain == b.y_plain);
  CHECK(a.dx == b.dx);
  CHECK(a.dw == b.dw);
  CHECK(a.db == b.db);
  CHECK(a.dw_added == b.dw_added);
  CHECK(a.db_added == b.db_added);
}

}  // namespace

TEST_CASE("oneDNN convolutions on kept plans: each call's values, bit for bit those made afresh, one plan a kernel") {
  if (!onednn::available()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  const std::vector<ConvGeometry> shapes = {{3, 8, 8, 16, 3, 1, 1}, {16, 8, 8, 32, 3, 2, 1}, {1, 12, 12, 6, 5, 1, 0}};
  onednn::PlanCache cache;
  for (std::uint64_t call = 0; call < 3; ++call) {  // the first call makes the plans, the later ones run them again
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      CAPTURE(call);
      CAPTURE(k);
      const std::uint64_t seed = 100 * call + 10 * k;
      const ConvResults kept = convolve(shapes[k], 4, seed, &cache);
      check_same(kept, convolve(shapes[k], 4, seed, nullptr));
      CHECK(kept.y.minCoeff() >= 0.0f);  // ReLU applied
      CHECK((kept.y.array() == 0).count() > 0);
      // Added: what the sum held plus the gradient written (the same floats: one addition each).
      const Matrix held = random_matrix(shapes[k].out_channels, shapes[k].patch(), seed + 4);
      CHECK(kept.dw_added == held + kept.dw);
      CHECK(kept.db_added == kept.db);
    }
    // Four kernels a shape (forward with bias and ReLU, without, input and weight gradient).
    CHECK(cache.idle_plans() == 4 * shapes.size());
  }
  const ConvResults other_batch = convolve(shapes[0], 7, 5, &cache);  // another sample count: plans of its own
  check_same(other_batch, convolve(shapes[0], 7, 5, nullptr));
  CHECK(cache.idle_plans() == 4 * shapes.size() + 4);
}

TEST_CASE("oneDNN convolutions on one layer's kept plans from threads at once: each thread's own values") {
  if (!onednn::available()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  const ConvGeometry g{8, 10, 10, 8, 3, 1, 1};
  constexpr int kThreads = 4, kCalls = 12;
  onednn::PlanCache cache;
  std::vector<std::vector<ConvResults>> kept(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) kept[t].push_back(convolve(g, 3, 1000 * t + 10 * c, &cache));
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int c = 0; c < kCalls; ++c) {
      CAPTURE(t);
      CAPTURE(c);
      check_same(kept[t][c], convolve(g, 3, 1000 * t + 10 * c, nullptr));
    }
  }
  // At least one plan a kernel, at most one a kernel and thread.
  CHECK(cache.idle_plans() >= 4);
  CHECK(cache.idle_plans() <= 4 * kThreads);
}
