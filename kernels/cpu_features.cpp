#include "kernels/cpu_features.hpp"

#include <array>
#include <cstdlib>

namespace hearth {

namespace {

constexpr std::array<const char*, n_cpu_features> names = {
    "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd", "avx512_vnni", "avx512_bf16"};

// __builtin_cpu_supports takes only a literal, hence a case per feature (GCC's names).
bool hardware_has(cpu_feature f) {
  switch (f) {
    case cpu_feature::avx2:
      return __builtin_cpu_supports("avx2");
    case cpu_feature::fma:
      return __builtin_cpu_supports("fma");
    case cpu_feature::avx512f:
      return __builtin_cpu_supports("avx512f");
    case cpu_feature::avx512bw:
      return __builtin_cpu_supports("avx512bw");
    case cpu_feature::avx512dq:
      return __builtin_cpu_supports("avx512dq");
    case cpu_feature::avx512vl:
      return __builtin_cpu_supports("avx512vl");
    case cpu_feature::avx512cd:
      return __builtin_cpu_supports("avx512cd");
    case cpu_feature::avx512_vnni:
      return __builtin_cpu_supports("avx512vnni");
    case cpu_feature::avx512_bf16:
      return __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

const char* mask_variable() {
  const char* env = std::getenv("HEARTH_CPU_MASK");
  return env != nullptr ? env : "";
}

struct mask_state {
  uint32_t bits = 0;
  std::vector<std::string> unknown;
};

const mask_state& mask() {
  static const mask_state m = [] {
    mask_state s;
    s.bits = parse_cpu_mask(mask_variable(), s.unknown);
    return s;
  }();
  return m;
}

}  // namespace

const char* to_string(cpu_feature f) {
  return names[static_cast<size_t>(f)];
}

uint32_t parse_cpu_mask(std::string_view list, std::vector<std::string>& unknown) {
  uint32_t bits = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    bool known = false;
    for (uint32_t i = 0; i < n_cpu_features; ++i)
      if (name == names[i]) bits |= 1u << i, known = true;
    if (!known) unknown.emplace_back(name);
  }
  return bits;
}

bool cpu_masked(std::string_view name) {
  std::vector<std::string> unknown;
  return (parse_cpu_mask(name, unknown) & mask().bits) != 0;
}

bool cpu_has(cpu_feature f) {
  return hardware_has(f) && (mask().bits & (1u << static_cast<uint32_t>(f))) == 0;
}

std::string cpu_mask_error() {
  if (mask().unknown.empty()) return "";
  std::string out = "HEARTH_CPU_MASK: unknown feature";
  for (const auto& u : mask().unknown) out += " '" + u + "'";
  out += " (known:";
  for (const char* n : names) out += std::string(" ") + n;
  return out + ")";
}

std::string cpu_mask_note() {
  return mask().bits != 0 ? std::string(" (HEARTH_CPU_MASK: ") + mask_variable() + ")" : "";
}

}  // namespace hearth
