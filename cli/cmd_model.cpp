// hearth model make | info: create generated models, describe any GGUF model file (and
// `model tokenize`, in cmd_tokenize.cpp).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/model_maker.hpp"
#include "model/quant_mix.hpp"
#include "model/vocab.hpp"

namespace hearth::cli {
namespace {

struct make_args {
  std::string preset = "tiny";
  std::string dtype = "f32";
  std::string tokenizer = "bpe";
  std::string arch = "llama";
  std::string chat_template;  // empty: the vocabulary's own
  uint64_t seed = 1;
  uint32_t n_ctx = 2048;
  uint32_t n_layer = 0;  // 0: the preset's
  std::string out;
};

int run_make(const make_args& a) {
  const model_preset* preset = find_preset(a.preset);
  const auto ft = file_type_from_name(a.dtype);
  if (!preset || !ft) return fail("unknown preset or dtype");  // CLI11 checks both; kept for safety
  // Every --dtype is a llama-quantize preset: q4_0 too gives the head q6_K, as llama.cpp's does.
  make_options opt{*preset, base_type(*ft), a.seed,
                   a.tokenizer == "spm" ? tokenizer_kind::spm : tokenizer_kind::bpe, a.n_ctx};
  opt.mix = *ft;
  opt.phi4_mini_vocab = a.tokenizer == "gpt-4o";
  if (a.n_layer != 0) opt.preset.n_layer = a.n_layer;
  if (!a.chat_template.empty())
    opt.chat = a.chat_template == "llama3.1" ? chat_format::llama31 : chat_format::qwen25;
  for (const model_arch m : {model_arch::llama, model_arch::qwen2, model_arch::qwen3, model_arch::phi3,
                             model_arch::gemma2, model_arch::gemma3}) {
    if (a.arch == to_string(m)) opt.arch = m;
  }
  progress_line writing("writing " + a.out);
  const auto s = make_model(opt, a.out, [&](uint64_t done, uint64_t total) { writing.update(done, total); });
  writing.finish();
  if (!s) return fail(s.error().message);
  std::printf("wrote %s (%s, preset %s, %s, seed %llu)\n", a.out.c_str(), a.arch.c_str(), preset->name,
              a.dtype.c_str(), static_cast<unsigned long long>(a.seed));
  return 0;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  for (; b >= 1024 && u < 4; ++u) b /= 1024;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

std::string tensor_type_summary(const gguf::file& f, uint64_t& n_params) {
  std::map<std::string, int> counts;
  n_params = 0;
  for (const auto& t : f.tensors()) {
    ++counts[traits_of(t.type).name];
    n_params += t.n_elements;
  }
  std::string s = std::to_string(f.tensors().size()) + ":";
  for (const auto& [name, n] : counts) s += " " + name + " " + std::to_string(n);
  return s;
}

// ", file type q4_k_m" from general.file_type (llama.cpp's LLAMA_FTYPE), a number for one that
// Hearth does not write; nothing when the key is absent.
std::string file_type_note(const gguf::file& f) {
  const auto number = f.get_uint("general.file_type");
  if (!number) return "";
  for (const file_type ft : file_types()) {
    if (static_cast<uint64_t>(ft) == *number) return std::string(", file type ") + to_string(ft);
  }
  return ", file type " + std::to_string(*number);
}

void print_vocab(const vocab_spec& v) {
  std::printf("vocabulary     %s%s, %zu tokens, %zu merges, bos %d, eos %d, eot %d\n",
              v.kind == tokenizer_kind::bpe ? "bpe" : "spm",
              v.kind == tokenizer_kind::bpe ? (" (" + v.pre + ")").c_str() : "", v.tokens.size(),
              v.merges.size(), v.bos, v.eos, v.eot);
  std::printf("chat template  %s\n", chat_format_name(v.chat_template));
}

int run_info(const std::string& path) {
  auto f = gguf::file::open(path);
  if (!f) return fail(f.error().message());
  auto hp = read_hparams(*f);
  if (!hp) return fail(hp.error().message);
  auto vocab = read_vocab(*f);
  if (!vocab) return fail(vocab.error().message);
  uint64_t n_params = 0;
  const std::string types = tensor_type_summary(*f, n_params);
  std::printf("file           %s (%s, GGUF v%u, alignment %llu)\n", path.c_str(),
              human_bytes(f->size_bytes()).c_str(), f->version(),
              static_cast<unsigned long long>(f->alignment()));
  std::printf("architecture   %s%s\n", to_string(hp->arch),
              hp->name.empty() ? "" : (" \"" + hp->name + "\"").c_str());
  std::printf("parameters     %.2f M (dim %u, %u layers, %u heads / %u KV heads, head dim %u, ffn %u)\n",
              static_cast<double>(n_params) / 1e6, hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv,
              hp->head_dim, hp->n_ff);
  std::printf("context        %u tokens (rope base %g, %s pairs%s)\n", hp->n_ctx_train, hp->rope_freq_base,
              hp->pairing == rope_pairing::adjacent ? "adjacent" : "half-split",
              hp->rope_freq_factors.empty() ? "" : ", scaled frequencies");
  std::printf("tensors        %s%s%s%s\n", types.c_str(), file_type_note(*f).c_str(),
              hp->tied_output ? ", output tied to embedding" : "", hp->has_qkv_bias ? ", q/k/v biases" : "");
  if (hp->has_qk_norm || hp->fused_qkv) {
    std::printf("family         %s%s\n", hp->has_qk_norm ? "q/k norms per head" : "fused qkv and gate/up",
                hp->rope_attn_factor != 1.0f ? ", LongRoPE (short factors)" : "");
  }
  print_vocab(*vocab);
  return 0;
}

}  // namespace

void add_model_commands(CLI::App& app, int& exit_code) {
  auto* model = app.add_subcommand("model", "Create or inspect GGUF model files");
  model->require_subcommand(1);

  auto* make = model->add_subcommand(
      "make", "Write a deterministic generated model (random weights, real vocabulary)");
  auto args = std::make_shared<make_args>();
  make->add_option("--preset", args->preset, "tiny | small | 1b")
      ->check(CLI::IsMember({"tiny", "small", "1b"}))
      ->capture_default_str();
  std::vector<std::string> dtypes;
  for (const file_type ft : file_types()) dtypes.emplace_back(to_string(ft));
  make->add_option("--dtype", args->dtype,
                   "Weight type, or a llama-quantize mix (q4_k_m: q4_K with q6_K for the head and some "
                   "attn_v / ffn_down, as llama.cpp's presets)")
      ->check(CLI::IsMember(dtypes))
      ->capture_default_str();
  make->add_option("--arch", args->arch,
                   "llama | qwen2 (q/k/v biases) | qwen3 (q/k norms) | phi3 (fused qkv, gate/up) | gemma2 "
                   "(GeGLU, post-norms, soft-capping, sliding layers) | gemma3 (and q/k norms, 5 local : 1 "
                   "global); the Qwen, Phi-3 and Gemma families bring their own tokenizer and chat template")
      ->check(CLI::IsMember({"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}))
      ->capture_default_str();
  make->add_option("--tokenizer", args->tokenizer,
                   "bpe (Llama 3 style) | spm (Llama 2 style), llama only | gpt-4o (Phi-4-mini's byte-level "
                   "BPE), phi3 only")
      ->check(CLI::IsMember({"bpe", "spm", "gpt-4o"}))
      ->capture_default_str();
  make->add_option("--chat-template", args->chat_template,
                   "llama3.1 (llama, bpe) | qwen2.5 (qwen2, qwen3): the family's template with tools, "
                   "instead of the vocabulary's own (Llama 3, ChatML)")
      ->check(CLI::IsMember({"llama3.1", "qwen2.5"}));
  make->add_option("--seed", args->seed, "Seed: same seed, same file")->capture_default_str();
  make->add_option("--ctx", args->n_ctx, "Context length")->capture_default_str();
  make->add_option("--layers", args->n_layer,
                   "Layers, instead of the preset's (llama.cpp b4748 runs gemma2 only with 26, 42 or 46)");
  make->add_option("-o,--output", args->out, "Output file")->required();
  make->callback([args, &exit_code] { exit_code = run_make(*args); });

  auto* info = model->add_subcommand("info", "Describe a GGUF model file; exit 1 with a reason if it is bad");
  auto path = std::make_shared<std::string>();
  info->add_option("file", *path, "GGUF file")->required();
  info->callback([path, &exit_code] { exit_code = run_info(*path); });

  add_tokenize_command(*model, exit_code);
}

}  // namespace hearth::cli
