// What every oneDNN kernel call needs: an engine and a stream on the calling thread, with oneDNN's
// OpenMP parallelism held to that one thread, and oneDNN's errors turned into pipetwin::Error.
#pragma once
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu::onednn {

class Call {
 public:
  // `what` names the kernel in errors, e.g. "conv2d forward".
  explicit Call(const char* what) : what_(what) {
    omp_set_num_threads(1);  // this thread's own OpenMP setting: oneDNN runs on it alone
  }
  const dnnl::engine& engine() const { return engine_; }
  dnnl::stream& stream() { return stream_; }
  Error error(const dnnl::error& e) const { return Error(std::string(what_) + " (oneDNN): " + e.what()); }

  // `user` as the primitive wants it: `user` itself when the layouts agree, else a reordered copy.
  // (A dnnl::memory is a handle: taking it by value copies no data.)
  dnnl::memory in_layout(dnnl::memory user, const dnnl::memory::desc& wanted) {
    if (user.get_desc() == wanted) return user;
    dnnl::memory copy(wanted, engine_);
    dnnl::reorder(user, copy).execute(stream_, user, copy);
    return copy;
  }
  // A buffer for a result in the layout `produced`: `user` itself when the layouts agree.
  dnnl::memory out_layout(const dnnl::memory& user, const dnnl::memory::desc& produced) {
    return user.get_desc() == produced ? user : dnnl::memory(produced, engine_);
  }
  // Copies a result written by out_layout() back to `user` (nothing when it is `user`).
  void to_user(dnnl::memory& result, dnnl::memory& user) {
    if (result.get_data_handle() != user.get_data_handle()) dnnl::reorder(result, user).execute(stream_, result, user);
  }

 private:
  const char* what_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

}  // namespace pipetwin::cpu::onednn
