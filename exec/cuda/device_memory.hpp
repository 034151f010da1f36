// Device and pinned host memory for the CUDA executor. Blocks come from a pool with one cache per
// lane (exec/cuda/lane.hpp): a freed block goes back to the cache of the lane that allocated it
// and is reused by that lane only, so a reuse is ordered on that lane's stream after every
// earlier use there (other lanes hand a block back only after synchronizing their own work).
// cudaMalloc is called only when no cached block of the exact size is free (shapes repeat every
// step); when it fails, the caches are emptied and it is tried once more before the executor
// reports out of memory. No CUDA header here: plain C++ includes this.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pipetwin::cuda {

class MemoryPool;

// One allocation: device memory on `device`, or pinned host memory when device < 0.
struct Block {
  void* ptr = nullptr;
  std::int64_t bytes = 0;
  int device = 0;
  int cache = 0;
  MemoryPool* pool = nullptr;
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block();
};

class MemoryPool {
 public:
  explicit MemoryPool(int caches);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // `device` < 0: pinned host memory. `what` names the allocation in the out-of-memory error.
  std::shared_ptr<Block> allocate(int cache, int device, std::int64_t bytes, const std::string& what);
  void give_back(Block& block);
  // Bytes obtained from CUDA per device (host under -1), at most at any time.
  std::map<int, std::int64_t> peak_reserved_bytes() const;

 private:
  struct Cache {
    std::mutex mutex;
    std::map<std::pair<int, std::int64_t>, std::vector<void*>> free;  // (device, bytes)
  };
  void* fresh(int device, std::int64_t bytes);
  void release_cached();

  std::vector<std::unique_ptr<Cache>> caches_;
  mutable std::mutex reserved_mutex_;
  std::map<int, std::int64_t> reserved_, peak_reserved_;
};

// A [rows x cols] fp32 matrix, column-major (a column per sample, as the CPU executor's), in a
// block, possibly a view at `offset` floats into it. `where`: the processor whose memory holds
// it, or kHost (-1). Int tensors (labels, argmax) use the same 4-byte elements.
struct Tensor {
  std::shared_ptr<Block> block;
  std::int64_t offset = 0;
  std::int64_t rows = 0, cols = 0;
  std::int32_t where = 0;

  float* data() const { return block ? static_cast<float*>(block->ptr) + offset : nullptr; }
  int* ints() const { return reinterpret_cast<int*>(data()); }
  std::int64_t size() const { return rows * cols; }
  std::int64_t bytes() const { return size() * 4; }
  bool empty() const { return size() == 0; }
  // Columns [begin, begin + count), sharing the block.
  Tensor columns(std::int64_t begin, std::int64_t count) const {
    Tensor view = *this;
    view.offset += begin * rows;
    view.cols = count;
    return view;
  }
};

}  // namespace pipetwin::cuda
