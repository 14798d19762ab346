#include "kernels/cpu_features.hpp"

#include <array>
#include <cstdlib>

namespace hearth {

namespace {

//! Each feature in cpu_feature's order: its /proc/cpuinfo name and whether the processor has it.
//! __builtin_cpu_supports takes only a literal (GCC's name), hence one line each.
struct feature_row {
  const char* name;
  bool present;
};

const std::array<feature_row, n_cpu_features>& features() {
  static const std::array<feature_row, n_cpu_features> rows{{
      {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512cd", __builtin_cpu_supports("avx512cd") != 0},
      {"avx512_vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512_bf16", __builtin_cpu_supports("avx512bf16") != 0},
  }};
  return rows;
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
  return features()[static_cast<size_t>(f)].name;
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
      if (name == features()[i].name) bits |= 1u << i, known = true;
    if (!known) unknown.emplace_back(name);
  }
  return bits;
}

bool cpu_masked(std::string_view name) {
  std::vector<std::string> unknown;
  return (parse_cpu_mask(name, unknown) & mask().bits) != 0;
}

bool cpu_has(cpu_feature f) {
  return features()[static_cast<size_t>(f)].present && (mask().bits & (1u << static_cast<uint32_t>(f))) == 0;
}

std::string cpu_mask_error() {
  if (mask().unknown.empty()) return "";
  std::string out = "HEARTH_CPU_MASK: unknown feature";
  for (const auto& u : mask().unknown) out += " '" + u + "'";
  out += " (known:";
  for (const auto& row : features()) out += std::string(" ") + row.name;
  return out + ")";
}

std::string cpu_mask_note() {
  return mask().bits != 0 ? std::string(" (HEARTH_CPU_MASK: ") + mask_variable() + ")" : "";
}

}  // namespace hearth
