// hearth: one executable, one subcommand per household task.
#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  CLI::App app{"Hearth: one home server, one model, many household services"};
  app.set_version_flag("--version", "hearth 0.1.0");
  app.require_subcommand(0, 1);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) std::puts(app.help().c_str());
  return 0;
}
