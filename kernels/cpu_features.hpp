#pragma once
// What this CPU can run, as the kernels ask it when they choose a path: the processor's own
// features less any that $HEARTH_CPU_MASK names. The mask makes one machine choose, time and run
// its kernels as a CPU without those features would (an Intel Xeon without avx512_bf16, an
// AVX2-only EPYC), so that their paths are measured and tested where such a CPU is not at hand;
// ONEDNN_MAX_CPU_ISA does the same for oneDNN's side. Instruction sets only, and only where the
// kernels choose: the machine's cores, caches and memory stay its own, and so do the compiler's
// target clones of the plain loops (HEARTH_SIMD_CLONES, resolved by the loader).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

enum class cpu_feature : uint8_t {
  avx2,
  fma,
  avx512f,
  avx512bw,
  avx512dq,
  avx512vl,
  avx512cd,
  avx512_vnni,
  avx512_bf16,
};
inline constexpr uint32_t n_cpu_features = 9;

//! As /proc/cpuinfo names it ("avx512_bf16").
const char* to_string(cpu_feature f);

//! A comma-separated list of feature names -> one bit per feature; an unknown name is put in
//! `unknown` (the bits of the known ones are still set). Pure.
uint32_t parse_cpu_mask(std::string_view list, std::vector<std::string>& unknown);

//! Whether $HEARTH_CPU_MASK names the feature called `name` (to_string's names).
bool cpu_masked(std::string_view name);
//! Whether the processor has f (cpuid) and $HEARTH_CPU_MASK does not name it.
bool cpu_has(cpu_feature f);

//! "" when $HEARTH_CPU_MASK is unset or names only known features, else what is wrong with it,
//! naming the variable and the known names: for a command to refuse at start.
std::string cpu_mask_error();

//! " (HEARTH_CPU_MASK: ...)" when a mask is set, else "": for reports of what ran.
std::string cpu_mask_note();

}  // namespace hearth
