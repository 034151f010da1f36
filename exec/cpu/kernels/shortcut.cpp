// The residual shortcut of CIFAR ResNets, option A: the block input subsampled by the block's
// stride and zero-padded to the output channels (the input channels centred), no parameters.
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {
namespace {

std::int64_t channel_offset(const ShortcutGeometry& g) { return (g.out_channels - g.in_channels) / 2; }
std::int64_t stride_of(const ShortcutGeometry& g) { return g.in_height / g.out_height; }

}  // namespace

Matrix shortcut_forward(const ShortcutGeometry& g, const Matrix& x, const Room& room) {
  if (g.identity()) {
    Matrix y = room.take(x.rows(), x.cols());
    y = x;
    return y;
  }
  const std::int64_t stride = stride_of(g), offset = channel_offset(g);
  Matrix y = room.take(g.out_channels * g.out_height * g.out_width, x.cols());
  y.setZero();
  for (std::int64_t s = 0; s < x.cols(); ++s) {
    for (std::int64_t c = 0; c < g.in_channels; ++c) {
      for (std::int64_t oy = 0; oy < g.out_height; ++oy) {
        for (std::int64_t ox = 0; ox < g.out_width; ++ox) {
          y(((c + offset) * g.out_height + oy) * g.out_width + ox, s) =
              x((c * g.in_height + oy * stride) * g.in_width + ox * stride, s);
        }
      }
    }
  }
  return y;
}

Matrix shortcut_backward(const ShortcutGeometry& g, const Matrix& dy, const Room& room) {
  if (g.identity()) {
    Matrix dx = room.take(dy.rows(), dy.cols());
    dx = dy;
    return dx;
  }
  const std::int64_t stride = stride_of(g), offset = channel_offset(g);
  Matrix dx = room.take(g.in_channels * g.in_height * g.in_width, dy.cols());
  dx.setZero();
  for (std::int64_t s = 0; s < dy.cols(); ++s) {
    for (std::int64_t c = 0; c < g.in_channels; ++c) {
      for (std::int64_t oy = 0; oy < g.out_height; ++oy) {
        for (std::int64_t ox = 0; ox < g.out_width; ++ox) {
          dx((c * g.in_height + oy * stride) * g.in_width + ox * stride, s) =
              dy(((c + offset) * g.out_height + oy) * g.out_width + ox, s);
        }
      }
    }
  }
  return dx;
}

}  // namespace pipetwin::cpu
