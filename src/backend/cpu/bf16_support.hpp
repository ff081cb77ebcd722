// What the CPU offers oneDNN for bf16 arithmetic, as oneDNN itself sees it (its effective ISA,
// which ONEDNN_MAX_CPU_ISA can lower): AMX tiles, AVX-512 bf16 instructions, or none, in which
// case oneDNN emulates bf16 with AVX-512 fp32 instructions (correct, but slower than fp32; oneDNN
// 3.2's avx512_core bf16 convolution and gemm inner product). Below AVX-512 (AVX2 machines) oneDNN
// 3.2 has no bf16 convolution, inner product or pooling at all; later oneDNN 3 releases add some
// for AVX2 CPUs with AVX-NE-CONVERT (ISA avx2_vnni_2), not all directions of training in every
// release, so phalanx does not count on them: below AVX-512 bf16 is unavailable and the CPU backend
// computes in fp32 instead, as the CUDA backend widens a convolution cuDNN has no bf16 algorithm for.
#pragma once

#include <string>

namespace phalanx::backend::cpu {

enum class Bf16Support { Amx, Avx512Bf16, Emulated, Unavailable };

Bf16Support bf16_support();

// One line for the start of a run: how bf16 runs here, e.g. "bf16 on AMX tiles (oneDNN ISA
// avx512_core_amx)", "bf16 emulated by oneDNN ... slower than fp32" or "bf16 unavailable ...".
std::string bf16_support_note();

}  // namespace phalanx::backend::cpu
