#pragma once
// Each subcommand registers itself on the app and runs from a callback; the callback stores the
// process exit code here (0 success, 1 failure with a one-line reason on stderr; `chat` adds
// 2 and 3, see server_connection.hpp).
#include <CLI/CLI.hpp>

namespace hearth::cli {

void add_model_commands(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& model, int& exit_code);  //!< `model tokenize`, under `model`
void add_generate_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_bench_engine_command(CLI::App& bench, int& exit_code);
void add_bench_profile_command(CLI::App& bench, int& exit_code);
void add_bench_calibrate_command(CLI::App& bench, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_worker_command(CLI::App& app, int& exit_code);
void add_keygen_command(CLI::App& app, int& exit_code);
void add_chat_command(CLI::App& app, int& exit_code);
void add_status_command(CLI::App& app, int& exit_code);
void add_bench_serve_command(CLI::App& bench, int& exit_code);
void add_bench_sweep_command(CLI::App& bench, int& exit_code);

}  // namespace hearth::cli
