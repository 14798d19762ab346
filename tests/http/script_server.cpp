// The server of the client packages' tool round trip (tests/http/tools.mjs): the micro model
// with a chat template that has tools, behind the HTTP gateway, on a backend that answers every
// request with REPLY (tests/scripted_backend.hpp), since a generated model makes no real calls.
// Prints its URL, serves until its stdin closes.
//
//   http_script_server qwen2.5|llama3.1 REPLY
#include <cstdio>
#include <string_view>

#include "actors/engine.hpp"
#include "kernels/cpu_backend.hpp"
#include "micro_models.hpp"
#include "model/chat_tools.hpp"
#include "model/gguf.hpp"
#include "scripted_backend.hpp"
#include "server/http/gateway.hpp"

using namespace hearth;

namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "http_script_server: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view family = argc == 3 ? argv[1] : "";
  if (family != "qwen2.5" && family != "llama3.1")
    return fail("usage: http_script_server qwen2.5|llama3.1 REPLY");
  const chat_format f = family == "qwen2.5" ? chat_format::qwen25 : chat_format::llama31;
  const make_options opt = test::micro_tools_options(f);
  const std::vector<std::byte> bytes = model_writer(opt).to_bytes();
  auto file = gguf::file::parse(bytes);
  if (!file) return fail(file.error().message());
  auto tok = tokenizer::from_gguf(*file);
  if (!tok) return fail(tok.error().message);
  auto shared = std::make_shared<const tokenizer>(std::move(*tok));
  const test::backend_script script = test::answering(*shared, argv[2]);

  engine_config cfg;
  cfg.threads_per_worker = 1;
  auto eng = engine::start(cfg, shared, [&]() -> result<std::unique_ptr<backend>> {
    auto be =
        cpu_backend::load(*file, {.compute = compute_type::f32, .kv = kv_dtype::f32, .kv_tokens = 8192});
    if (!be) return be.error();
    return std::unique_ptr<backend>(std::make_unique<test::scripted_backend>(std::move(*be), script));
  });
  if (!eng) return fail(eng.error().message);
  http::gateway_options g;
  g.endpoint = "127.0.0.1:0";
  g.model = {"micro",   std::string(to_string(opt.arch)),         to_string(f),
             opt.n_ctx, static_cast<uint32_t>(shared->n_vocab()), true};
  auto gw = http::gateway::start(**eng, g);
  if (!gw) return fail(gw.error().message);
  std::printf("http_script_server: http://%s\n", (*gw)->endpoint().c_str());
  std::fflush(stdout);
  while (std::fgetc(stdin) != EOF) {
  }
  (*gw)->stop(std::chrono::milliseconds(0));
  return 0;
}
