// The CPU executor's convolution and dense kernels on oneDNN (Debian's libdnnl), when the build
// found it: the same signatures and layouts as the Eigen kernels in kernels.hpp, which stay the
// fallback and the reference the tests compare against. oneDNN picks its vector ISA (SSE4.1,
// AVX2, AVX-512) at run time and JIT-compiles for it, so one binary uses whatever core it runs
// on. A kernel that makes a tensor makes it in `room`, as the Eigen ones do. Every call runs on
// the calling thread alone (one OpenMP thread): a processor of the CPU executor is one thread. A convolution given a PlanCache keeps what it made for the call (the
// primitive and its reorders) and runs it again next time, on the thread's workspace.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu::onednn {

// Whether this build has oneDNN (when not, every kernel below throws pipetwin::Error).
bool available();
// oneDNN's version and the vector ISA it dispatches to here, e.g. "oneDNN 2.6.3/avx2"; "" without it.
std::string description();

// The convolutions' primitives, kept from call to call, and a workspace per thread for what they
// reorder and their scratchpads (the CPU executor's layers of one network share one): a call of a
// shape and kernel that has run before creates no engine, stream, primitive or reorder, and
// allocates nothing but its output. Calls on several threads at once may share it: each takes a
// plan of its own out while it runs (a second plan of a shape is made when two run at once).
class PlanCache {
 public:
  PlanCache();
  ~PlanCache();
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;
  struct Plans;  // exec/cpu/onednn/plan.hpp
  Plans& plans() { return *plans_; }
  // How many plans it keeps that no call holds now (one per shape and kernel that has run, more
  // where calls of one ran at once).
  std::size_t idle_plans() const;

 private:
  std::unique_ptr<Plans> plans_;
};

// dense: y = W x + b; W [out x in], b [out] (may be empty), x [in x n] -> y [out x n].
Matrix dense_forward(const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room = {});
Matrix dense_backward_input(const Eigen::Ref<const Matrix>& w, const ConstColumns& dy, const Room& room = {});  // dx [in x n]
void dense_backward_weight(const Matrix& x, const Matrix& dy, Eigen::Ref<Matrix> dw, Vector* db,
                           WeightGradient mode = WeightGradient::write);

// conv2d, groups = 1, zero padding: W [out_channels x C*k*k] (c, kh, kw order), b [out_channels]
// (may be empty), x [C*H*W x n] (NCHW) -> z [out_channels*Ho*Wo x n] (NCHW); with `relu`, ReLU
// applied as the kernel writes z (a post-op: no pass of its own; the same values as relu_forward,
// a negative's zero possibly -0).
// Each takes the plans of the network it runs for, or none (`cache` null: everything is made for
// the call and dropped after it).
Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Eigen::Ref<const Vector>& b,
                      const Matrix& x, bool relu = false, PlanCache* cache = nullptr, const Room& room = {});
Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz,
                             PlanCache* cache = nullptr, const Room& room = {});
// Writes dW, or adds it (`mode`; oneDNN's primitive has no accumulating form: it writes into the
// thread's workspace, which is then added); db is written either way.
void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz, Eigen::Ref<Matrix> dw,
                            Vector* db, WeightGradient mode = WeightGradient::write, PlanCache* cache = nullptr);

}  // namespace pipetwin::cpu::onednn
