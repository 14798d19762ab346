#include "kernels/matmul_plan.hpp"

#include <algorithm>

namespace hearth {

const char* to_string(matmul_path p) {
  switch (p) {
    case matmul_path::onednn_f32:
      return "onednn-f32";
    case matmul_path::onednn_bf16:
      return "onednn-bf16";
    case matmul_path::hearth_w8:
      return "hearth-w8";
    case matmul_path::hearth_w16:
      return "hearth-w16";
    case matmul_path::widened_f32:
      return "widened-f32";
    case matmul_path::quant_dot:
      return "quant-dot";
    case matmul_path::quant_f32:
      return "quant-f32";
    case matmul_path::quant_bf16:
      return "quant-bf16";
    case matmul_path::quant_onednn_bf16:
      return "quant-onednn-bf16";
    case matmul_path::hearth_dpbf16:
      return "hearth-dpbf16";
    case matmul_path::quant_dpbf16:
      return "quant-dpbf16";
    case matmul_path::quant_dot_zmm:
      return "quant-dot-zmm";
  }
  return "?";
}

std::optional<matmul_path> matmul_path_from_name(std::string_view name) {
  const auto* p = std::find_if(std::begin(all_matmul_paths), std::end(all_matmul_paths),
                               [&](matmul_path q) { return name == to_string(q); });
  if (p == std::end(all_matmul_paths)) return std::nullopt;
  return *p;
}

weight_storage storage_of(matmul_path p) {
  switch (p) {
    case matmul_path::onednn_f32:
      return weight_storage::onednn_f32;
    case matmul_path::onednn_bf16:
    case matmul_path::hearth_dpbf16:
      return weight_storage::onednn_bf16;
    case matmul_path::quant_dot:
    case matmul_path::quant_dot_zmm:
    case matmul_path::quant_f32:
    case matmul_path::quant_bf16:
    case matmul_path::quant_onednn_bf16:
    case matmul_path::quant_dpbf16:
      return weight_storage::quantized;
    default:
      return weight_storage::bf16_panels;
  }
}

bool matmul_plan::consistent() const {
  return std::all_of(paths.begin(), paths.end(), [&](matmul_path p) { return storage_of(p) == storage(); });
}

const char* to_string(kernel_choice c) {
  return c == kernel_choice::automatic ? "auto" : c == kernel_choice::onednn ? "onednn" : "hearth";
}

std::optional<kernel_choice> kernel_choice_from_name(std::string_view name) {
  for (auto c : {kernel_choice::automatic, kernel_choice::onednn, kernel_choice::hearth}) {
    if (name == to_string(c)) return c;
  }
  return std::nullopt;
}

std::string describe(const matmul_plan& plan) {
  if (plan == matmul_plan::uniform(plan.paths[0])) return to_string(plan.paths[0]);
  std::string out;
  for (matmul_path p : plan.paths) out += std::string(out.empty() ? "" : "/") + to_string(p);
  return out;
}

}  // namespace hearth
