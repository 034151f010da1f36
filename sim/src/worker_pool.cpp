// The pool of persistent worker processes behind every simulation run.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "worker_pool.hpp"

#include "pipetwin/models/error.hpp"

namespace pipetwin::sim {
namespace {

// The workers live as long as SystemC's kernel does: for the whole process. `in_use` guards
// against two runs at once (simulate() is not reentrant).
struct Pool {
  std::deque<std::unique_ptr<Worker>> workers;
  bool in_use = false;
};

Pool& pool() {
  static Pool instance;
  return instance;
}

}  // namespace

Worker::Worker() {
  sc_core::sc_spawn_options options;
  options.spawn_method();
  options.dont_initialize();
  options.set_sensitivity(&wake_);
  sc_core::sc_spawn([this] { run(); }, nullptr, &options);
}

void Worker::wake_within(std::int64_t cycles) {
  if (cycles < 0) {
    sc_core::next_trigger(wake_);
  } else {
    sc_core::next_trigger(sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(cycles)), wake_);
  }
}

void Worker::run() {
  if (model_ != nullptr) {
    model_->step();  // sets the next trigger
  } else {
    sc_core::next_trigger(wake_);
  }
}

WorkerLease::WorkerLease() {
  if (pool().in_use) throw Error("simulate() is already running in this process (it is not reentrant)");
  pool().in_use = true;
}

WorkerLease::~WorkerLease() {
  for (std::size_t i = 0; i < borrowed_; ++i) pool().workers[i]->attach(nullptr);
  pool().in_use = false;
}

Worker& WorkerLease::borrow(Steppable& model) {
  auto& workers = pool().workers;
  if (borrowed_ == workers.size()) workers.push_back(std::make_unique<Worker>());
  Worker& worker = *workers[borrowed_++];
  worker.attach(&model);
  return worker;
}

}  // namespace pipetwin::sim
