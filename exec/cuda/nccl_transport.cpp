// The choice between MPI and NCCL for the CUDA executor's messages between ranks, and the NCCL
// transport (nccl_transport.hpp). libnccl.so.2 is opened at run time (dlopen), so that the plug-in
// loads where NCCL is not installed; nccl.h gives only the types.
#include "nccl_transport.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/byte_codec.hpp"
#include "cuda_check.hpp"
#include "device_scope.hpp"
#include "pipetwin/models/error.hpp"

namespace pipetwin::cuda {
namespace {

constexpr double kAgreeWaitS = 60;  // a rank that says nothing for this long while ranks agree has stopped

// The NCCL functions the transport calls, from libnccl.so.2 (never closed: NCCL keeps threads).
struct NcclLibrary {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;

  // Null, with the reason in `why`, when the library or one of its functions is missing.
  static std::unique_ptr<NcclLibrary> load(std::string* why) {
    void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      *why = std::string("libnccl.so.2 does not load (") + (error != nullptr ? error : "not found") + ")";
      return nullptr;
    }
    auto library = std::make_unique<NcclLibrary>();
    const auto find = [&](auto& function, const char* name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, name));
      if (function == nullptr && why->empty()) *why = std::string("libnccl.so.2 has no ") + name;
    };
    why->clear();
    find(library->get_unique_id, "ncclGetUniqueId");
    find(library->init_rank, "ncclCommInitRank");
    find(library->destroy, "ncclCommDestroy");
    find(library->abort, "ncclCommAbort");
    find(library->async_error, "ncclCommGetAsyncError");
    find(library->error_string, "ncclGetErrorString");
    find(library->send, "ncclSend");
    find(library->recv, "ncclRecv");
    if (!why->empty()) return nullptr;
    return library;
  }
  void check(ncclResult_t result, const std::string& what) const {
    if (result != ncclSuccess) throw Error("NCCL: " + what + ": " + error_string(result));
  }
};

std::unique_ptr<NcclLibrary> load_or_throw() {
  std::string why;
  auto library = NcclLibrary::load(&why);
  if (!library) throw Error("NCCL: " + why);
  return library;
}

// Rank 0 sends `bytes` to every other rank; they receive them. Every rank calls it, before the run.
std::vector<unsigned char> broadcast_from_rank_0(RankTransport& transport, std::vector<unsigned char> bytes, const char* what) {
  if (transport.rank() == 0) {
    for (std::int32_t r = 1; r < transport.ranks(); ++r) transport.post(r, 0, bytes);
    transport.flush(kAgreeWaitS);  // a rank that stopped does not hold this one for good
    return bytes;
  }
  RankMessage message;
  if (!transport.receive(message, kAgreeWaitS)) {
    throw Error(std::string("rank ") + std::to_string(transport.rank()) + " waited " + std::to_string(static_cast<int>(kAgreeWaitS)) +
                " s for rank 0's " + what + " (did rank 0 stop?)");
  }
  if (message.from_rank != 0) throw Error(std::string("while the ranks agreed on ") + what + ", a message came from rank " + std::to_string(message.from_rank));
  return std::move(message.bytes);
}

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "?";
  return name.data();
}

