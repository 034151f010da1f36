// The CPU executor's tensor memory reuse: the pool (TensorPool) and the matrices that give their
// buffers back to it (PooledMatrix), and the executor's use of them over a run's steps.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "pipetwin/exec/cpu/cpu_executor.hpp"
#include "pipetwin/exec/cpu/tensor_pool.hpp"
#include "pipetwin/models/error.hpp"
#include "pipetwin/schedule/registry.hpp"
#include "synthetic_data.hpp"

using namespace pipetwin;
using cpu::PooledMatrix;
using cpu::TensorPool;

namespace {
constexpr std::int64_t kFloatBytes = 4;
}

TEST_CASE("tensor pool: a take gets the latest buffer given of its float count, whatever its shape") {
  TensorPool pool;
  Eigen::MatrixXf a = pool.take(3, 4), b = pool.take(6, 2), c = pool.take(5, 5);
  CHECK(pool.counts().made == 3);
  const float* a_data = a.data();
  const float* b_data = b.data();
  pool.give(std::move(a));
  pool.give(std::move(b));
  pool.give(std::move(c));
  CHECK(a.size() == 0);  // given: left empty
  CHECK(pool.counts().kept == 3);
  CHECK(pool.counts().held_bytes == (12 + 12 + 25) * kFloatBytes);
  // 12 floats: b went back last, so it comes first, in the shape asked.
  const Eigen::MatrixXf first = pool.take(2, 6);
  CHECK(first.data() == b_data);
  CHECK(first.rows() == 2);
  CHECK(first.cols() == 6);
  CHECK(pool.take(12, 1).data() == a_data);
  CHECK(pool.counts().reused == 2);
  // None of 12 left: a new one.
  const Eigen::MatrixXf fresh = pool.take(4, 3);
  CHECK(pool.counts().made == 4);
  CHECK(pool.counts().held_bytes == 25 * kFloatBytes);
  CHECK_THROWS_AS(pool.take(-1, 3), Error);
  CHECK_THROWS_AS(TensorPool(-1), Error);
}

TEST_CASE("tensor pool: buffers beyond what it may hold are freed, not kept") {
  TensorPool pool(100 * kFloatBytes);
  pool.give(Eigen::MatrixXf(10, 6));  // 60 floats: kept
  pool.give(Eigen::MatrixXf(10, 5));  // 50 more would be 110: freed
  pool.give(Eigen::MatrixXf(8, 5));   // 40: 100 in all, kept
  const TensorPool::Counts counts = pool.counts();
  CHECK(counts.kept == 2);
  CHECK(counts.freed == 1);
  CHECK(counts.held_bytes == 100 * kFloatBytes);
  pool.give(Eigen::MatrixXf());  // nothing to keep
  CHECK(pool.counts().kept == 2);
  CHECK(pool.counts().freed == 1);
}

TEST_CASE("pooled matrix: its buffer goes back to its pool when it dies or is assigned over, and copies and moves") {
  auto pool = std::make_shared<TensorPool>();
  const float* first_data = nullptr;
  const float* copy_data = nullptr;
  {
    PooledMatrix m(pool->take(4, 3), pool);
    m.setConstant(2.0f);
    first_data = m.data();
    // A copy: a buffer of its own from the same pool, the same values.
    const PooledMatrix copy = m;
    copy_data = copy.data();
    CHECK(copy_data != m.data());
    CHECK(copy.pool() == pool);
    CHECK(copy == m);
    CHECK(pool->counts().made == 2);
    // A move takes the buffer and the pool along.
    PooledMatrix moved = std::move(m);
    CHECK(moved.data() == first_data);
    CHECK(moved.pool() == pool);
    CHECK(m.size() == 0);  // NOLINT(bugprone-use-after-move): moved from, empty by Eigen's rule
    CHECK(pool->counts().held_bytes == 0);
  }
  // Both died, `moved` (declared last) first: both buffers kept, the copy's given last.
  CHECK(pool->counts().kept == 2);
  CHECK(pool->counts().held_bytes == 2 * 12 * kFloatBytes);
  PooledMatrix again(pool->take(3, 4), pool);
  CHECK(again.data() == copy_data);
  // Assigned over by another pooled matrix: its own buffer goes back, and comes first again.
  again = PooledMatrix(pool->take(2, 2), pool);
  CHECK(again.size() == 4);
  CHECK(pool->take(12, 1).data() == copy_data);
  CHECK(pool->take(12, 1).data() == first_data);
  // An expression of its own size is written into its buffer; a plain matrix is one with no pool.
  const float* kept = again.data();
  again = Eigen::MatrixXf::Constant(2, 2, 1.5f) * 2.0f;
  CHECK(again.data() == kept);
  CHECK(again(1, 1) == 3.0f);
  const PooledMatrix plain = Eigen::MatrixXf::Ones(2, 2).eval();
  CHECK(plain.pool() == nullptr);
  const PooledMatrix plain_copy = plain;
  CHECK(plain_copy == plain);
  CHECK(plain_copy.pool() == nullptr);
}

