#pragma once
// What several subcommands share: the one-line error exit, the generated-model note, and how
// compute is configured.
#include <CLI/CLI.hpp>

#include <string>

#include "kernels/matmul.hpp"

namespace hearth::cli {

//! Prints "hearth: <message>" on stderr and returns exit code 1.
int fail(const std::string& message);

//! The one line `serve` and `generate` print for a model from `hearth model make`.
std::string generated_model_note(const std::string& model_path);

//! --threads, --compute and --kernels, as `generate` and `bench kernels` take them.
struct compute_args {
  int threads = 0;  //!< 0: every core
  std::string compute = "bf16";
  std::string kernels = "auto";
};

void add_compute_options(CLI::App* cmd, compute_args& a);
//! Sets the calling thread's kernel threads (before its first kernel) and returns the compute type.
compute_type apply_compute_args(const compute_args& a);
kernel_choice kernels_of(const compute_args& a);

}  // namespace hearth::cli
