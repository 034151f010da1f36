// Processors onto GPUs: SM partitions (green contexts), one GPU each, or plain streams (lanes.hpp).
#include "lanes.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

// A driver API function, reached through the runtime so that nothing links libcuda.
template <typename Function>
void load_driver_function(Function*& function, const char* name) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t status = cudaGetDriverEntryPointByVersion(name, &address, CUDA_VERSION, cudaEnableDefault, &found);
#else
  const cudaError_t status = cudaGetDriverEntryPoint(name, &address, cudaEnableDefault, &found);
#endif
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || address == nullptr) {
    cudaGetLastError();
    throw Error(std::string("SM partitions need CUDA green contexts, but this driver has no ") + name +
                " (update the driver, or run with --placement streams)");
  }
  function = reinterpret_cast<Function*>(address);
}

void check_driver(CUresult status, const char* what) {
  if (status != CUDA_SUCCESS) throw Error(std::string("CUDA driver: ") + what + " failed with error " + std::to_string(static_cast<int>(status)));
}

std::string device_name(int device) {
  cudaDeviceProp props{};
  check_cuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  return props.name;
}

}  // namespace

#if CUDA_VERSION >= 12040  // green contexts came with CUDA 12.4
// The green contexts of the SM partitions, and the driver functions they need.
struct LaneSet::Green {
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetDevResource) get_resource = nullptr;
  decltype(&cuDevSmResourceSplitByCount) split = nullptr;
  decltype(&cuDevResourceGenerateDesc) describe = nullptr;
  decltype(&cuGreenCtxCreate) create = nullptr;
  decltype(&cuGreenCtxDestroy) destroy = nullptr;
  decltype(&cuCtxFromGreenCtx) as_context = nullptr;
  decltype(&cuCtxGetCurrent) get_current = nullptr;
  decltype(&cuCtxSetCurrent) set_current = nullptr;
  std::vector<CUgreenCtx> partitions;
  std::vector<CUcontext> contexts;
  std::vector<int> sms;
  int device_sms = 0;

  Green() {
    load_driver_function(device_get, "cuDeviceGet");
    load_driver_function(get_resource, "cuDeviceGetDevResource");
    load_driver_function(split, "cuDevSmResourceSplitByCount");
    load_driver_function(describe, "cuDevResourceGenerateDesc");
    load_driver_function(create, "cuGreenCtxCreate");
    load_driver_function(destroy, "cuGreenCtxDestroy");
    load_driver_function(as_context, "cuCtxFromGreenCtx");
    load_driver_function(get_current, "cuCtxGetCurrent");
    load_driver_function(set_current, "cuCtxSetCurrent");
  }
  ~Green() {
    for (CUgreenCtx g : partitions) destroy(g);
  }

  // `count` disjoint partitions of `sms_each` SMs (0: the largest equal share); green contexts for
  // `used` of them from `first` on.
  void split_device(int device, int count, int sms_each, int first, int used) {
    CUdevice handle = 0;
    check_driver(device_get(&handle, device), "cuDeviceGet");
    CUdevResource all{};
    check_driver(get_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
    device_sms = static_cast<int>(all.sm.smCount);
#if CUDA_VERSION >= 13000
    const int alignment = std::max(1, static_cast<int>(all.sm.smCoscheduledAlignment));
    const int smallest = std::max(1, static_cast<int>(all.sm.minSmPartitionSize));
#else  // the rule on compute capability 9.0 (H100 / H200); the split itself enforces the real one
    const int alignment = 8, smallest = 8;
#endif
    if (sms_each <= 0) sms_each = std::max(smallest, device_sms / count / alignment * alignment);
    if (sms_each * count > device_sms) {
      throw Error(std::to_string(count) + " SM partitions of " + std::to_string(sms_each) + " SMs do not fit on GPU " +
                  std::to_string(device) + ", which has " + std::to_string(device_sms) + " SMs (use fewer processors or --partition-sms)");
    }
    std::vector<CUdevResource> groups(static_cast<std::size_t>(count));
    unsigned int made = static_cast<unsigned int>(count);
    CUdevResource rest{};
    check_driver(split(groups.data(), &made, &all, &rest, 0, static_cast<unsigned int>(sms_each)), "cuDevSmResourceSplitByCount");
    if (static_cast<int>(made) < count) {
      throw Error("GPU " + std::to_string(device) + " (" + std::to_string(device_sms) + " SMs) splits into only " +
                  std::to_string(made) + " partitions of " + std::to_string(sms_each) + " SMs, not " + std::to_string(count) +
                  " (partitions come in multiples of " + std::to_string(alignment) + " SMs, at least " +
                  std::to_string(smallest) + ")");
    }
    for (int g = first; g < first + used; ++g) {
      CUdevResource& group = groups.at(static_cast<std::size_t>(g));
      CUdevResourceDesc desc = nullptr;
      check_driver(describe(&desc, &group, 1), "cuDevResourceGenerateDesc");
      CUgreenCtx partition = nullptr;
      check_driver(create(&partition, desc, handle, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
      partitions.push_back(partition);
      CUcontext context = nullptr;
      check_driver(as_context(&context, partition), "cuCtxFromGreenCtx");
      contexts.push_back(context);
      sms.push_back(static_cast<int>(group.sm.smCount));
    }
  }
};

#else
struct LaneSet::Green {
  Green() {
    throw Error("SM partitions need CUDA green contexts (CUDA 12.4 or later); this pipetwin was built with CUDA " +
                std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
                " (rebuild with a newer toolkit, or run with --placement streams)");
  }
  void split_device(int, int, int, int, int) {}
  CUresult get_current(CUcontext*) { return CUDA_SUCCESS; }
  CUresult set_current(CUcontext) { return CUDA_SUCCESS; }
  std::vector<CUcontext> contexts;
  std::vector<int> sms;
  int device_sms = 0;
};
#endif

LaneSet::LaneSet(const TaskGraph& graph, const PlacementOptions& options, MemoryPool& pool) {
  std::string reason;
  if (!device_available(&reason)) throw Error("no CUDA device: " + reason);
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int P = static_cast<int>(graph.processors.size());
  const bool one_each = options.placement == "gpus";
  if (options.placement != "partitions" && options.placement != "gpus" && options.placement != "streams") {
    throw Error("unknown placement '" + options.placement + "' (use partitions, gpus or streams)");
  }
  if (one_each && P > devices) {
    throw Error(std::to_string(P) + " processors need " + std::to_string(P) + " GPUs with --placement gpus, but " +
                std::to_string(devices) + " are visible (use --placement partitions to split one GPU)");
  }
  if (!one_each && (options.device < 0 || options.device >= devices)) {
    throw Error("GPU " + std::to_string(options.device) + " does not exist (" + std::to_string(devices) + " visible)");
  }
  check_cuda(cudaSetDevice(one_each ? 0 : options.device), "cudaSetDevice");
  check_cuda(cudaFree(nullptr), "initializing the CUDA context");
  int cache = 0;
  if (options.placement == "partitions") {
    green_ = std::make_unique<Green>();
    if (options.first_partition < 0 || options.first_partition + P > std::max(P, options.split_into)) {
      throw Error("internal: processors on partitions " + std::to_string(options.first_partition) + ".." +
                  std::to_string(options.first_partition + P - 1) + " of " + std::to_string(std::max(P, options.split_into)));
    }
    green_->split_device(options.device, std::max(P, options.split_into), options.sms_per_partition,
                         options.first_partition, P);
  }
  for (int p = 0; p < P; ++p) {
    auto lane = std::make_unique<Lane>();
    lane->device = one_each ? p : options.device;
    lane->processor = p;
    lane->cache = cache++;
    lane->pool = &pool;
    check_cuda(cudaSetDevice(lane->device), "cudaSetDevice");
    cudaDeviceProp props{};
    check_cuda(cudaGetDeviceProperties(&props, lane->device), "cudaGetDeviceProperties");
    lane->sm_count = props.multiProcessorCount;
    if (green_) {  // the stream and cuBLAS handle are made inside the partition's context
      CUcontext previous = nullptr;
      check_driver(green_->get_current(&previous), "cuCtxGetCurrent");
      lane->green_context = green_->contexts[static_cast<std::size_t>(p)];
      lane->sm_count = green_->sms[static_cast<std::size_t>(p)];
      check_driver(green_->set_current(green_->contexts[static_cast<std::size_t>(p)]), "cuCtxSetCurrent");
      try {
        lane->context = std::make_unique<Context>(options.tf32, options.blocking_wait);
      } catch (...) {
        green_->set_current(previous);
        throw;
      }
      check_driver(green_->set_current(previous), "cuCtxSetCurrent");
    } else {
      lane->context = std::make_unique<Context>(options.tf32, options.blocking_wait);
    }
    processors_.push_back(std::move(lane));
  }
  for (const auto& l : graph.links) {
    auto lane = std::make_unique<Lane>();
    lane->link = true;
    lane->processor = -1;
    lane->device = device_of(l.src >= 0 ? l.src : l.dst);
    lane->cache = cache++;
    lane->pool = &pool;
    check_cuda(cudaSetDevice(lane->device), "cudaSetDevice");
    lane->context = std::make_unique<Context>(options.tf32, options.blocking_wait);
    if (l.src >= 0 && l.dst >= 0 && device_of(l.src) != device_of(l.dst)) {
      int can = 0;
      check_cuda(cudaDeviceCanAccessPeer(&can, device_of(l.dst), device_of(l.src)), "cudaDeviceCanAccessPeer");
      if (can != 0) {
        check_cuda(cudaSetDevice(device_of(l.dst)), "cudaSetDevice");
        const cudaError_t status = cudaDeviceEnablePeerAccess(device_of(l.src), 0);
        if (status != cudaSuccess && status != cudaErrorPeerAccessAlreadyEnabled) check_cuda(status, "cudaDeviceEnablePeerAccess");
        cudaGetLastError();
      }
    }
    links_.push_back(std::move(lane));
  }
  const std::string name = device_name(one_each ? 0 : options.device);
  if (green_) {
    description_ = std::to_string(P) + " SM partition(s) of " + std::to_string(green_->sms.front()) + " SMs (of " +
                   std::to_string(green_->device_sms) + ") on " + name + " (green contexts)";
  } else if (one_each) {
    description_ = std::to_string(P) + " GPU(s), one per processor: " + name;
  } else {
    description_ = std::to_string(P) + " plain stream(s) on one " + name + " (no SM isolation)";
  }
  if (options.tf32) description_ += ", TF32 GEMMs";
  if (options.blocking_wait) description_ += ", threads sleep while their streams work";
}

LaneSet::~LaneSet() {
  for (auto& lane : processors_) {
    if (lane->green_context != nullptr && green_) green_->set_current(static_cast<CUcontext>(lane->green_context));
    for (void* event : lane->timing_events) cudaEventDestroy(static_cast<cudaEvent_t>(event));
    lane->scratch = Tensor();
    lane->context.reset();
  }
  if (green_) {
    cudaSetDevice(processors_.empty() ? 0 : processors_.front()->device);
  }
  for (auto& lane : links_) {
    for (void* event : lane->timing_events) cudaEventDestroy(static_cast<cudaEvent_t>(event));
    lane->scratch = Tensor();
    lane->context.reset();
  }
}

int LaneSet::device_of(std::int32_t processor) const {
  return processors_.at(static_cast<std::size_t>(processor))->device;
}

void LaneSet::enter(Lane& lane) const {
  if (lane.green_context != nullptr) {
    check_driver(green_->set_current(static_cast<CUcontext>(lane.green_context)), "cuCtxSetCurrent");
  } else {
    check_cuda(cudaSetDevice(lane.device), "cudaSetDevice");
  }
}

}  // namespace pipetwin::cuda
