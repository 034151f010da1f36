// What every oneDNN kernel call needs: an engine and a stream on the calling thread, with oneDNN's
// OpenMP parallelism held to that one thread, and oneDNN's errors turned into pipetwin::Error.
#pragma once
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

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

  // One operand of a primitive: its argument (DNNL_ARG_*), the caller's buffer, and the layout
  // the primitive wants (an input) or produces (the output).
  struct Operand {
    int arg;
    dnnl::memory user;
    dnnl::memory::desc layout;
  };
  // The caller's floats as a oneDNN buffer of layout `desc` (oneDNN takes inputs as void*).
  dnnl::memory wrap(const dnnl::memory::desc& desc, const float* data) const {
    return dnnl::memory(desc, engine_, const_cast<float*>(data));
  }
  // Runs `primitive` and returns when it is done: the inputs reordered into the layouts it wants,
  // the output written in its own layout and reordered back into the caller's buffer, a scratchpad
  // of its own (calls on other threads never share one), and `more` (a bias) as they are.
  void execute(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad,
               const std::vector<Operand>& inputs, const Operand& output, std::unordered_map<int, dnnl::memory> more = {}) {
    for (const Operand& in : inputs) more[in.arg] = in_layout(in.user, in.layout);
    dnnl::memory result = output.user.get_desc() == output.layout ? output.user : dnnl::memory(output.layout, engine_);
    more[output.arg] = result;
    more[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratchpad, engine_);
    primitive.execute(stream_, more);
    if (result.get_data_handle() != output.user.get_data_handle()) {
      dnnl::memory user = output.user;
      dnnl::reorder(result, user).execute(stream_, result, user);
    }
    stream_.wait();
  }

 private:
  // `user` as the primitive wants it: `user` itself when the layouts agree, else a reordered copy
  // (a dnnl::memory is a handle: taking it by value copies no data).
  dnnl::memory in_layout(dnnl::memory user, const dnnl::memory::desc& wanted) {
    if (user.get_desc() == wanted) return user;
    dnnl::memory copy(wanted, engine_);
    dnnl::reorder(user, copy).execute(stream_, user, copy);
    return copy;
  }

  const char* what_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

}  // namespace pipetwin::cpu::onednn
