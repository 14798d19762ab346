// hearth chat: talk to a running `hearth serve` through the C++ client.
//   hearth chat "question"      one answer, streamed, then exit
//   echo question | hearth chat one answer to all of standard input
//   hearth chat                 a conversation (REPL) when standard input is a terminal:
//                               a line ending in '\' continues on the next; Ctrl-C stops an
//                               answer (its request is cancelled); /help lists the commands;
//                               Ctrl-C at the prompt, Ctrl-D or /quit ends it. A conversation
//                               the server finds too long loses its oldest exchanges.
// Exit codes: 0 answered; 1 bad options or key file; 2 the server could not be reached or went
// silent (timeout, transport); 3 the server refused or failed the request (its code is printed).
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

// Ctrl-C in a conversation: set by the handler, taken by the answer loop (which cancels the
// request) and by the prompt (whose read it interrupts).
std::atomic<bool> interrupted{false};

void on_interrupt(int) {
  interrupted = true;
}

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: Ctrl-C at the prompt ends its read
  sigaction(SIGINT, &sa, nullptr);
}

void print_timings(const client::completion& done) {
  const double decode_s = (done.client_e2e_ms - done.client_ttft_ms) / 1e3;
  std::fprintf(stderr, "TTFT %.1f ms | %u tokens, %.1f tok/s | prompt %u tokens (%u cached) | %s\n",
               done.client_ttft_ms, done.completion_tokens,
               done.completion_tokens > 1 && decode_s > 0 ? (done.completion_tokens - 1) / decode_s : 0.0,
               done.prompt_tokens, done.cached_tokens, done.finish_reason.c_str());
}

// Streams one answer to stdout; the completion or the error. Ctrl-C (in a conversation, where
// it is caught) cancels the request: the result is then the server's `cancelled`.
client::outcome<client::completion> answer(client::client& c, const chat_args& a,
                                           const std::vector<client::chat_turn>& turns) {
  const std::chrono::milliseconds timeout(a.timeout_ms);
  auto s = c.start({.messages = turns,
                    .max_tokens = a.max_tokens,
                    .temperature = a.temperature,
                    .seed = a.seed,
                    .first_token_timeout = timeout,
                    .idle_timeout = timeout});
  if (!s) return s.error();
  interrupted = false;
  bool cancelling = false, printed = false;
  while (!s->ended()) {
    if (interrupted.exchange(false) && !cancelling) {
      s->cancel();  // the stream then drains to its terminal message
      cancelling = true;
    }
    if (!s->ready()) {
      c.wait(std::chrono::milliseconds(100));  // a signal ends the wait early
      continue;
    }
    if (auto t = s->next(); t && !cancelling) {
      std::fputs(t->text.c_str(), stdout);
      std::fflush(stdout);
      printed = true;
    }
  }
  const auto& done = s->result();
  if (printed || done) std::fputs("\n", stdout);
  std::fflush(stdout);
  if (done && a.verbose) print_timings(*done);
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

// The next answer to `turns` (ending in the new question). While the server finds the
// conversation too long, its oldest exchange (a question and its answer) goes, never the
// system message or the new question; once answered, the turns dropped are gone from `turns`
// too. A question too long even alone leaves `turns` as it was.
client::outcome<client::completion> answer_fitting(client::client& c, const chat_args& a,
                                                   std::vector<client::chat_turn>& turns) {
  const size_t first = !turns.empty() && turns.front().role == "system" ? 1 : 0;
  const auto before = turns;
  size_t dropped = 0;
  for (;;) {
    auto done = answer(c, a, turns);
    if (!done && done.error().code == "too_long" && turns.size() >= first + 3) {
      turns.erase(turns.begin() + static_cast<std::ptrdiff_t>(first),
                  turns.begin() + static_cast<std::ptrdiff_t>(first + 2));
      ++dropped;
      continue;
    }
    if (!done) {
      turns = before;
      return done;
    }
    if (dropped > 0)
      std::printf(
          "(the conversation outgrew what the server accepts: dropped its oldest %zu exchange%s; "
          "/reset starts afresh)\n",
          dropped, dropped == 1 ? "" : "s");
    return done;
  }
}

constexpr const char* help_text =
    "/help    this list\n"
    "/reset   forget the conversation (the --system message stays)\n"
    "/quit    end it (also /exit, Ctrl-D, or Ctrl-C at the prompt)\n"
    "End a line with \\ to continue the message on the next. Ctrl-C stops an answer.\n";

// Reads one message: lines ending in '\' continue it. False at end of input or on Ctrl-C.
// Waits until standard input has a line or Ctrl-C came. A signal that lands between a look at
// the flag and a blocking read would not interrupt that read (the chat then hung at its prompt
// under load), so no read blocks without polling; standard input is unbuffered (conversation()),
// so poll sees every byte not yet read.
bool wait_for_input() {
  for (;;) {
    if (interrupted) return false;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready > 0 || (ready < 0 && errno != EINTR)) return true;  // a line, or an error getline reports
  }
}

