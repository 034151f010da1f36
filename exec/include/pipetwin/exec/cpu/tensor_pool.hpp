// Memory the CPU executor's tensors reuse from step to step (issue 16's "no allocation on the hot
// path"): a processor's pool keeps the buffers of the tensors it made once they die, by size, and
// hands the latest one of a size back when a kernel makes a tensor of that size again. After the
// first steps a run's activations, stashes and gradients come from the pool, not from the heap,
// so their placement no longer follows the process's heap history (which runs came before).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <Eigen/Core>

namespace pipetwin::cpu {

class TensorPool {
 public:
  // The buffers it keeps, together, at most (a buffer given beyond that is freed): 1 GiB, over ten
  // times the largest footprint of the runs the tests and validations make (resnet8's zb-h1 at
  // P = 1 holds 81 MiB at its peak, host_allocator.cpp). A pool keeps, per size, as many buffers
  // as were alive at once, so a run far larger than that frees what it cannot keep.
  static constexpr std::int64_t kMostHeldBytes = std::int64_t{1} << 30;

  explicit TensorPool(std::int64_t most_held_bytes = kMostHeldBytes);
  TensorPool(const TensorPool&) = delete;
  TensorPool& operator=(const TensorPool&) = delete;

  // A [rows x cols] matrix, uninitialised: the buffer given back latest of rows * cols floats, or
  // a new one where none is kept.
  Eigen::MatrixXf take(std::int64_t rows, std::int64_t cols);
  // Keeps m's buffer for a later take, or frees it beyond most_held_bytes; m is left empty.
  // Never throws (where keeping it would need memory that is not there, the buffer is freed).
  void give(Eigen::MatrixXf&& m) noexcept;

  struct Counts {
    std::int64_t reused = 0;      // takes served from a kept buffer
    std::int64_t made = 0;        // takes that allocated
    std::int64_t kept = 0;        // buffers given and kept
    std::int64_t freed = 0;       // buffers given beyond most_held_bytes, freed
    std::int64_t held_bytes = 0;  // what it keeps now
  };
  Counts counts() const;

 private:
  const std::int64_t most_held_bytes_;
  mutable std::mutex mutex_;  // a tensor made on one processor's thread may die on another's
  std::map<std::int64_t, std::vector<Eigen::MatrixXf>> kept_;  // by float count; the latest given last
  Counts counts_;
};

// Where a kernel makes its output: a buffer of the output's shape from a pool, or (no pool) a new
// one. The kernel asks for the shape it computes itself.
struct Room {
  TensorPool* pool = nullptr;
  // A [rows x cols] matrix, uninitialised.
  Eigen::MatrixXf take(std::int64_t rows, std::int64_t cols) const {
    return pool != nullptr ? pool->take(rows, cols) : Eigen::MatrixXf(rows, cols);
  }
};

// A matrix whose buffer goes back to its pool when it dies (or is assigned over); without a pool
// it is a plain Eigen matrix. It is one (public base), so every kernel that takes a Matrix takes it.
// A copy takes its buffer from the same pool; a move takes the buffer and the pool along.
class PooledMatrix : public Eigen::MatrixXf {
 public:
  using Base = Eigen::MatrixXf;

  PooledMatrix() = default;
  PooledMatrix(Base m) : Base(std::move(m)) {}  // NOLINT(google-explicit-constructor): a plain matrix, no pool
  PooledMatrix(Base m, std::shared_ptr<TensorPool> pool) : Base(std::move(m)), pool_(std::move(pool)) {}
  template <typename Other>
  PooledMatrix(const Eigen::MatrixBase<Other>& other) : Base(other) {}  // NOLINT: an expression, evaluated
  PooledMatrix(const PooledMatrix& other)
      : Base(other.pool_ ? other.pool_->take(other.rows(), other.cols()) : Base(other.rows(), other.cols())),
        pool_(other.pool_) {
    Base::operator=(static_cast<const Base&>(other));  // same size: into the buffer taken
  }
  PooledMatrix(PooledMatrix&& other) noexcept : Base(std::move(static_cast<Base&>(other))), pool_(std::move(other.pool_)) {}
  ~PooledMatrix() { release(); }

  PooledMatrix& operator=(const PooledMatrix& other) {
    if (this != &other) *this = PooledMatrix(other);
    return *this;
  }
  PooledMatrix& operator=(PooledMatrix&& other) noexcept {
    if (this != &other) {
      release();  // empty now: Eigen's move assignment swaps, so `other` gets no buffer back
      Base::operator=(std::move(static_cast<Base&>(other)));
      pool_ = std::move(other.pool_);
    }
    return *this;
  }
  // A plain matrix's buffer, which goes to this one's pool when done.
  PooledMatrix& operator=(Base&& m) noexcept {
    release();
    Base::operator=(std::move(m));
    return *this;
  }
  PooledMatrix& operator=(const Base& m) {
    Base::operator=(m);
    return *this;
  }
  template <typename Other>
  PooledMatrix& operator=(const Eigen::DenseBase<Other>& other) {
    Base::operator=(other);
    return *this;
  }

  const std::shared_ptr<TensorPool>& pool() const { return pool_; }

 private:
  void release() noexcept {
    if (pool_ && Base::size() > 0) pool_->give(std::move(static_cast<Base&>(*this)));
  }

  std::shared_ptr<TensorPool> pool_;
};

}  // namespace pipetwin::cpu
