// The CUDA backend: the backend contract (backend_contract.cpp runs over it), every family against
// its reference twin, and what only a device pool has: blocks that move whole between devices.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "backend_contract.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "model/model_maker.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

test::backend_loader cuda_loader() {
  return [](const gguf::file& f, const test::backend_options& o) -> std::unique_ptr<backend> {
    auto b = cuda_backend::load(
        f, {.compute = o.compute, .kv = o.kv, .block_size = o.block_size, .kv_tokens = o.kv_tokens});
    if (!b) FAIL(b.error().message);
    return std::move(*b);
  };
}

constexpr model_preset gqa{"gqa", 64, 2, 4, 2, 96, 600};

std::unique_ptr<test::test_model> make_gqa(tensor_type dtype) {
  static const vocab_spec v = make_vocab(make_options{gqa, tensor_type::f32, 1});
  return test::make_test_model(make_options{gqa, dtype, 11, tokenizer_kind::bpe, 512}, v);
}

std::vector<float> last_row(backend& be, std::span<const token_id> tokens, uint32_t start,
                            std::span<const uint32_t> blocks) {
  batch_logits out;
  const batch_seq seq{tokens, start, blocks};
  REQUIRE(be.forward({&seq, 1}, out).ok());
  return {out.last(0).begin(), out.last(0).end()};
}

}  // namespace

const std::vector<test::backend_under_test>& test::backends_under_test() {
  static const std::vector<backend_under_test> b{{"cuda", cuda_loader()}};
  return b;
}

TEST_CASE("every family's logits match its reference twin", "[cuda][families]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  struct config {
    model_arch arch;
    bool long_rope;  // phi3's LongRoPE: frequency factors and an attention factor
  };
  for (const config c :
       {config{model_arch::qwen3, false}, config{model_arch::phi3, false}, config{model_arch::phi3, true},
        config{model_arch::gemma2, false}, config{model_arch::gemma3, false}}) {
    // The CPU backend's bounds for the same files (test_model_families.cpp, test_gemma.cpp); a
    // q8_0 file is dequantized on upload and rounded to bf16 like a bf16 one.
    const double depth = c.arch == model_arch::gemma3 ? 2.5 : c.arch == model_arch::gemma2 ? 1.5 : 1.0;
    for (auto [dtype, ct, tol] : {std::tuple{tensor_type::f32, compute_type::f32, 1e-4},
                                  std::tuple{tensor_type::bf16, compute_type::bf16, 2e-2 * depth},
                                  std::tuple{tensor_type::q8_0, compute_type::bf16, 2e-2 * depth}}) {
      INFO(to_string(c.arch) << (c.long_rope ? " LongRoPE " : " ") << traits_of(dtype).name);
      make_options opt = test::family_options(c.arch, dtype);
      if (c.arch == model_arch::gemma3) opt.preset.n_layer = 6;  // so that one layer is global
      auto w = model_writer(opt);
      if (c.long_rope) {
        w.add_tensor("rope_factors_long.weight", tensor_type::f32, {8},
                     test::floats_bytes(std::vector<float>(8, 4.0f)));
        w.add_tensor("rope_factors_short.weight", tensor_type::f32, {8},
                     test::floats_bytes({1.0f, 1.1f, 1.3f, 1.7f, 2.0f, 2.5f, 3.0f, 4.0f}));
        w.set("phi3.rope.scaling.attn_factor", 1.2f);
      }
      auto m = test::parse(w);
      std::vector<uint32_t> blocks(64);
      for (uint32_t i = 0; i < blocks.size(); ++i) blocks[i] = (i * 37) % 64;
      test::check_backend_twin(cuda_loader(), m.file, ct, tol, test::random_tokens(40, 600, rng), blocks, 4,
                               8);
    }
  }
}

