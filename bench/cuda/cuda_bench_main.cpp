// hearth-cuda-bench: the CUDA kernels bench without the rest of Hearth, for a GPU machine that has
// none of our Debian libraries (scripts/gpu-check.sh). `hearth bench kernels --backend cuda` runs
// the same bench where the whole of Hearth is built.
//
//   hearth-cuda-bench (--model FILE | --preset tiny|small|1b) [--compute bf16|f32] [--device N]
//                     [--quick] [--json FILE]
// A preset is generated (random weights, bf16 or f32 as --compute) into the working directory.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "bench/cuda/cuda_bench.hpp"
#include "model/model_maker.hpp"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "hearth-cuda-bench: %s\nusage: hearth-cuda-bench (--model FILE | --preset tiny|small|1b) "
               "[--compute bf16|f32] [--device N] [--quick] [--json FILE]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  hearth::cuda_bench_options opt;
  std::string preset, json;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--model" && has_value) {
      opt.model_path = argv[++i];
    } else if (a == "--preset" && has_value) {
      preset = argv[++i];
    } else if (a == "--json" && has_value) {
      json = argv[++i];
    } else if (a == "--device" && has_value) {
      opt.device = std::atoi(argv[++i]);
    } else if (a == "--compute" && has_value) {
      const std::string_view c = argv[++i];
      if (c != "bf16" && c != "f32") return usage("--compute is bf16 or f32");
      opt.compute = c == "f32" ? hearth::compute_type::f32 : hearth::compute_type::bf16;
    } else {
      return usage(("unknown argument " + std::string(a)).c_str());
    }
  }
  if (opt.model_path.empty() == preset.empty()) return usage("give one of --model and --preset");
  if (!preset.empty()) {
    const hearth::model_preset* p = hearth::find_preset(preset);
    if (!p) return usage(("unknown preset " + preset).c_str());
    opt.model_path = preset + (opt.compute == hearth::compute_type::f32 ? "-f32.gguf" : "-bf16.gguf");
    const auto dtype =
        opt.compute == hearth::compute_type::f32 ? hearth::tensor_type::f32 : hearth::tensor_type::bf16;
    if (auto st = hearth::make_model(hearth::make_options{*p, dtype}, opt.model_path); !st) {
      std::fprintf(stderr, "hearth-cuda-bench: %s\n", st.error().message.c_str());
      return 1;
    }
  }
  auto r = hearth::run_cuda_bench(opt);
  if (!r) {
    std::fprintf(stderr, "hearth-cuda-bench: %s\n", r.error().message.c_str());
    return 1;
  }
  hearth::print_cuda_bench(*r, stdout);
  if (!json.empty()) std::ofstream(json) << hearth::cuda_bench_json(*r) << "\n";
  return 0;
}
