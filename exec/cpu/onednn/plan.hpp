// One oneDNN primitive made ready to run again and again: its engine and stream, the primitive,
// the reorders between the caller's layouts and the ones it wants, and its arguments as oneDNN's
// C API takes them. A run points the caller's operands at this call's buffers, and the plan's
// own (the reordered copies, the result before its reorder, the scratchpad) at the calling
// thread's workspace, which every plan that thread runs shares: the same memory call after call,
// still in the core's caches (a plan of buffers of its own, one set per layer and kernel, made
// resnet8's one-processor step 14% slower than allocating them afresh each call). After its first
// run a plan creates no primitive and allocates nothing (oneDNN's execute still builds an argument
// map of its own each time). PlanCache::Plans keeps a network's plans between calls.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pipetwin/exec/cpu/onednn_kernels.hpp"

namespace pipetwin::cpu::onednn {

// Bytes aligned to a cache line, grown when a plan needs more (never shrunk).
class Workspace {
 public:
  std::byte* at_least(std::size_t bytes);

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t bytes_ = 0;
};

class Plan {
 public:
  static constexpr std::size_t kMaxOperands = 4;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const dnnl::engine& engine() const { return engine_; }

  // The caller's operand `arg` in layout `user` (its buffer given to each run, in the order the
  // operands were added), as the primitive wants it (`wanted`): reordered into the workspace
  // before the primitive runs (an input) or out of it after (an output) where the layouts differ.
  void add_input(int arg, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted) {
    add_operand(arg, user, wanted, false);
  }
  void add_output(int arg, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted) {
    add_operand(arg, user, wanted, true);
  }
  // The primitive, and its scratchpad (in the workspace).
  void set_primitive(dnnl::primitive primitive, const dnnl::memory::desc& scratchpad);

  // The workspace a run needs.
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Runs the primitive on the caller's buffers (one per operand, in the order they were added)
  // with `workspace` (workspace_bytes() of them) and returns when it has ended. Throws dnnl::error.
  void run(const std::array<float*, kMaxOperands>& buffers, std::byte* workspace);

 private:
  struct Step {
    dnnl::primitive primitive;
    std::vector<dnnl_exec_arg_t> args;
  };
  void add_operand(int arg, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted, bool is_output);
  void execute(const Step& step);
  dnnl::memory in_workspace(const dnnl::memory::desc& desc);

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::vector<dnnl::memory> users_;  // the caller's operands, pointed at each run's buffers
  std::vector<std::pair<dnnl::memory, std::size_t>> in_workspace_;  // and where in the workspace
  std::size_t workspace_bytes_ = 0;
  std::vector<Step> before_, after_;
  Step main_;
};

// What a plan is for: the kernel and every size it was made for.
using PlanKey = std::array<std::int64_t, 10>;

struct PlanCache::Plans {
  // A plan for `key` that no other call holds, or null when there is none (make one, then give it).
  std::unique_ptr<Plan> take(const PlanKey& key);
  void give(const PlanKey& key, std::unique_ptr<Plan> plan);
  std::size_t idle();
  // The calling thread's workspace, at least `bytes` long.
  std::byte* workspace(std::size_t bytes);

 private:
  std::mutex mutex_;
  std::vector<std::pair<PlanKey, std::unique_ptr<Plan>>> idle_;
  std::vector<std::pair<std::thread::id, std::unique_ptr<Workspace>>> workspaces_;
};

// A plan for `key` taken from `cache` (made by `make` when it has none idle, or when `cache` is
// null: a plan, and a workspace, for this call alone), given back when the lease ends.
class PlanLease {
 public:
  template <typename Make>
  PlanLease(PlanCache* cache, const PlanKey& key, const Make& make)
      : plans_(cache == nullptr ? nullptr : &cache->plans()), key_(key) {
    if (plans_ != nullptr) plan_ = plans_->take(key_);
    if (plan_ == nullptr) plan_ = make();
  }
  ~PlanLease() {
    if (plans_ != nullptr) plans_->give(key_, std::move(plan_));
  }
  PlanLease(const PlanLease&) = delete;
  PlanLease& operator=(const PlanLease&) = delete;

  // Room for `bytes` of the caller's own in the workspace, after the plan's: the caller's until
  // the lease ends (a result to add somewhere, say). Ask before run().
  float* room(std::size_t bytes) {
    room_bytes_ = bytes;
    return reinterpret_cast<float*>(workspace() + plan_->workspace_bytes());
  }
  void run(const std::array<float*, Plan::kMaxOperands>& buffers) { plan_->run(buffers, workspace()); }

 private:
  std::byte* workspace() {
    const std::size_t bytes = plan_->workspace_bytes() + room_bytes_;
    return plans_ != nullptr ? plans_->workspace(bytes) : own_workspace_.at_least(bytes);
  }

  PlanCache::Plans* plans_;
  PlanKey key_;
  std::unique_ptr<Plan> plan_;
  std::size_t room_bytes_ = 0;
  Workspace own_workspace_;  // without a cache
};

}  // namespace pipetwin::cpu::onednn
