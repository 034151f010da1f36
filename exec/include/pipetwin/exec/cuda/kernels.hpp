// The CUDA executor's layer kernels (issue 6, first part): the same layers as the CPU kernels
// (exec/cpu/kernels), same layouts (activations [features x samples] column-major, features in
// C x H x W order; parameters W | bias | gamma | beta), as a host API on device pointers, so that
// doctest files reach CUDA without including it. GEMMs go to cuBLAS (fp32, or TF32 when the
// Context asks for it); everything else is the project's own kernels, one file per layer in
// exec/cuda/kernels/. Every call is asynchronous on the Context's stream.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// Shape helpers are usable in kernels too.
#if defined(__CUDACC__)
#define PIPETWIN_HOST_DEVICE __host__ __device__
#else
#define PIPETWIN_HOST_DEVICE
#endif

namespace pipetwin::cuda {

// Whether a CUDA device can be used here; when not, `reason` says why.
bool device_available(std::string* reason);

// One stream and one cuBLAS handle on the current device. Throws pipetwin::Error when there is
// no device. synchronize() spins until the stream has drained, or, with `blocking_wait`, sleeps
// until the driver wakes it (a core left free for other threads, a wake-up's latency paid).
class Context {
 public:
  explicit Context(bool tf32 = false, bool blocking_wait = false);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void synchronize();
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Floats in device memory (RAII), with copies to and from the host.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::int64_t count = 0);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::int64_t size() const { return count_; }
  void upload(const std::vector<float>& host);
  std::vector<float> download() const;

 private:
  float* data_ = nullptr;
  std::int64_t count_ = 0;
};

// ---- dense: y = W x + b; W [out x in], x [in x n] -------------------------------------------
void dense_forward(Context& c, const float* w, const float* b, const float* x, float* y, int out, int in, int n);
void dense_backward_input(Context& c, const float* w, const float* dy, float* dx, int out, int in, int n);
// add: dw and db get the gradients added to what they hold (a sum an earlier backward began), else
// written over (the same for conv2d_backward_weight's, and batch_norm_backward's dgamma and dbeta).
void dense_backward_weight(Context& c, const float* x, const float* dy, float* dw, float* db, int out, int in, int n,
                           bool add = false);

// ---- conv2d: im2col + GEMM, groups = 1 ---------------------------------------------------------
struct ConvShape {
  int in_channels = 0, height = 0, width = 0, out_channels = 0, kernel = 1, stride = 1, padding = 0;
  PIPETWIN_HOST_DEVICE int out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  PIPETWIN_HOST_DEVICE int out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  PIPETWIN_HOST_DEVICE int patch() const { return in_channels * kernel * kernel; }
  // Floats of scratch the conv calls need for n samples.
  std::int64_t workspace(int n) const {
    const std::int64_t rows = static_cast<std::int64_t>(n) * out_height() * out_width();
    return rows * patch() + rows * out_channels;
  }
};
// W [out_channels x C*k*k], x [C*H*W x n] -> z [out_channels*Ho*Wo x n].
void conv2d_forward(Context& c, const ConvShape& s, const float* w, const float* b, const float* x, float* z, int n,
                    float* workspace);
void conv2d_backward_input(Context& c, const ConvShape& s, const float* w, const float* dz, float* dx, int n,
                           float* workspace);
void conv2d_backward_weight(Context& c, const ConvShape& s, const float* x, const float* dz, float* dw, float* db,
                            int n, float* workspace, bool add = false);

// ---- batch norm with the microbatch's statistics, per channel over positions and samples -----
// z, y, xhat [channels*positions x n]; inv_std [channels].
void batch_norm_forward(Context& c, int channels, int positions, int n, const float* gamma, const float* beta,
                        const float* z, float* y, float* xhat, float* inv_std);
void batch_norm_backward(Context& c, int channels, int positions, int n, const float* gamma, const float* xhat,
                         const float* inv_std, const float* dy, float* dz, float* dgamma, float* dbeta,
                         bool add = false);

// ---- ReLU -------------------------------------------------------------------------------------
void relu_forward(Context& c, float* x, std::int64_t count);
void relu_backward(Context& c, const float* output, const float* dy, float* dx, std::int64_t count);

// ---- pooling (max, avg, global-avg), no padding ----------------------------------------------
enum class PoolKind { max, avg, global_avg };
struct PoolShape {
  PoolKind kind = PoolKind::max;
  int channels = 0, height = 0, width = 0, kernel = 2, stride = 2;
  PIPETWIN_HOST_DEVICE int out_height() const { return kind == PoolKind::global_avg ? 1 : (height - kernel) / stride + 1; }
  PIPETWIN_HOST_DEVICE int out_width() const { return kind == PoolKind::global_avg ? 1 : (width - kernel) / stride + 1; }
};
// argmax: one int per output element (max pooling), the winning input row.
void pool_forward(Context& c, const PoolShape& s, const float* x, float* y, int* argmax, int n);
void pool_backward(Context& c, const PoolShape& s, const float* dy, const int* argmax, float* dx, int n);

// ---- residual shortcut, option A ---------------------------------------------------------------
struct ShortcutShape {
  int in_channels = 0, in_height = 0, in_width = 0, out_channels = 0, out_height = 0, out_width = 0;
};
void shortcut_forward_add(Context& c, const ShortcutShape& s, const float* x, float* y, int n);   // y += S(x)
void shortcut_backward(Context& c, const ShortcutShape& s, const float* dy, float* dx, int n);    // dx = S^T(dy)

// ---- softmax cross-entropy -----------------------------------------------------------------------
// logits [classes x n]; loss[s] per sample; dlogits = (softmax - onehot) / loss_scale.
void softmax_cross_entropy(Context& c, const float* logits, const int* labels, int classes, int n, float loss_scale,
                           float* loss, float* dlogits);

// ---- SGD -------------------------------------------------------------------------------------------
// next = w - lr * g, or with momentum mu: velocity = mu velocity + g; next = w - lr velocity.
void sgd_update(Context& c, const float* w, const float* g, float* velocity, float* next, std::int64_t count,
                float learning_rate, float momentum);

// y += x, element-wise.
void add_into(Context& c, const float* x, float* y, std::int64_t count);

// Bias: y[r, s] += b[r] for rows r of y [rows x n]; db[r] = sum_s dy[r, s] (+= where add).
void add_bias(Context& c, const float* b, float* y, int rows, int n);
void sum_rows(Context& c, const float* dy, float* db, int rows, int n, bool add = false);

}  // namespace pipetwin::cuda
