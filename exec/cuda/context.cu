// The CUDA context (stream + cuBLAS handle) and device buffers.
#include "cuda_check.hpp"
#include "pipetwin/exec/cuda_probe.hpp"

namespace pipetwin::cuda {

bool device_available(std::string* reason) {
  const CudaProbe probe = probe_cuda();  // says whether the driver or the device is missing
  if (probe.devices.empty() && reason != nullptr) *reason = probe.reason;
  cudaGetLastError();  // clear a sticky error for later calls
  return !probe.devices.empty();
}

Context::Context(bool tf32, bool blocking_wait) : impl_(std::make_unique<Impl>()) {
  std::string reason;
  if (!device_available(&reason)) throw Error("no CUDA device: " + reason);
  check_cuda(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cublas(cublasCreate(&impl_->blas), "cublasCreate");
  check_cublas(cublasSetStream(impl_->blas, impl_->stream), "cublasSetStream");
  check_cublas(cublasSetMathMode(impl_->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH),
               "cublasSetMathMode");
  if (blocking_wait) {
    check_cuda(cudaEventCreateWithFlags(&impl_->drained, cudaEventBlockingSync | cudaEventDisableTiming), "cudaEventCreate");
  }
}

Context::~Context() {
  if (impl_->drained != nullptr) cudaEventDestroy(impl_->drained);
  if (impl_->blas != nullptr) cublasDestroy(impl_->blas);
  if (impl_->stream != nullptr) cudaStreamDestroy(impl_->stream);
}

void Context::synchronize() {
  if (impl_->drained == nullptr) {
    check_cuda(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
    return;
  }
  check_cuda(cudaEventRecord(impl_->drained, impl_->stream), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(impl_->drained), "cudaEventSynchronize");
}

DeviceBuffer::DeviceBuffer(std::int64_t count) : count_(count) {
  if (count > 0) {
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), static_cast<std::size_t>(count) * sizeof(float)),
               ("cudaMalloc of " + std::to_string(count * 4) + " bytes").c_str());
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), count_(other.count_) {
  other.data_ = nullptr;
  other.count_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = other.data_;
    count_ = other.count_;
    other.data_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const std::vector<float>& host) {
  if (static_cast<std::int64_t>(host.size()) != count_) throw Error("DeviceBuffer::upload: size mismatch");
  check_cuda(cudaMemcpy(data_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

std::vector<float> DeviceBuffer::download() const {
  std::vector<float> host(static_cast<std::size_t>(count_));
  check_cuda(cudaMemcpy(host.data(), data_, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return host;
}

}  // namespace pipetwin::cuda