TEST_CASE("the device pool copies whole blocks out and in, and refuses bad copies", "[cuda]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto m = make_gqa(tensor_type::f32);
  auto be = cuda_loader()(m->file, {.compute = compute_type::f32, .kv = kv_dtype::f32, .kv_tokens = 256});
  kv_store& pool = be->kv();
  const size_t n = pool.layout().block_bytes();
  const std::vector<uint32_t> ids{7, 2, 11};
  std::vector<std::byte> in(ids.size() * n), back(ids.size() * n);
  for (auto& b : in) b = static_cast<std::byte>(rng());
  REQUIRE(pool.write_blocks(ids, in).ok());
  REQUIRE(pool.read_blocks(ids, back).ok());
  CHECK(back == in);
  const std::vector<uint32_t> outside{pool.n_blocks()};
  CHECK(pool.read_blocks(outside, std::span(back).first(n)).error().code == errc::invalid_argument);
  CHECK(pool.write_blocks(ids, std::span(in).first(n)).error().code == errc::invalid_argument);
}

TEST_CASE("a prefill's blocks copied to another backend's pool decode as on the first", "[cuda]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto m = make_gqa(tensor_type::bf16);
  const test::backend_options o{.compute = compute_type::bf16, .kv = kv_dtype::bf16, .kv_tokens = 512};
  auto prefill = cuda_loader()(m->file, o);
  auto decode = cuda_loader()(m->file, o);
  const auto prompt = test::random_tokens(37, 600, rng);
  const std::vector<uint32_t> blocks{5, 0, 9, 3};
  const auto first = last_row(*prefill, prompt, 0, blocks);
  const token_id next = static_cast<token_id>(std::max_element(first.begin(), first.end()) - first.begin());
  std::vector<std::byte> handoff(blocks.size() * prefill->kv().layout().block_bytes());
  REQUIRE(prefill->kv().read_blocks(blocks, handoff).ok());
  REQUIRE(decode->kv().write_blocks(blocks, handoff).ok());
  CHECK(last_row(*decode, {&next, 1}, 37, blocks) == last_row(*prefill, {&next, 1}, 37, blocks));
}

TEST_CASE("a shared backend computes what its parent does, over the same pool", "[cuda]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto m = make_gqa(tensor_type::f32);
  auto parent = cuda_loader()(m->file, {.compute = compute_type::f32, .kv = kv_dtype::f32, .kv_tokens = 512});
  auto child = parent->share();
  REQUIRE(child.ok());
  CHECK(&(*child)->kv() == &parent->kv());
  const auto prompt = test::random_tokens(20, 600, rng);
  const std::vector<uint32_t> a{0, 1}, b{2, 3};
  const auto on_parent = last_row(*parent, prompt, 0, a);
  CHECK(last_row(**child, prompt, 0, b) == on_parent);
  // The child's prefill is in the shared pool: the parent decodes over it.
  const token_id t = 3;
  CHECK(last_row(*parent, {&t, 1}, 20, b) == last_row(*parent, {&t, 1}, 20, a));
}

TEST_CASE("a device that does not exist is refused by number", "[cuda]") {
  const auto m = make_gqa(tensor_type::f32);
  auto b = cuda_backend::load(m->file, {.compute = compute_type::f32, .device = 4096});
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == errc::invalid_argument);
  CHECK(b.error().message.find("device 4096 of") != std::string::npos);
}

TEST_CASE("greedy generation is the same on every run and every load", "[cuda]") {
  const auto m = make_gqa(tensor_type::bf16);
  std::mt19937_64 rng(5);
  const auto prompt = test::random_tokens(24, 600, rng);
  const std::vector<uint32_t> blocks{3, 1, 2, 0};
  auto run = [&](backend& be) {
    auto argmax = [](const std::vector<float>& x) {
      return static_cast<token_id>(std::max_element(x.begin(), x.end()) - x.begin());
    };
    std::vector<token_id> gen{argmax(last_row(be, prompt, 0, blocks))};
    for (uint32_t pos = 24; gen.size() < 16; ++pos)
      gen.push_back(argmax(last_row(be, {&gen.back(), 1}, pos, blocks)));
    return gen;
  };
  const test::backend_options o{.compute = compute_type::bf16, .kv = kv_dtype::bf16, .kv_tokens = 256};
  auto first = cuda_loader()(m->file, o);
  const auto once = run(*first);
  CHECK(run(*first) == once);
  auto second = cuda_loader()(m->file, o);
  CHECK(run(*second) == once);
}
