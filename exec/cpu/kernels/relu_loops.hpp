// ReLU's element loops, compiled inside the vector clone that calls them (relu.cpp's kernels, and
// batch norm's fused epilogue and backward): one definition, so that the fused kernels give the
// separate ones' values bit for bit.
#pragma once

#include <cstdint>

#include "../vector_clones.hpp"

namespace pipetwin::cpu {

// max(x, 0) with NaN kept: a select, not a branch (the sign of activations is random).
PIPETWIN_INLINE_IN_CLONE float relu_of(float x) { return x < 0.0f ? 0.0f : x; }

// dx = dy where the forward's output is positive, else 0. dy is read unconditionally so that the
// select vectorizes.
PIPETWIN_INLINE_IN_CLONE void relu_mask(const float* output, const float* dy, float* dx, std::int64_t size) {
  for (std::int64_t i = 0; i < size; ++i) {
    const float gradient = dy[i];
    dx[i] = output[i] > 0.0f ? gradient : 0.0f;
  }
}

}  // namespace pipetwin::cpu
