// A oneDNN primitive kept ready to run (plan.hpp), a thread's workspace, and a network's plans
// between calls.
#include "plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace pipetwin::cpu::onednn {

namespace {

constexpr std::size_t kLineBytes = 64;  // a cache line: each buffer in a workspace starts on one
std::size_t whole_lines(std::size_t bytes) { return (bytes + kLineBytes - 1) / kLineBytes * kLineBytes; }

}  // namespace

void Workspace::Free::operator()(std::byte* p) const { std::free(p); }

std::byte* Workspace::at_least(std::size_t bytes) {
  if (bytes > bytes_ || data_ == nullptr) {
    const std::size_t size = whole_lines(std::max<std::size_t>(bytes, 1));
    data_.reset(static_cast<std::byte*>(std::aligned_alloc(kLineBytes, size)));
    if (data_ == nullptr) throw std::bad_alloc();
    bytes_ = size;
  }
  return data_.get();
}

dnnl::memory Plan::in_workspace(const dnnl::memory::desc& desc) {
  const dnnl::memory m(desc, engine_, static_cast<void*>(DNNL_MEMORY_NONE));
  in_workspace_.emplace_back(m, workspace_bytes_);
  workspace_bytes_ += whole_lines(desc.get_size());
  return m;
}

void Plan::add_operand(int arg, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted, bool is_output) {
  if (users_.size() == kMaxOperands) throw dnnl::error(dnnl_invalid_arguments, "too many operands for one plan");
  const dnnl::memory caller = users_.emplace_back(user, engine_, static_cast<void*>(DNNL_MEMORY_NONE));
  if (user == wanted) {
    main_.args.push_back({arg, caller.get()});
    return;
  }
  const dnnl::memory copy = in_workspace(wanted);
  const dnnl::memory& from = is_output ? copy : caller;
  const dnnl::memory& to = is_output ? caller : copy;
  (is_output ? after_ : before_).push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}}});
  main_.args.push_back({arg, copy.get()});
}

void Plan::set_primitive(dnnl::primitive primitive, const dnnl::memory::desc& scratchpad) {
  main_.primitive = std::move(primitive);
  main_.args.push_back({DNNL_ARG_SCRATCHPAD, in_workspace(scratchpad).get()});
}

void Plan::execute(const Step& step) {
  const dnnl_status_t status = dnnl_primitive_execute(step.primitive.get(), stream_.get(),
                                                      static_cast<int>(step.args.size()), step.args.data());
  if (status != dnnl_success) throw dnnl::error(status, "could not execute a primitive");
}

void Plan::run(const std::array<float*, kMaxOperands>& buffers, std::byte* workspace) {
  for (std::size_t i = 0; i < users_.size(); ++i) users_[i].set_data_handle(buffers[i]);
  // Every run: another plan may have written over the workspace since (this also zeroes a
  // blocked layout's padding, as oneDNN does when it allocates a buffer).
  for (const auto& [m, offset] : in_workspace_) m.set_data_handle(workspace + offset);
  for (const Step& step : before_) execute(step);
  execute(main_);
  for (const Step& step : after_) execute(step);
  stream_.wait();
}

std::unique_ptr<Plan> PlanCache::Plans::take(const PlanKey& key) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::find_if(idle_.begin(), idle_.end(), [&key](const auto& entry) { return entry.first == key; });
  if (it == idle_.end()) return nullptr;
  std::unique_ptr<Plan> plan = std::move(it->second);
  std::iter_swap(it, idle_.end() - 1);  // the list's order does not matter: no entry moves but these two
  idle_.pop_back();
  return plan;
}

void PlanCache::Plans::give(const PlanKey& key, std::unique_ptr<Plan> plan) {
  if (plan == nullptr) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  try {
    idle_.emplace_back(key, std::move(plan));  // allocates only while a key is new: a take left room
  } catch (...) {
    // No room for it: the plan is dropped (the next call makes another). A lease ends in a
    // destructor, which must not throw.
  }
}

std::byte* PlanCache::Plans::workspace(std::size_t bytes) {
  const std::thread::id me = std::this_thread::get_id();
  Workspace* mine = nullptr;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(workspaces_.begin(), workspaces_.end(), [me](const auto& w) { return w.first == me; });
    mine = it != workspaces_.end() ? it->second.get()
                                   : workspaces_.emplace_back(me, std::make_unique<Workspace>()).second.get();
  }
  return mine->at_least(bytes);  // only this thread touches its workspace
}

std::size_t PlanCache::Plans::idle() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

PlanCache::PlanCache() : plans_(std::make_unique<Plans>()) {}
PlanCache::~PlanCache() = default;
std::size_t PlanCache::idle_plans() const { return plans_->idle(); }

}  // namespace pipetwin::cpu::onednn
