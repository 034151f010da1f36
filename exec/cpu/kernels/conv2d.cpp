// 2-D convolution as im2col + a GEMM per sample. A sample's patch matrix is stored transposed,
// [Ho*Wo x C*k*k], so that patches * W^T is [Ho*Wo x Cout] in column-major order, which is exactly
// the C x H x W layout of the sample's output column: the product is written there directly.
#include "pipetwin/exec/cpu/kernels.hpp"

#include <algorithm>

namespace pipetwin::cpu {
namespace {

// The output columns x in [first, last) whose input column x * stride - padding + kw lies inside
// the image (the others read the zero padding).
struct ValidRange {
  std::int64_t first, last;
};
ValidRange valid_columns(const ConvGeometry& g, std::int64_t kw) {
  const std::int64_t ow = g.out_width(), offset = kw - g.padding;  // input column = x * stride + offset
  std::int64_t first = offset >= 0 ? 0 : (-offset + g.stride - 1) / g.stride;
  std::int64_t last = g.width - 1 - offset < 0 ? 0 : (g.width - 1 - offset) / g.stride + 1;
  first = std::min(first, ow);
  last = std::max(first, std::min(last, ow));
  return {first, last};
}

// One sample's patches, [Ho*Wo x C*k*k]: column (c, kh, kw) is channel c shifted by (kh, kw), so
// that patches * W^T is [Ho*Wo x Cout], the sample's output in C x H x W order. `cols` is reused
// from sample to sample (it fits in cache where the whole microbatch's would not). Rows are copied
// whole where the stride is 1; only the padding is written as zeros.
void im2col_sample(const ConvGeometry& g, const float* image, Matrix& cols) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), k = g.kernel;
  cols.resize(oh * ow, g.patch());
  for (std::int64_t c = 0; c < g.in_channels; ++c) {
    for (std::int64_t kh = 0; kh < k; ++kh) {
      for (std::int64_t kw = 0; kw < k; ++kw) {
        float* out = cols.col((c * k + kh) * k + kw).data();
        const ValidRange x = valid_columns(g, kw);
        const std::int64_t offset = kw - g.padding;
        for (std::int64_t y = 0; y < oh; ++y) {
          float* out_row = out + y * ow;
          const std::int64_t iy = y * g.stride - g.padding + kh;
          if (iy < 0 || iy >= g.height) {
            std::fill(out_row, out_row + ow, 0.0f);
            continue;
          }
          const float* row = image + (c * g.height + iy) * g.width;
          std::fill(out_row, out_row + x.first, 0.0f);
          if (g.stride == 1) {
            std::copy(row + x.first + offset, row + x.last + offset, out_row + x.first);
          } else {
            for (std::int64_t x_ = x.first; x_ < x.last; ++x_) out_row[x_] = row[x_ * g.stride + offset];
          }
          std::fill(out_row + x.last, out_row + ow, 0.0f);
        }
      }
    }
  }
}

// The adjoint of im2col_sample: adds one sample's patch gradients into its image gradient.
void col2im_sample(const ConvGeometry& g, const Matrix& cols, float* image) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), k = g.kernel;
  for (std::int64_t c = 0; c < g.in_channels; ++c) {
    for (std::int64_t kh = 0; kh < k; ++kh) {
      for (std::int64_t kw = 0; kw < k; ++kw) {
        const float* in = cols.col((c * k + kh) * k + kw).data();
        const ValidRange x = valid_columns(g, kw);
        const std::int64_t offset = kw - g.padding;
        for (std::int64_t y = 0; y < oh; ++y) {
          const std::int64_t iy = y * g.stride - g.padding + kh;
          if (iy < 0 || iy >= g.height) continue;
          float* row = image + (c * g.height + iy) * g.width;
          const float* in_row = in + y * ow;
          for (std::int64_t x_ = x.first; x_ < x.last; ++x_) row[x_ * g.stride + offset] += in_row[x_];
        }
      }
    }
  }
}

// A sample's column [Cout*Ho*Wo] seen as [Ho*Wo x Cout] (C x H x W order).
Eigen::Map<Matrix> as_positions(Matrix& m, std::int64_t s, std::int64_t positions, std::int64_t channels) {
  return Eigen::Map<Matrix>(m.col(s).data(), positions, channels);
}
Eigen::Map<const Matrix> as_positions(const ConstColumns& m, std::int64_t s, std::int64_t positions, std::int64_t channels) {
  return Eigen::Map<const Matrix>(m.col(s).data(), positions, channels);
}

}  // namespace

// Per sample: patches [Ho*Wo x C*k*k] * W^T [C*k*k x Cout], written straight into the sample's
// output column (no microbatch-sized patch matrix, no layout copies).
Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w,
                      const Eigen::Ref<const Vector>& b, const Matrix& x, const Room& room) {
  const std::int64_t positions = g.out_height() * g.out_width(), n = x.cols();
  Matrix out = room.take(g.out_channels * positions, n);  // [Cout*Ho*Wo x n]
  Matrix cols;                                // [Ho*Wo x C*k*k], one sample's
  for (std::int64_t s = 0; s < n; ++s) {
    im2col_sample(g, x.col(s).data(), cols);
    auto y = as_positions(out, s, positions, g.out_channels);
    y.noalias() = cols * w.transpose();
    if (b.size() > 0) y.rowwise() += b.transpose();
  }
  return out;
}

Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const ConstColumns& dz,
                             const Room& room) {
  const std::int64_t positions = g.out_height() * g.out_width(), n = dz.cols();
  Matrix dx = room.take(g.in_channels * g.height * g.width, n);
  dx.setZero();
  Matrix dcols;  // [Ho*Wo x C*k*k], one sample's
  for (std::int64_t s = 0; s < n; ++s) {
    dcols.noalias() = as_positions(dz, s, positions, g.out_channels) * w;
    col2im_sample(g, dcols, dx.col(s).data());
  }
  return dx;
}

void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz,
                            Eigen::Ref<Matrix> dw, Vector* db, WeightGradient mode) {
  const std::int64_t positions = g.out_height() * g.out_width(), n = dz.cols();
  if (mode == WeightGradient::write) dw.setZero();
  if (db != nullptr) db->setZero(g.out_channels);
  Matrix cols;  // [Ho*Wo x C*k*k], one sample's
  for (std::int64_t s = 0; s < n; ++s) {
    im2col_sample(g, x.col(s).data(), cols);
    const auto dy = as_positions(dz, s, positions, g.out_channels);  // [Ho*Wo x Cout]
    dw.noalias() += dy.transpose() * cols;                           // [Cout x C*k*k]
    if (db != nullptr) *db += dy.colwise().sum().transpose();
  }
}

}  // namespace pipetwin::cpu
