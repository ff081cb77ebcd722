// bf16_support (see bf16_support.hpp): read from oneDNN's effective ISA, a bit mask in which each
// ISA includes the bits of those below it.
#include "bf16_support.hpp"

#include <dnnl.hpp>

namespace phalanx::backend::cpu {

namespace {

bool includes(dnnl_cpu_isa_t effective, dnnl_cpu_isa_t isa) {
  return (static_cast<unsigned>(effective) & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  if (includes(isa, dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx";
  if (includes(isa, dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16";
  if (includes(isa, dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni";
  if (includes(isa, dnnl_cpu_isa_avx512_core)) return "avx512_core";
  if (includes(isa, dnnl_cpu_isa_avx2_vnni)) return "avx2_vnni";
  if (includes(isa, dnnl_cpu_isa_avx2)) return "avx2";
  if (includes(isa, dnnl_cpu_isa_avx)) return "avx";
  if (includes(isa, dnnl_cpu_isa_sse41)) return "sse41";
  return "no vector ISA";
}

dnnl_cpu_isa_t effective_isa() {
  return static_cast<dnnl_cpu_isa_t>(dnnl::get_effective_cpu_isa());
}

}  // namespace

Bf16Support bf16_support() {
  const dnnl_cpu_isa_t isa = effective_isa();
  if (includes(isa, dnnl_cpu_isa_avx512_core_amx)) return Bf16Support::Amx;
  if (includes(isa, dnnl_cpu_isa_avx512_core_bf16)) return Bf16Support::Avx512Bf16;
  if (includes(isa, dnnl_cpu_isa_avx512_core)) return Bf16Support::Emulated;
  return Bf16Support::Unavailable;
}

std::string bf16_support_note() {
  const std::string isa = std::string("oneDNN ISA ") + isa_name(effective_isa());
  switch (bf16_support()) {
    case Bf16Support::Amx:
      return "bf16 on AMX tiles (" + isa + ")";
    case Bf16Support::Avx512Bf16:
      return "bf16 on AVX-512 bf16 instructions, no AMX (" + isa + ")";
    case Bf16Support::Emulated:
      return "bf16 emulated by oneDNN: no bf16 instructions on this CPU (" + isa +
             "), so results are bf16 but slower than fp32";
    case Bf16Support::Unavailable:
      break;
  }
  return "bf16 unavailable: oneDNN has no bf16 kernels below AVX-512 (" + isa +
         "), so convolutions and linear layers compute in fp32";
}

}  // namespace phalanx::backend::cpu