bool read_message(std::string& out) {
  out.clear();
  interrupted = false;
  std::string line;
  std::fputs("> ", stdout);
  std::fflush(stdout);
  while (wait_for_input() && std::getline(std::cin, line)) {
    if (line.empty() || line.back() != '\\') {
      out += line;
      return true;
    }
    line.pop_back();
    out += line + "\n";
    std::fputs(". ", stdout);
    std::fflush(stdout);
  }
  std::fputs("\n", stdout);  // the shell's prompt on a line of its own
  return !out.empty() && !interrupted;
}

int conversation(client::client& c, const chat_args& a) {
  std::printf("hearth chat on %s: /help lists the commands; Ctrl-C stops an answer; Ctrl-D ends the chat\n",
              a.server.endpoint.c_str());
  catch_interrupts();
  std::setvbuf(stdin, nullptr, _IONBF, 0);  // for wait_for_input: no line waits in stdio's buffer
  auto turns = opening(a);
  std::string text;
  while (read_message(text)) {
    if (text == "/quit" || text == "/exit") break;
    if (text == "/help" || text == "/?") {
      std::fputs(help_text, stdout);
      continue;
    }
    if (text == "/reset") {
      turns = opening(a);
      std::printf("(conversation cleared)\n");
      continue;
    }
    if (text.starts_with('/') && text.find_first_of(" \n") == std::string::npos) {
      std::printf("unknown command %s: /help lists them\n", text.c_str());
      continue;
    }
    if (text.find_first_not_of(" \t\n") == std::string::npos) continue;
    turns.push_back({"user", text});
    auto done = answer_fitting(c, a, turns);
    if (!done) {
      turns.pop_back();
      if (done.error().code == "cancelled") {
        std::printf("(answer stopped)\n");
        continue;
      }
      const int code = report(done.error());
      if (code == exit_unreachable) return code;
      continue;
    }
    turns.push_back({"assistant", done->text});
  }
  return 0;
}

// One line on stderr when the server's model is a generated one: its answers are noise.
void note_generated_model(client::client& c) {
  auto m = c.models();
  if (!m || !m->contains("models") || !(*m)["models"].is_array()) return;
  for (const auto& model : (*m)["models"])
    if (model.is_object() && model.value("generated", false))
      std::fprintf(
          stderr,
          "hearth: the server's model '%s' is a generated one (random weights): expect gibberish, not "
          "answers\n",
          model.value("name", std::string()).c_str());
}

int run_chat(const chat_args& a) {
  auto opt = client_options(a.server, std::chrono::milliseconds(std::min<uint32_t>(a.timeout_ms, 10000)));
  if (!opt) return fail(opt.error().message);
  auto c = client::client::connect(*opt);
  if (!c) return report_connect(c.error());
  note_generated_model(**c);
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
  auto* cmd =
      app.add_subcommand("chat", "Chat with a running `hearth serve` (one question, piped input, or a REPL)");
  auto a = std::make_shared<chat_args>();
  cmd->add_option("question", a->question,
                  "Ask this and exit (else standard input, or a conversation on a terminal)");
  add_server_options(cmd, a->server, "This client's key file from `hearth keygen` (CURVE)", "chat");
  cmd->add_option("--system", a->system, "A system message opening the conversation");
  cmd->add_option("-n,--max-tokens", a->max_tokens, "Tokens per answer at most")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--timeout", a->timeout_ms,
                  "Milliseconds to wait for the server (connect, first token, each token)")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", a->verbose, "Print TTFT and tokens per second after each answer (stderr)");
  cmd->callback([a, &exit_code] { exit_code = run_chat(*a); });
}

}  // namespace hearth::cli
