// The shapes the layer kernels work on, the same for every backend: activations of n samples are
// [features x n], one column per sample, features in C x H x W order (c * H * W + h * W + w).
#pragma once
#include <cstdint>

namespace pipetwin::exec {

// conv2d: im2col + GEMM, groups = 1, zero padding. W [out_channels x C*k*k] (c, kh, kw order).
struct ConvGeometry {
  std::int64_t in_channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel = 1, stride = 1, padding = 0;
  std::int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  std::int64_t patch() const { return in_channels * kernel * kernel; }  // columns of im2col
};

// Pooling, no padding.
enum class PoolKind { max, avg, global_avg };
struct PoolGeometry {
  PoolKind kind = PoolKind::max;
  std::int64_t channels = 0, height = 0, width = 0, kernel = 2, stride = 2;
  std::int64_t out_height() const { return kind == PoolKind::global_avg ? 1 : (height - kernel) / stride + 1; }
  std::int64_t out_width() const { return kind == PoolKind::global_avg ? 1 : (width - kernel) / stride + 1; }
};

// The residual shortcut, option A (He et al. 2016): subsample by the stride, zero-pad channels.
struct ShortcutGeometry {
  std::int64_t in_channels = 0, in_height = 0, in_width = 0;
  std::int64_t out_channels = 0, out_height = 0, out_width = 0;
  bool identity() const { return in_channels == out_channels && in_height == out_height; }  // S(x) = x
};

}  // namespace pipetwin::exec
