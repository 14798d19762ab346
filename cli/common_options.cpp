#include "cli/common_options.hpp"

#include <cstdio>
#include <thread>

#include "kernels/parallel.hpp"

namespace hearth::cli {

int fail(const std::string& message) {
  std::fprintf(stderr, "hearth: %s\n", message.c_str());
  return 1;
}

std::string generated_model_note(const std::string& model_path) {
  std::string note = model_path;
  note +=
      " is a generated model (random weights, from `hearth model make`): its text is gibberish; "
      "for answers serve a real GGUF file (docs/model-files.md)";
  return note;
}

void add_compute_options(CLI::App* cmd, compute_args& a) {
  cmd->add_option("--threads", a.threads, "Compute threads (0: every core)")->capture_default_str();
  cmd->add_option("--compute", a.compute, "Matrix compute type")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--kernels", a.kernels,
                  "Matmul paths to choose among by measuring: auto (all this CPU has), onednn, hearth")
      ->check(CLI::IsMember({"auto", "onednn", "hearth"}))
      ->capture_default_str();
}

compute_type apply_compute_args(const compute_args& a) {
  set_kernel_threads(a.threads > 0 ? a.threads : static_cast<int>(std::thread::hardware_concurrency()));
  return a.compute == "f32" ? compute_type::f32 : compute_type::bf16;
}

kernel_choice kernels_of(const compute_args& a) {
  return kernel_choice_from_name(a.kernels).value_or(kernel_choice::automatic);  // CLI11 checked it
}

}  // namespace hearth::cli
