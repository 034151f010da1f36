// 2-D convolution as im2col + one GEMM per microbatch. Per sample, the patch matrix is stored
// transposed, [Ho*Wo x C*k*k], so that patches * W^T is [Ho*Wo x Cout] in column-major order,
// which is exactly the C x H x W layout of the output column.
#include "pipetwin/exec/cpu/kernels.hpp"

namespace pipetwin::cpu {
namespace {

// Rows sample-major: [n*Ho*Wo x C*k*k].
Matrix im2col_transposed(const ConvGeometry& g, const Matrix& x) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), k = g.kernel, n = x.cols();
  const std::int64_t positions = oh * ow;
  Matrix cols = Matrix::Zero(n * positions, g.patch());
  for (std::int64_t s = 0; s < n; ++s) {
    const float* image = x.col(s).data();
    for (std::int64_t c = 0; c < g.in_channels; ++c) {
      for (std::int64_t kh = 0; kh < k; ++kh) {
        for (std::int64_t kw = 0; kw < k; ++kw) {
          const std::int64_t column = (c * k + kh) * k + kw;
          float* out = cols.col(column).data() + s * positions;
          for (std::int64_t y = 0; y < oh; ++y) {
            const std::int64_t iy = y * g.stride - g.padding + kh;
            if (iy < 0 || iy >= g.height) continue;
            for (std::int64_t x_ = 0; x_ < ow; ++x_) {
              const std::int64_t ix = x_ * g.stride - g.padding + kw;
              if (ix >= 0 && ix < g.width) out[y * ow + x_] = image[(c * g.height + iy) * g.width + ix];
            }
          }
        }
      }
    }
  }
  return cols;
}

// The adjoint of im2col_transposed: sums patch gradients back into the image gradient.
Matrix col2im_transposed(const ConvGeometry& g, const Matrix& cols, std::int64_t n) {
  const std::int64_t oh = g.out_height(), ow = g.out_width(), k = g.kernel;
  const std::int64_t positions = oh * ow;
  Matrix dx = Matrix::Zero(g.in_channels * g.height * g.width, n);
  for (std::int64_t s = 0; s < n; ++s) {
    float* image = dx.col(s).data();
    for (std::int64_t c = 0; c < g.in_channels; ++c) {
      for (std::int64_t kh = 0; kh < k; ++kh) {
        for (std::int64_t kw = 0; kw < k; ++kw) {
          const float* in = cols.col((c * k + kh) * k + kw).data() + s * positions;
          for (std::int64_t y = 0; y < oh; ++y) {
            const std::int64_t iy = y * g.stride - g.padding + kh;
            if (iy < 0 || iy >= g.height) continue;
            for (std::int64_t x_ = 0; x_ < ow; ++x_) {
              const std::int64_t ix = x_ * g.stride - g.padding + kw;
              if (ix >= 0 && ix < g.width) image[(c * g.height + iy) * g.width + ix] += in[y * ow + x_];
            }
          }
        }
      }
    }
  }
  return dx;
}

// [n*Ho*Wo x Cout] (rows sample-major) <-> [Cout*Ho*Wo x n].
Matrix rows_to_columns(const Matrix& rows, std::int64_t positions, std::int64_t channels, std::int64_t n) {
  Matrix out(channels * positions, n);
  for (std::int64_t s = 0; s < n; ++s) {
    Eigen::Map<Matrix>(out.col(s).data(), positions, channels) = rows.middleRows(s * positions, positions);
  }
  return out;
}

Matrix columns_to_rows(const Matrix& columns, std::int64_t positions, std::int64_t channels) {
  const std::int64_t n = columns.cols();
  Matrix rows(n * positions, channels);
  for (std::int64_t s = 0; s < n; ++s) {
    rows.middleRows(s * positions, positions) = Eigen::Map<const Matrix>(columns.col(s).data(), positions, channels);
  }
  return rows;
}

}  // namespace

Matrix conv2d_forward(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w,
                      const Eigen::Ref<const Vector>& b, const Matrix& x) {
  const std::int64_t positions = g.out_height() * g.out_width();
  const Matrix cols = im2col_transposed(g, x);     // [n*Ho*Wo x C*k*k]
  Matrix rows = cols * w.transpose();             // [n*Ho*Wo x Cout]
  if (b.size() > 0) rows.rowwise() += b.transpose();
  return rows_to_columns(rows, positions, g.out_channels, x.cols());
}

Matrix conv2d_backward_input(const ConvGeometry& g, const Eigen::Ref<const Matrix>& w, const Matrix& dz) {
  const std::int64_t positions = g.out_height() * g.out_width();
  const Matrix dcols = columns_to_rows(dz, positions, g.out_channels) * w;  // [n*Ho*Wo x C*k*k]
  return col2im_transposed(g, dcols, dz.cols());
}

void conv2d_backward_weight(const ConvGeometry& g, const Matrix& x, const Matrix& dz,
                            Eigen::Ref<Matrix> dw, Vector* db) {
  const std::int64_t positions = g.out_height() * g.out_width();
  const Matrix rows = columns_to_rows(dz, positions, g.out_channels);  // [n*Ho*Wo x Cout]
  dw.noalias() = rows.transpose() * im2col_transposed(g, x);          // [Cout x C*k*k]
  if (db != nullptr) *db = rows.colwise().sum().transpose();
}

}  // namespace pipetwin::cpu