class NcclTransport final : public RankTransport {
 public:
  NcclTransport(RankTransport& bytes, int device, double wait_s)
      : bytes_(bytes), device_(device), wait_s_(wait_s), nccl_(load_or_throw()) {
    const std::int32_t ranks = bytes_.ranks();
    // One communicator per sending rank: rank 0 makes their ids and hands them out.
    std::vector<ncclUniqueId> ids(static_cast<std::size_t>(ranks));
    exec::ByteWriter w;
    if (bytes_.rank() == 0) {
      for (auto& id : ids) nccl_->check(nccl_->get_unique_id(&id), "ncclGetUniqueId");
      w.values(ids.data(), static_cast<std::int64_t>(ids.size()));
    }
    const std::vector<unsigned char> shared = broadcast_from_rank_0(bytes_, std::move(w.bytes()), "NCCL ids");
    exec::ByteReader r(shared);
    if (r.count<ncclUniqueId>() != ranks) throw Error("NCCL: rank 0 sent ids for another number of ranks");
    r.values(ids.data(), ranks);
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&send_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaStreamCreateWithFlags(&receive_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    comms_.resize(ids.size(), nullptr);
    for (std::size_t k = 0; k < ids.size(); ++k) {  // every rank in the same order
      nccl_->check(nccl_->init_rank(&comms_[k], ranks, ids[k], bytes_.rank()),
                   "ncclCommInitRank (communicator " + std::to_string(k) + " of " + std::to_string(ranks) + ")");
    }
    bytes_.barrier_within(wait_s_);
  }
  ~NcclTransport() override {
    cudaSetDevice(device_);
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (failed_ ? nccl_->abort(comm) : nccl_->destroy(comm));
    }
    if (send_stream_ != nullptr) cudaStreamDestroy(send_stream_);
    if (receive_stream_ != nullptr) cudaStreamDestroy(receive_stream_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  std::int32_t rank() const override { return bytes_.rank(); }
  std::int32_t ranks() const override { return bytes_.ranks(); }
  void send(std::int32_t to_rank, std::int32_t task, const std::vector<unsigned char>& bytes) override {
    bytes_.send(to_rank, task, bytes);
  }
  void post(std::int32_t to_rank, std::int32_t task, std::vector<unsigned char> bytes) override {
    bytes_.post(to_rank, task, std::move(bytes));
  }
  bool carries_spans() const override { return true; }

  // The bytes first (over MPI, in this rank's order to that peer), then each span on this rank's
  // communicator, in the order named; the receiver's listener takes them in the same order. One
  // sender at a time, so that the order of the spans is the order of the messages.
  void post_with_spans(std::int32_t to_rank, std::int32_t task, std::vector<unsigned char> bytes,
                       const std::vector<MessageSpan>& spans) override {
    std::lock_guard<std::mutex> lock(send_mutex_);
    bytes_.post(to_rank, task, std::move(bytes));
    if (spans.empty()) return;
    const DeviceScope scope(device_);
    if (!scope.holds()) throw Error("CUDA: cannot make GPU " + std::to_string(device_) + " current for NCCL");
    ncclComm_t comm = comms_[static_cast<std::size_t>(rank())];
    for (const MessageSpan& span : spans) {
      nccl_->check(nccl_->send(span.data, static_cast<std::size_t>(span.bytes), ncclChar, to_rank, comm, send_stream_),
                   "ncclSend to rank " + std::to_string(to_rank));
    }
    wait(send_stream_, comm, "sending task " + std::to_string(task) + "'s data to rank " + std::to_string(to_rank));
  }
  bool posting() override { return bytes_.posting(); }
  void flush(double wait_s) override { bytes_.flush(wait_s); }

  bool receive(RankMessage& message, double wait_s) override {
    if (!bytes_.receive(message, wait_s)) return false;
    const std::int32_t from = message.from_rank;
    const std::int32_t task = message.task;
    message.out_of_band = [this, from, task](void* into, std::int64_t bytes) {
      const DeviceScope scope(device_);
      if (!scope.holds()) throw Error("CUDA: cannot make GPU " + std::to_string(device_) + " current for NCCL");
      ncclComm_t comm = comms_.at(static_cast<std::size_t>(from));
      nccl_->check(nccl_->recv(into, static_cast<std::size_t>(bytes), ncclChar, from, comm, receive_stream_),
                   "ncclRecv from rank " + std::to_string(from));
      wait(receive_stream_, comm, "receiving task " + std::to_string(task) + "'s data from rank " + std::to_string(from));
    };
    return true;
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override { return bytes_.gather(bytes); }
  void barrier() override { bytes_.barrier(); }
  void barrier_within(double wait_s) override { bytes_.barrier_within(wait_s); }

 private:
  // Until the stream's NCCL work has completed: polled, so that a peer that died (its half of the
  // send never posted) ends in an error after wait_s_ instead of a hang.
  void wait(cudaStream_t stream, ncclComm_t comm, const std::string& what) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s_);
    for (int polls = 0;; ++polls) {
      const cudaError_t status = cudaStreamQuery(stream);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check_cuda(status, what.c_str());
      ncclResult_t async = ncclSuccess;
      nccl_->check(nccl_->async_error(comm, &async), "ncclCommGetAsyncError");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
      const bool pending = async == ncclInProgress;
#else
      const bool pending = false;
#endif
      if (async != ncclSuccess && !pending) {
        failed_ = true;
        nccl_->check(async, what);
      }
      if (std::chrono::steady_clock::now() >= until) {
        failed_ = true;
        throw Error("NCCL: " + what + " did not complete within " + std::to_string(static_cast<int>(wait_s_)) +
                    " s (did that rank stop?)");
      }
      if (polls >= 64) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  RankTransport& bytes_;
  int device_;
  double wait_s_;
  std::unique_ptr<NcclLibrary> nccl_;
  std::vector<ncclComm_t> comms_;  // [ranks]: comms_[k] carries what rank k sends
  cudaStream_t send_stream_ = nullptr, receive_stream_ = nullptr;
  std::mutex send_mutex_;
  std::atomic<bool> failed_{false};  // a communicator may hang: abort them instead of destroying
};

}  // namespace

RankLinkChoice choose_rank_link(RankTransport& transport, int device, const std::string& asked) {
  if (asked != "auto" && asked != "mpi" && asked != "nccl") {
    throw Error("--rank-link must be auto, mpi or nccl, got '" + asked + "'");
  }
  if (asked == "mpi") return {false, "through host memory over MPI (--rank-link mpi)"};
  // Every rank tells rank 0 its host, its GPU and whether NCCL loads there; rank 0 decides for all.
  std::string why_not;
  const bool loads = NcclLibrary::load(&why_not) != nullptr;
  cudaDeviceProp props{};
  check_cuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  exec::ByteWriter mine;
  const std::string host = host_name();
  mine.values(host.data(), static_cast<std::int64_t>(host.size()));
  mine.values(props.uuid.bytes, static_cast<std::int64_t>(sizeof(props.uuid.bytes)));
  mine.value(static_cast<std::uint8_t>(loads ? 1 : 0));
  mine.values(why_not.data(), static_cast<std::int64_t>(why_not.size()));
  const auto all = transport.gather_within(mine.bytes(), kAgreeWaitS);
  exec::ByteWriter verdict;
  if (transport.rank() == 0) {
    std::set<std::string> gpus;  // host and GPU UUID
    std::string why;
    for (std::size_t r = 0; r < all.size() && why.empty(); ++r) {
      exec::ByteReader in(all[r]);
      std::string rank_host(static_cast<std::size_t>(in.count<char>()), ' ');
      in.values(rank_host.data(), static_cast<std::int64_t>(rank_host.size()));
      std::string uuid(static_cast<std::size_t>(in.count<char>()), ' ');
      in.values(uuid.data(), static_cast<std::int64_t>(uuid.size()));
      const bool rank_loads = in.value<std::uint8_t>() != 0;
      std::string rank_why(static_cast<std::size_t>(in.count<char>()), ' ');
      in.values(rank_why.data(), static_cast<std::int64_t>(rank_why.size()));
      if (!rank_loads) why = "on rank " + std::to_string(r) + ", " + rank_why;
      if (!gpus.insert(rank_host + '\0' + uuid).second) {
        why = "rank " + std::to_string(r) + " shares a GPU with another rank on " + rank_host +
              " (NCCL needs a GPU per rank: \"Duplicate GPU detected\")";
      }
    }
    verdict.value(static_cast<std::uint8_t>(why.empty() ? 1 : 0));
    verdict.values(why.data(), static_cast<std::int64_t>(why.size()));
  }
  const auto shared = broadcast_from_rank_0(transport, std::move(verdict.bytes()), "choice of NCCL or MPI");
  exec::ByteReader in(shared);
  const bool nccl = in.value<std::uint8_t>() != 0;
  std::string why(static_cast<std::size_t>(in.count<char>()), ' ');
  in.values(why.data(), static_cast<std::int64_t>(why.size()));
  if (nccl) return {true, "GPU to GPU with NCCL"};
  if (asked == "nccl") throw Error("--rank-link nccl: " + why);
  return {false, "through host memory over MPI (no NCCL: " + why + ")"};
}

std::unique_ptr<RankTransport> make_nccl_transport(RankTransport& bytes, int device, double wait_s) {
  return std::make_unique<NcclTransport>(bytes, device, wait_s);
}

}  // namespace pipetwin::cuda
