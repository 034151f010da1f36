// Max, average and global-average pooling without padding.
#include <limits>

#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {

Matrix pool_forward(const PoolGeometry& g, const Matrix& x, std::vector<std::int32_t>* argmax, const Room& room) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), n = x.cols();
  const std::int64_t in_plane = g.height * g.width, out_plane = oh * ow;
  Matrix y = room.take(g.channels * out_plane, n);
  if (g.kind == PoolKind::global_avg) {
    for (std::int64_t c = 0; c < g.channels; ++c) {
      y.row(c) = x.middleRows(c * in_plane, in_plane).colwise().sum() / static_cast<float>(in_plane);
    }
    return y;
  }
  if (g.kind == PoolKind::max && argmax != nullptr) argmax->assign(static_cast<std::size_t>(y.size()), 0);
  const float area = static_cast<float>(g.kernel * g.kernel);
  for (std::int64_t s = 0; s < n; ++s) {
    for (std::int64_t c = 0; c < g.channels; ++c) {
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          float best = -std::numeric_limits<float>::infinity();
          float sum = 0;
          std::int64_t best_row = 0;
          for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
            for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
              const std::int64_t row = c * in_plane + (oy * g.stride + ky) * g.width + ox * g.stride + kx;
              const float value = x(row, s);
              sum += value;
              if (value > best) {
                best = value;
                best_row = row;
              }
            }
          }
          const std::int64_t out_row = c * out_plane + oy * ow + ox;
          if (g.kind == PoolKind::max) {
            y(out_row, s) = best;
            if (argmax != nullptr) (*argmax)[static_cast<std::size_t>(s * y.rows() + out_row)] = static_cast<std::int32_t>(best_row);
          } else {
            y(out_row, s) = sum / area;
          }
        }
      }
    }
  }
  return y;
}

Matrix pool_backward(const PoolGeometry& g, const Matrix& dy, const std::vector<std::int32_t>& argmax, const Room& room) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), n = dy.cols();
  const std::int64_t in_plane = g.height * g.width, out_plane = oh * ow;
  Matrix dx = room.take(g.channels * in_plane, n);  // [C*H*W x n]
  if (g.kind == PoolKind::global_avg) {  // every run written whole, in place (no temporary row)
    for (std::int64_t s = 0; s < n; ++s) {
      for (std::int64_t c = 0; c < g.channels; ++c) {
        dx.col(s).segment(c * in_plane, in_plane).setConstant(dy(c, s) / static_cast<float>(in_plane));
      }
    }
    return dx;
  }
  dx.setZero();  // max and average pooling add into it
  const float area = static_cast<float>(g.kernel * g.kernel);
  for (std::int64_t s = 0; s < n; ++s) {
    for (std::int64_t c = 0; c < g.channels; ++c) {
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::int64_t out_row = c * out_plane + oy * ow + ox;
          const float grad = dy(out_row, s);
          if (g.kind == PoolKind::max) {
            dx(argmax[static_cast<std::size_t>(s * dy.rows() + out_row)], s) += grad;
            continue;
          }
          for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
            for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
              dx(c * in_plane + (oy * g.stride + ky) * g.width + ox * g.stride + kx, s) += grad / area;
            }
          }
        }
      }
    }
  }
  return dx;
}

}  // namespace pipetwin::cpu
