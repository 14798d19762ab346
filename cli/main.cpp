// hearth: one executable, one subcommand per household task.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.hpp"
#include "kernels/cpu_features.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Hearth: one home server, one model, many household services"};
  app.set_version_flag("--version", "hearth " HEARTH_VERSION);  // project(VERSION) in CMakeLists.txt
  app.require_subcommand(1);
  int exit_code = 0;
  hearth::cli::add_model_commands(app, exit_code);
  hearth::cli::add_generate_command(app, exit_code);
  hearth::cli::add_bench_command(app, exit_code);
  hearth::cli::add_serve_command(app, exit_code);
  hearth::cli::add_worker_command(app, exit_code);
  hearth::cli::add_chat_command(app, exit_code);
  hearth::cli::add_status_command(app, exit_code);
  hearth::cli::add_keygen_command(app, exit_code);
  // An option error is one line, "hearth: <what>", and exit code 1 (CLI11's own codes, 104-114,
  // are not the CLI's); --help and --version end here too, with 0.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    std::string line = "hearth: ";
    line += e.what();
    line += " (see --help)\n";
    return line;
  });
  // A command reports what it expects as a value (hearth: <message>, exit code 1); an exception
  // that still escapes one (the standard library's, at an edge) ends the same way, not in
  // std::terminate. CLI::ParseError, a std::exception too, is caught first.
  // A mask that names no feature would quietly measure the wrong machine: refused before any work.
  if (const std::string bad = hearth::cpu_mask_error(); !bad.empty()) {
    std::fprintf(stderr, "hearth: %s\n", bad.c_str());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
