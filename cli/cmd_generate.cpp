// hearth generate: stream a completion of one prompt from a model file, then print timings.
// Runs the reference forward until the CPU backend lands; the flow (prefill, sample, stream) is
// the one the server's workers will follow.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "kernels/reference_model.hpp"
#include "kernels/sampler.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/tokenizer.hpp"

namespace hearth::cli {
namespace {

using clock_type = std::chrono::steady_clock;

struct generate_args {
  std::string model;
  std::string prompt;
  uint32_t n_predict = 64;
  uint32_t n_ctx = 0;  // 0: the model's training context
  bool chat = false;
  sampling_params sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 42};
};

int fail(const std::string& message) {
  std::fprintf(stderr, "hearth: %s\n", message.c_str());
  return 1;
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The prompt's tokens: raw text (special-token text stays text), or one chat turn formatted with
// the model's template (whose markers are special tokens by construction).
std::vector<token_id> prompt_tokens(const tokenizer& tok, const generate_args& a) {
  if (!a.chat) return tok.encode(a.prompt, {.add_bos = true, .parse_special = false});
  const auto& spec = tok.spec();
  const chat_message turn[] = {{"user", a.prompt}};
  auto piece = [&](token_id id) { return id == no_token ? std::string() : tok.token_bytes(id, true); };
  const chat_format format = detect_chat_format(spec.chat_template);
  if (format == chat_format::plain) {
    std::fprintf(stderr, "hearth: warning: %s chat template; formatting the turn as plain text\n",
                 spec.chat_template.empty() ? "the model has no" : "unrecognised");
  }
  const std::string text = format_chat(format, turn, true, piece(spec.bos), piece(spec.eos));
  return tok.encode(text, {.add_bos = false, .parse_special = true});
}

struct loaded_model {
  gguf::file file;
  tokenizer tok;
  reference_model model;
};

result<loaded_model> load(const generate_args& a) {
  auto f = gguf::file::open(a.model);
  if (!f) return f.error().to_error();
  auto hp = read_hparams(*f);
  if (!hp) return hp.error();
  auto tok = tokenizer::from_gguf(*f);
  if (!tok) return tok.error();
  auto w = load_reference_weights(*f, *hp);
  if (!w) return w.error();
  const uint32_t n_ctx = a.n_ctx ? a.n_ctx : hp->n_ctx_train;
  auto m = reference_model::create(*hp, std::move(*w), n_ctx);
  if (!m) return m.error();
  return loaded_model{std::move(*f), std::move(*tok), std::move(*m)};
}

int run_generate(const generate_args& a) {
  auto smp = sampler::create(a.sampling);
  if (!smp) return fail(smp.error().message);
  auto loaded = load(a);
  if (!loaded) return fail(loaded.error().message);
  auto& [file, tok, model] = *loaded;
  std::vector<token_id> tokens = prompt_tokens(tok, a);
  const size_t n_prompt = tokens.size();
  if (n_prompt == 0 || n_prompt >= model.n_ctx()) {
    return fail("prompt of " + std::to_string(n_prompt) + " tokens does not fit the context of " +
                std::to_string(model.n_ctx()));
  }

  const auto t0 = clock_type::now();
  std::span<const float> logits;
  for (size_t i = 0; i < n_prompt; ++i) logits = model.forward(tokens[i], static_cast<uint32_t>(i));
  const auto t_prefill = clock_type::now();

  stream_decoder out(tok);
  clock_type::time_point t_first = t_prefill;
  uint32_t n_generated = 0;
  while (n_generated < a.n_predict && tokens.size() < model.n_ctx()) {
    const token_id next = smp->sample(logits, tokens);
    if (n_generated++ == 0) t_first = clock_type::now();
    if (tok.is_end_of_generation(next)) break;
    tokens.push_back(next);
    std::fputs(out.push(next).c_str(), stdout);
    std::fflush(stdout);
    logits = model.forward(next, static_cast<uint32_t>(tokens.size() - 1));
  }
  std::fputs(out.flush().c_str(), stdout);
  std::fputs("\n", stdout);
  const auto t_end = clock_type::now();

  const double prefill_s = seconds_between(t0, t_prefill), decode_s = seconds_between(t_first, t_end);
  std::fprintf(stderr, "prompt %zu tokens, %.1f tok/s | TTFT %.1f ms | generated %u tokens, %.1f tok/s\n", n_prompt,
               static_cast<double>(n_prompt) / prefill_s, 1e3 * seconds_between(t0, t_first), n_generated,
               n_generated > 1 ? (n_generated - 1) / std::max(decode_s, 1e-9) : 0.0);
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("generate", "Stream a completion of one prompt");
  auto a = std::make_shared<generate_args>();
  auto& s = a->sampling;
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-p,--prompt", a->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", a->n_predict, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--ctx", a->n_ctx, "Context length (default: the model's)");
  cmd->add_flag("--chat", a->chat, "Format the prompt as one user turn with the model's chat template");
  cmd->add_option("--temperature", s.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "0 = off")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "1 = off")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "0 = off")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repetition_penalty, "1 = off")->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n, "Tokens the penalty looks back over")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Sampling seed: same seed, same text")->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run_generate(*a); });
}

}  // namespace hearth::cli
