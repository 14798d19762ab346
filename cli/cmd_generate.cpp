// hearth generate: stream a completion of one prompt from a model file, then print timings.
// One sequence on the CPU backend: prefill the prompt in one iteration, then one decode iteration
// per token; the flow (prefill, sample, stream) is the one the server's workers follow.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/sampler.hpp"
#include "model/chat_prompt.hpp"
#include "model/model_file.hpp"

namespace hearth::cli {
namespace {

using clock_type = std::chrono::steady_clock;

struct generate_args {
  std::string model;
  std::string prompt;
  uint32_t n_predict = 64;
  bool chat = false;
  compute_args compute;
  sampling_params sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 42};
};

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The prompt's tokens: raw text (special-token text stays text), or one chat turn formatted with
// the model's template (whose markers are special tokens by construction).
// A file without a template gets plain "role: content" lines; one whose template Hearth does not
// recognise is refused, naming the file.
result<std::vector<token_id>> prompt_tokens(const tokenizer& tok, const generate_args& a) {
  if (!a.chat) return tok.encode(a.prompt, {.add_bos = true, .parse_special = false});
  const chat_message turn[] = {{"user", a.prompt}};
  auto tokens = encode_chat(tok, turn);
  if (!tokens) return error{tokens.error().code, a.model + ": " + tokens.error().message};
  return tokens;
}

result<std::unique_ptr<cpu_backend>> load_backend(const model_file& m, compute_type ct,
                                                  kernel_choice kernels) {
  progress_line loading("loading " + m.path);
  auto be = cpu_backend::load(
      *m.gguf, {.compute = ct, .kernels = kernels, .progress = [&](uint64_t done, uint64_t total) {
                  loading.update(done, total);
                }});
  loading.finish();
  return be;
}

int run_generate(const generate_args& a) {
  auto smp = sampler::create(a.sampling);
  if (!smp) return fail(smp.error().message);
  auto model = open_model_file(a.model);
  if (!model) return fail(model.error().message);
  const tokenizer& tok = *model->tok;
  const uint32_t n_ctx = model->hp.n_ctx_train;
  // The prompt is checked before the weights are read.
  auto prompt = prompt_tokens(tok, a);
  if (!prompt) return fail(prompt.error().message);
  std::vector<token_id> tokens = std::move(*prompt);
  const size_t n_prompt = tokens.size();
  if (n_prompt == 0 || n_prompt >= n_ctx) {
    return fail("prompt of " + std::to_string(n_prompt) + " tokens does not fit the context of " +
                std::to_string(n_ctx));
  }
  auto loaded = load_backend(*model, apply_compute_args(a.compute), kernels_of(a.compute));
  if (!loaded) return fail(loaded.error().message);
  const std::unique_ptr<cpu_backend>& backend = *loaded;
  // Once nothing else can fail (a refusal stays one line): the text to come is noise.
  if (model->generated) std::fprintf(stderr, "hearth: %s\n", generated_model_note(a.model).c_str());
  // One sequence owns the whole pool, its blocks in order.
  std::vector<uint32_t> blocks(backend->kv().n_blocks());
  std::iota(blocks.begin(), blocks.end(), 0u);
  const uint64_t capacity = uint64_t{blocks.size()} * backend->kv().layout().block_size;
  const uint64_t limit = std::min<uint64_t>(n_ctx, capacity);

  batch_logits logits;
  const auto t0 = clock_type::now();
  const batch_seq prefill{tokens, 0, blocks};
  if (auto st = backend->forward({&prefill, 1}, logits); !st) return fail(st.error().message);
  const auto t_prefill = clock_type::now();

  stream_decoder out(tok);
  clock_type::time_point t_first = t_prefill;
  uint32_t n_generated = 0;
  while (n_generated < a.n_predict && tokens.size() < limit) {
    const token_id next = smp->sample(logits.last(0), tokens);
    if (n_generated++ == 0) t_first = clock_type::now();
    if (tok.is_end_of_generation(next)) break;
    tokens.push_back(next);
    std::fputs(out.push(next).c_str(), stdout);
    std::fflush(stdout);
    const batch_seq step{{&tokens.back(), 1}, static_cast<uint32_t>(tokens.size() - 1), blocks};
    if (auto st = backend->forward({&step, 1}, logits); !st) return fail(st.error().message);
  }
  std::fputs(out.flush().c_str(), stdout);
  std::fputs("\n", stdout);
  std::fflush(stdout);  // the text ends before the timings on stderr begin
  const auto t_end = clock_type::now();

  const double prefill_s = seconds_between(t0, t_prefill), decode_s = seconds_between(t_first, t_end);
  std::fprintf(stderr, "prompt %zu tokens, %.1f tok/s | TTFT %.1f ms | generated %u tokens, %.1f tok/s\n",
               n_prompt, static_cast<double>(n_prompt) / prefill_s, 1e3 * seconds_between(t0, t_first),
               n_generated, n_generated > 1 ? (n_generated - 1) / std::max(decode_s, 1e-9) : 0.0);
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
  add_compute_options(cmd, a->compute);
  cmd->add_flag("--chat", a->chat, "Format the prompt as one user turn with the model's chat template");
  cmd->add_option("--temperature", s.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "0 = off")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "1 = off")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "0 = off")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repetition_penalty, "1 = off")->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n, "Tokens the penalty looks back over")
      ->capture_default_str();
  cmd->add_option("--seed", s.seed, "Sampling seed: same seed, same text")->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = run_generate(*a); });
}

}  // namespace hearth::cli
