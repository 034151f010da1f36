// Softmax cross-entropy, one thread per sample (classes are few), max subtracted for stability.
#include "../cuda_check.hpp"

namespace pipetwin::cuda {
namespace {

__global__ void kernel(const float* logits, const int* labels, int classes, int n, float loss_scale, float* loss,
                       float* dlogits) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const float* z = logits + static_cast<long long>(s) * classes;
  float top = z[0];
  for (int k = 1; k < classes; ++k) top = fmaxf(top, z[k]);
  float total = 0;
  for (int k = 0; k < classes; ++k) total += expf(z[k] - top);
  const int label = labels[s];
  loss[s] = logf(total) - (z[label] - top);
  if (dlogits == nullptr) return;
  float* d = dlogits + static_cast<long long>(s) * classes;
  for (int k = 0; k < classes; ++k) d[k] = (expf(z[k] - top) / total - (k == label ? 1.0f : 0.0f)) / loss_scale;
}

}  // namespace

void softmax_cross_entropy(Context& c, const float* logits, const int* labels, int classes, int n, float loss_scale,
                           float* loss, float* dlogits) {
  kernel<<<blocks_for(n), 256, 0, c.impl().stream>>>(logits, labels, classes, n, loss_scale, loss, dlogits);
  check_launch("softmax cross-entropy");
}

}  // namespace pipetwin::cuda
