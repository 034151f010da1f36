// A processor's tensor buffers, kept by size between the tensors that use them
// (pipetwin/exec/cpu/tensor_pool.hpp).
#include "pipetwin/exec/cpu/tensor_pool.hpp"

#include <new>

#include "pipetwin/models/error.hpp"

namespace pipetwin::cpu {

TensorPool::TensorPool(std::int64_t most_held_bytes) : most_held_bytes_(most_held_bytes) {
  if (most_held_bytes < 0) throw Error("a tensor pool cannot hold a negative number of bytes");
}

Eigen::MatrixXf TensorPool::take(std::int64_t rows, std::int64_t cols) {
  if (rows < 0 || cols < 0) throw Error("internal: a tensor of negative shape asked of a pool");
  const std::int64_t floats = rows * cols;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = kept_.find(floats);
    if (found != kept_.end() && !found->second.empty()) {
      Eigen::MatrixXf m = std::move(found->second.back());
      found->second.pop_back();
      counts_.held_bytes -= floats * static_cast<std::int64_t>(sizeof(float));
      ++counts_.reused;
      m.resize(rows, cols);  // the same number of floats: the buffer stays
      return m;
    }
    ++counts_.made;
  }
  return Eigen::MatrixXf(rows, cols);
}

void TensorPool::give(Eigen::MatrixXf&& m) noexcept {
  const std::int64_t bytes = m.size() * static_cast<std::int64_t>(sizeof(float));
  if (bytes == 0) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (counts_.held_bytes + bytes <= most_held_bytes_) {
      try {
        kept_[m.size()].push_back(std::move(m));
        counts_.held_bytes += bytes;
        ++counts_.kept;
        return;
      } catch (const std::bad_alloc&) {  // no room to keep it: freed below
      }
    }
    ++counts_.freed;
  }
  Eigen::MatrixXf().swap(m);  // freed here, outside the lock
}

TensorPool::Counts TensorPool::counts() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

}  // namespace pipetwin::cpu
