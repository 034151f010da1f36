// The CUDA executor's memory pool (device_memory.hpp).
#include "device_memory.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "device_scope.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

std::string mebibytes(std::int64_t bytes) { return std::to_string(bytes / (1 << 20)) + " MiB"; }

}  // namespace

Block::~Block() {
  if (pool != nullptr && ptr != nullptr) pool->give_back(*this);
}

MemoryPool::MemoryPool(int caches) {
  for (int i = 0; i < caches; ++i) caches_.push_back(std::make_unique<Cache>());
}

MemoryPool::~MemoryPool() { release_cached(); }

void* MemoryPool::fresh(int device, std::int64_t bytes) {
  void* ptr = nullptr;
  const DeviceScope scope(device);
  const cudaError_t status = device < 0 ? cudaMallocHost(&ptr, static_cast<std::size_t>(bytes))
                                        : cudaMalloc(&ptr, static_cast<std::size_t>(bytes));
  if (status != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(reserved_mutex_);
  reserved_[device] += bytes;
  peak_reserved_[device] = std::max(peak_reserved_[device], reserved_[device]);
  return ptr;
}

void MemoryPool::release_cached() {
  for (auto& cache : caches_) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    for (auto& [key, pointers] : cache->free) {
      const DeviceScope scope(key.first);
      for (void* ptr : pointers) {
        if (key.first < 0) {
          cudaFreeHost(ptr);
        } else {
          cudaFree(ptr);
        }
        std::lock_guard<std::mutex> reserved(reserved_mutex_);
        reserved_[key.first] -= key.second;
      }
    }
    cache->free.clear();
  }
}

std::shared_ptr<Block> MemoryPool::allocate(int cache, int device, std::int64_t bytes, const std::string& what) {
  auto block = std::make_shared<Block>();
  block->bytes = bytes;
  block->device = device;
  block->cache = cache;
  if (bytes <= 0) return block;
  Cache& mine = *caches_.at(static_cast<std::size_t>(cache));
  {
    std::lock_guard<std::mutex> lock(mine.mutex);
    auto it = mine.free.find({device, bytes});
    if (it != mine.free.end() && !it->second.empty()) {
      block->ptr = it->second.back();
      it->second.pop_back();
    }
  }
  if (block->ptr == nullptr) block->ptr = fresh(device, bytes);
  if (block->ptr == nullptr) {  // give every cached block back to CUDA and try once more
    cudaDeviceSynchronize();
    release_cached();
    block->ptr = fresh(device, bytes);
  }
  if (block->ptr == nullptr) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (device >= 0) {
      const DeviceScope scope(device);
      cudaMemGetInfo(&free_bytes, &total_bytes);
    }
    throw Error("out of memory " + (device < 0 ? std::string("in pinned host memory") : "on GPU " + std::to_string(device)) +
                ": " + what + " needs " + mebibytes(bytes) +
                (device >= 0 ? " and " + mebibytes(static_cast<std::int64_t>(free_bytes)) + " of " +
                                   mebibytes(static_cast<std::int64_t>(total_bytes)) + " are free"
                             : std::string()) +
                " (use fewer microbatches in flight, a smaller batch, or offload)");
  }
  block->pool = this;
  return block;
}

void MemoryPool::give_back(Block& block) {
  Cache& owner = *caches_.at(static_cast<std::size_t>(block.cache));
  std::lock_guard<std::mutex> lock(owner.mutex);
  owner.free[{block.device, block.bytes}].push_back(block.ptr);
  block.ptr = nullptr;
}

std::map<int, std::int64_t> MemoryPool::peak_reserved_bytes() const {
  std::lock_guard<std::mutex> lock(reserved_mutex_);
  return peak_reserved_;
}

}  // namespace pipetwin::cuda
