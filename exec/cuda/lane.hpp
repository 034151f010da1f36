// Where one executor thread's GPU work runs: a stream with its cuBLAS handle (a kernels.hpp
// Context) on one device, inside a green context (an SM partition) or not, plus the memory cache
// and the convolution scratch of that thread. A processor lane runs a processor's tasks; a link
// lane runs a link's transfers on a copy stream of its own. No CUDA header here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device_memory.hpp"
#include "pipetwin/exec/cuda/kernels.hpp"

namespace pipetwin::cuda {

struct Lane {
  int device = 0;
  void* green_context = nullptr;   // CUcontext of the lane's SM partition, or null
  int sm_count = 0;                // SMs its kernels may use
  bool link = false;               // a transfer lane: every copy lands in a new buffer
  std::int32_t processor = 0;      // a processor lane's processor (link lanes: -1)
  int cache = 0;                   // its cache in the memory pool
  MemoryPool* pool = nullptr;
  std::unique_ptr<Context> context;
  Tensor scratch;                  // convolution workspace, grown as needed
  std::vector<void*> timing_events;  // cudaEvent_t marks of layer times (LaneSet destroys them)
  std::size_t timing_events_used = 0;

  // A new [rows x cols] tensor held by processor `where` (kHost: pinned host memory) on `device`.
  Tensor tensor(std::int64_t rows, std::int64_t cols, std::int32_t where, int on_device) const {
    Tensor t;
    t.rows = rows;
    t.cols = cols;
    t.where = where;
    t.block = pool->allocate(cache, on_device, rows * cols * 4, "a [" + std::to_string(rows) + " x " + std::to_string(cols) + "] tensor");
    return t;
  }
  // On this lane's own processor and device.
  Tensor tensor(std::int64_t rows, std::int64_t cols) const { return tensor(rows, cols, processor, device); }
  float* workspace(std::int64_t floats) {
    if (scratch.size() < floats) scratch = tensor(floats, 1);
    return scratch.data();
  }
};

}  // namespace pipetwin::cuda
