// hearth: one executable, one subcommand per household task.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Hearth: one home server, one model, many household services"};
  app.set_version_flag("--version", "hearth " HEARTH_VERSION);  // project(VERSION) in CMakeLists.txt
  app.require_subcommand(1);
  int exit_code = 0;
  hearth::cli::add_model_commands(app, exit_code);
  hearth::cli::add_generate_command(app, exit_code);
  hearth::cli::add_bench_command(app, exit_code);
  hearth::cli::add_serve_command(app, exit_code);
  hearth::cli::add_chat_command(app, exit_code);
  hearth::cli::add_status_command(app, exit_code);
  hearth::cli::add_keygen_command(app, exit_code);
  // A command reports what it expects as a value (hearth: <message>, exit code 1); an exception
  // that still escapes one (the standard library's, at an edge) ends the same way, not in
  // std::terminate. CLI11_PARSE catches CLI::ParseError, a std::exception too, first.
  try {
    CLI11_PARSE(app, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hearth: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
