// Persistent SystemC method processes, reused by every simulation run. SystemC's kernel is global
// to a process, and Debian's SystemC 2.3.4 keeps about 100 bytes for every process ever spawned
// (measured: a spawned and finished or killed process is never fully released), so spawning per
// run would grow memory without bound over thousands of runs. Instead each run borrows workers:
// a worker runs its model's step() whenever its event (or the model's timeout) fires, and idles
// on its event between runs.
#pragma once
#include <deque>
#include <memory>

#include <systemc>

namespace pipetwin::sim {

class Steppable {
 public:
  virtual void step() = 0;

 protected:
  ~Steppable() = default;
};

class Worker {
 public:
  Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  sc_core::sc_event& wake() { return wake_; }
  // Called from the model's step(): run again after `cycles`, or earlier when woken; with
  // cycles < 0, only when woken.
  void wake_within(std::int64_t cycles);
  void attach(Steppable* model) { model_ = model; }

 private:
  void run();

  sc_core::sc_event wake_;
  Steppable* model_ = nullptr;
};

// Lends workers to one run at a time; what a run borrowed comes back when the lease ends.
class WorkerLease {
 public:
  WorkerLease();
  WorkerLease(const WorkerLease&) = delete;
  WorkerLease& operator=(const WorkerLease&) = delete;
  ~WorkerLease();  // detaches every model

  Worker& borrow(Steppable& model);

 private:
  std::size_t borrowed_ = 0;
};

}  // namespace pipetwin::sim