TEST_CASE("tensor pool: tensors made on one thread die on others, and every buffer comes back once") {
  auto pool = std::make_shared<TensorPool>();
  constexpr int kThreads = 4, kTensors = 500;
  std::vector<std::vector<PooledMatrix>> made(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kTensors; ++i) made[static_cast<std::size_t>(t)].emplace_back(pool->take(8, 1 + i % 5), pool);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&made, &pool, t] {
      // Each thread lets another's tensors die and takes new ones as it goes.
      auto& theirs = made[static_cast<std::size_t>((t + 1) % kThreads)];
      for (int i = 0; i < kTensors; ++i) {
        theirs[static_cast<std::size_t>(i)] = PooledMatrix(pool->take(8, 1 + i % 5), pool);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  made.clear();
  const TensorPool::Counts counts = pool->counts();
  // Every take's buffer came back, once.
  CHECK(counts.reused + counts.made == 2 * kThreads * kTensors);
  CHECK(counts.kept == counts.reused + counts.made);
  // It holds the first tensors' buffers (all made: the pool was empty) and at most as many again.
  std::int64_t first_bytes = 0;
  for (int i = 0; i < kTensors; ++i) first_bytes += kThreads * 8 * (1 + i % 5) * kFloatBytes;
  CHECK(counts.made >= kThreads * kTensors);
  CHECK(counts.held_bytes >= first_bytes);
  CHECK(counts.held_bytes <= 2 * first_bytes);
}

// ---- the CPU executor's runs ----------------------------------------------------------------
namespace {

TrainingRun run_for(const std::string& model, const std::string& schedule, int processors, int minibatches) {
  GraphConfig config;
  config.model = model;
  config.schedule = schedule;
  config.hardware = "cpu-core";
  config.processors = processors;
  config.microbatches = 4;
  config.minibatches = minibatches;
  config.params = {"batch=8"};
  const ScheduleRequest request = make_request(config);
  const TaskGraph graph = make_graph(config);
  const Dataset data = test::synthetic_data_for(request.network);
  const BatchSampler sampler = graph_sampler(data, graph, request.network, 7);
  return cpu::run_cpu(graph, request.network, sampler, TrainingOptions{});
}

}  // namespace

TEST_CASE("CPU executor: after the first steps its tensors take their buffers from the pools, allocating none") {
  for (const auto& [model, schedule, processors] :
       std::vector<std::tuple<std::string, std::string, int>>{{"resnet8", "1f1b", 2}, {"resnet8", "layerpipe", 2},
                                                              {"lenet5", "gpipe", 1}, {"mlp", "zb-h1", 2},
                                                              {"mlp", "pipedream", 2}}) {
    CAPTURE(model);
    CAPTURE(schedule);
    const TrainingRun short_run = run_for(model, schedule, processors, 2);
    const TrainingRun long_run = run_for(model, schedule, processors, 6);
    const std::int64_t short_takes = short_run.host_tensors_reused + short_run.host_tensors_allocated;
    const std::int64_t extra_takes = long_run.host_tensors_reused + long_run.host_tensors_allocated - short_takes;
    MESSAGE(model << " " << schedule << ": " << short_run.host_tensors_allocated << " and "
                  << long_run.host_tensors_allocated << " allocated of " << short_takes << " and " << short_takes + extra_takes);
    // Every step makes the same tensors: four more minibatches make twice the first two's.
    REQUIRE(short_takes > 0);
    CHECK(extra_takes == 2 * short_takes);
    CHECK(short_run.host_tensors_reused > 0);
    CHECK(long_run.host_tensors_allocated - short_run.host_tensors_allocated <= extra_takes / 100);
  }
}
