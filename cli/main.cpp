// hearth: one executable, one subcommand per household task.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Hearth: one home server, one model, many household services"};
  app.set_version_flag("--version", "hearth 0.1.0");
  app.require_subcommand(1);
  int exit_code = 0;
  hearth::cli::add_model_commands(app, exit_code);
  hearth::cli::add_generate_command(app, exit_code);
  hearth::cli::add_bench_command(app, exit_code);
  hearth::cli::add_serve_command(app, exit_code);
  hearth::cli::add_chat_command(app, exit_code);
  hearth::cli::add_keygen_command(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
