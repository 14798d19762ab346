// hearth chat: talk to a running `hearth serve` through the C++ client.
//   hearth chat "question"      one answer, streamed, then exit
//   echo question | hearth chat one answer to all of standard input
//   hearth chat                 a conversation (REPL) when standard input is a terminal:
//                               a line ending in '\' continues on the next; /reset forgets the
//                               conversation; /quit or Ctrl-D ends it
// Exit codes: 0 answered; 1 bad options or key file; 2 the server could not be reached or went
// silent (timeout, transport); 3 the server refused or failed the request (its code is printed).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/server_connection.hpp"

namespace hearth::cli {
namespace {

struct chat_args {
  std::vector<std::string> question;
  server_args server;
  std::string system;
  uint32_t max_tokens = 256;
  double temperature = 0.8;
  uint64_t seed = 0;
  uint32_t timeout_ms = 30000;
  bool verbose = false;
};

// Streams one answer to stdout; the completion or the error.
client::outcome<client::completion> answer(client::client& c, const chat_args& a,
                                           const std::vector<client::chat_turn>& turns) {
  const std::chrono::milliseconds timeout(a.timeout_ms);
  auto done = c.generate({.messages = turns, .max_tokens = a.max_tokens, .temperature = a.temperature,
                          .seed = a.seed, .first_token_timeout = timeout, .idle_timeout = timeout},
                         [](const client::token& t) {
                           std::fputs(t.text.c_str(), stdout);
                           std::fflush(stdout);
                           return true;
                         });
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (done && a.verbose) {
    const double decode_s = (done->client_e2e_ms - done->client_ttft_ms) / 1e3;
    std::fprintf(stderr, "TTFT %.1f ms | %u tokens, %.1f tok/s | prompt %u tokens (%u cached) | %s\n",
                 done->client_ttft_ms, done->completion_tokens,
                 done->completion_tokens > 1 && decode_s > 0 ? (done->completion_tokens - 1) / decode_s : 0.0,
                 done->prompt_tokens, done->cached_tokens, done->finish_reason.c_str());
  }
  return done;
}

std::vector<client::chat_turn> opening(const chat_args& a) {
  if (a.system.empty()) return {};
  return {{"system", a.system}};
}

int one_shot(client::client& c, const chat_args& a, std::string question) {
  auto turns = opening(a);
  turns.push_back({"user", std::move(question)});
  auto done = answer(c, a, turns);
  return done ? 0 : report(done.error());
}

// Reads one message: lines ending in '\' continue it. False at end of input.
bool read_message(std::string& out) {
  out.clear();
  std::string line;
  std::fputs("> ", stdout);
  std::fflush(stdout);
  while (std::getline(std::cin, line)) {
    if (line.empty() || line.back() != '\\') {
      out += line;
      return true;
    }
    line.pop_back();
    out += line + "\n";
    std::fputs(". ", stdout);
    std::fflush(stdout);
  }
  return !out.empty();
}

int conversation(client::client& c, const chat_args& a) {
  std::printf(
      "hearth chat on %s: end a line with \\ to continue it; /reset forgets the conversation; "
      "/quit or Ctrl-D ends it\n",
      a.server.endpoint.c_str());
  auto turns = opening(a);
  std::string text;
  while (read_message(text)) {
    if (text == "/quit" || text == "/exit") break;
    if (text == "/reset") {
      turns = opening(a);
      std::printf("(conversation cleared)\n");
      continue;
    }
    if (text.find_first_not_of(" \t\n") == std::string::npos) continue;
    turns.push_back({"user", text});
    auto done = answer(c, a, turns);
    if (!done) {
      turns.pop_back();
      const int code = report(done.error());
      if (code == exit_unreachable) return code;
      continue;
    }
    turns.push_back({"assistant", done->text});
  }
  return 0;
}

int run_chat(const chat_args& a) {
  auto opt = client_options(a.server, std::chrono::milliseconds(std::min<uint32_t>(a.timeout_ms, 10000)));
  if (!opt) return fail(opt.error().message);
  auto c = client::client::connect(*opt);
  if (!c) return report(c.error());
  if (!a.question.empty()) {
    std::string q;
    for (const auto& w : a.question) q += (q.empty() ? "" : " ") + w;
    return one_shot(**c, a, q);
  }
  if (!::isatty(STDIN_FILENO)) {
    std::string all((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    while (!all.empty() && (all.back() == '\n' || all.back() == '\r')) all.pop_back();
    if (all.empty()) return fail("nothing to ask: standard input is empty");
    return one_shot(**c, a, all);
  }
  return conversation(**c, a);
}

}  // namespace

void add_chat_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("chat", "Chat with a running `hearth serve` (one question, piped input, or a REPL)");
  auto a = std::make_shared<chat_args>();
  cmd->add_option("question", a->question, "Ask this and exit (else standard input, or a conversation on a terminal)");
  add_server_options(cmd, a->server, "This client's key file from `hearth keygen` (CURVE)", "chat");
  cmd->add_option("--system", a->system, "A system message opening the conversation");
  cmd->add_option("-n,--max-tokens", a->max_tokens, "Tokens per answer at most")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--timeout", a->timeout_ms, "Milliseconds to wait for the server (connect, first token, each token)")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", a->verbose, "Print TTFT and tokens per second after each answer (stderr)");
  cmd->callback([a, &exit_code] { exit_code = run_chat(*a); });
}

}  // namespace hearth::cli
