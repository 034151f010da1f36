// Which oneDNN this build runs, and the vector ISA it dispatches to on this machine.
#include "pipetwin/exec/cpu/onednn_kernels.hpp"

#include "onednn_call.hpp"

namespace pipetwin::cpu::onednn {
namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse4.1";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2-vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512-vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512-bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512-amx";
    default: return "other";
  }
}

}  // namespace

bool available() { return true; }

std::string description() {
  const dnnl::version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + "/" +
         isa_name(dnnl::get_effective_cpu_isa());
}

}  // namespace pipetwin::cpu::onednn
