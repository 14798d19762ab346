#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference_model.hpp"
#include "kernels/reference_ops.hpp"
#include "model_test_support.hpp"
#include "test_seed.hpp"

using namespace hearth;
using test::random_tokens;

namespace {

hparams tiny_llama() {
  return test::tiny_hparams();
}

// Qwen2-like: biases, neox pairing, one kv head, tied head, partial rotary.
hparams tiny_qwen() {
  hparams hp = tiny_llama();
  hp.arch = model_arch::qwen2;
  hp.n_head_kv = 1;
  hp.n_rot = 6;
  hp.pairing = rope_pairing::halves;
  hp.has_qkv_bias = true;
  hp.tied_output = true;
  hp.rope_freq_base = 1000.0f;
  return hp;
}

// Scaled RoPE frequencies, one factor per rotary pair (what Llama 3.1 files carry).
hparams tiny_llama3() {
  hparams hp = tiny_llama();
  hp.rope_freq_factors.assign(hp.n_rot / 2, 8.0f);
  hp.rope_freq_factors.front() = 1.0f;
  return hp;
}

// Norm weights near 1, matrices scaled by 1/sqrt(in) so activations stay O(1).
reference_weights random_weights(const hparams& hp, std::mt19937_64& rng) {
  reference_weights w;
  w.layers.resize(hp.n_layer);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for_each_weight(
      hp, w, [&](const std::string& name, const std::vector<uint64_t>& dims, std::vector<float>& data) {
        const bool is_norm = name.find("norm") != std::string::npos;
        const float scale = dims.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(dims[0])) : 0.1f;
        data.resize(dims.size() == 2 ? dims[0] * dims[1] : dims[0]);
        for (auto& x : data) x = (is_norm ? 1.0f : 0.0f) + scale * normal(rng);
      });
  return w;
}

reference_model make_model(const hparams& hp, reference_weights w, uint32_t n_ctx = 16) {
  auto m = reference_model::create(hp, std::move(w), n_ctx);
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m);
  return std::move(m).value();
}

void check_close(std::span<const float> got, std::span<const float> want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol).epsilon(tol));
  }
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("decoding one token at a time equals prefill, through rewinds and resets", "[reference_model]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const hparams& hp : {tiny_llama(), tiny_qwen(), tiny_llama3()}) {
    CAPTURE(hp.has_qkv_bias, hp.rope_freq_factors.size());
    const reference_weights w = random_weights(hp, rng);
    const auto tokens = random_tokens(10, hp.n_vocab, rng);
    reference_model all = make_model(hp, w);
    const auto rows = all.forward_all(tokens, 0);
    REQUIRE(rows.size() == tokens.size());
    CHECK(all.n_past() == tokens.size());

    reference_model step = make_model(hp, w);
    for (uint32_t p = 0; p < tokens.size(); ++p) CHECK(copy(step.forward(tokens[p], p)) == rows[p]);

    // Prefill in two chunks, after a reset.
    step.reset();
    CHECK(step.n_past() == 0);
    const std::span<const token_id> ts(tokens);
    CHECK(step.forward_all(ts.first(4), 0) == std::vector(rows.begin(), rows.begin() + 4));
    CHECK(step.forward_all(ts.subspan(4), 4) == std::vector(rows.begin() + 4, rows.end()));

    // Rewind: rewriting position 3 forgets 4.. and equals a fresh model fed the new prefix.
    std::vector<token_id> edited(tokens.begin(), tokens.begin() + 4);
    edited[3] = (tokens[3] + 1) % static_cast<token_id>(hp.n_vocab);
    const auto rewound = copy(step.forward(edited[3], 3));
    CHECK(step.n_past() == 4);
    reference_model fresh = make_model(hp, w);
    CHECK(fresh.forward_all(edited, 0).back() == rewound);
  }
}

TEST_CASE("out-of-range tokens and positions change nothing", "[reference_model]") {
  std::mt19937_64 rng(1);
  const hparams hp = tiny_llama();
  reference_model m = make_model(hp, random_weights(hp, rng), 4);
  CHECK(m.forward(-1, 0).empty());
  CHECK(m.forward(static_cast<token_id>(hp.n_vocab), 0).empty());
  CHECK(m.forward(0, 1).empty());  // position 0 not computed yet
  CHECK(m.n_past() == 0);
  const std::vector<token_id> bad = {1, 2, 99};
  CHECK(m.forward_all(bad, 0).empty());
  CHECK(m.n_past() == 0);
  const std::vector<token_id> five = {1, 2, 3, 4, 5};
  CHECK(m.forward_all(five, 0).empty());  // n_ctx is 4
  CHECK(m.forward_all(std::span(five).first(4), 0).size() == 4);
  CHECK(m.forward(1, 4).empty());
  CHECK(m.n_past() == 4);
}

TEST_CASE("create rejects inconsistent hparams and weights, naming the problem", "[reference_model]") {
  std::mt19937_64 rng(2);
  const hparams hp = tiny_llama();
  const reference_weights w = random_weights(hp, rng);
  auto rejects = [&](const hparams& h, const reference_weights& ww, uint32_t n_ctx,
                     const std::string& needle) {
    auto m = reference_model::create(h, ww, n_ctx);
    REQUIRE_FALSE(m);
    CHECK(m.error().code == errc::invalid_argument);
    CHECK_THAT(m.error().message, Catch::Contains(needle));
  };
  CHECK(reference_model::create(hp, w, 8));
  rejects(hp, w, 0, "n_ctx");
  hparams h = hp;
  h.n_head_kv = 3;
  rejects(h, w, 8, "n_head_kv");
  h = hp;
  h.n_rot = 7;
  rejects(h, w, 8, "n_rot");
  h = hp;
  h.n_rot = 10;  // > head_dim
  rejects(h, w, 8, "n_rot");
  h = hp;
  h.rope_freq_factors = {1.0f, 2.0f};  // not one per rotary pair
  rejects(h, w, 8, "rope_freq_factors");
  h.rope_freq_factors.assign(h.n_rot / 2, 0.0f);
  rejects(h, w, 8, "rope frequency factors");
  h = hp;
  h.tied_output = true;
  rejects(h, w, 8, "output.weight");

  reference_weights ww = w;
  ww.layers[1].wk.pop_back();
  rejects(hp, ww, 8, "blk.1.attn_k.weight");
  ww = w;
  ww.layers.pop_back();
  rejects(hp, ww, 8, "layers");
  ww = w;
  ww.output.clear();
  rejects(hp, ww, 8, "output.weight");
  h = hp;
  h.has_qkv_bias = true;  // biases expected but absent
  rejects(h, w, 8, "blk.0.attn_q.bias");
}

TEST_CASE("RoPE rotates the pairs each architecture pairs, by hand", "[reference_model][rope]") {
  const std::span<const float> off;
  // pos 3, base 10000, n_rot 4: pair 0 turns by 3 rad, pair 1 by 3 * 10000^(-1/2) = 0.03 rad.
  std::array<float, 6> head = {1, 2, 3, 4, 5, 6};
  ref::rope(head, 4, 3, 10000.0f, rope_pairing::adjacent, off);
  // (1, 2) and (3, 4) turned: (x cos - y sin, x sin + y cos); dims 4, 5 are past n_rot.
  check_close(head, std::array<float, 6>{-1.2722325f, -1.8388650f, 2.8786681f, 4.0881866f, 5, 6});

  head = {1, 2, 3, 4, 5, 6};
  ref::rope(head, 4, 3, 10000.0f, rope_pairing::halves, off);
  // (x0, x2) = (1, 3) turned by 3 rad, (x1, x3) = (2, 4) by 0.03 rad.
  check_close(head, std::array<float, 6>{-1.4133525f, 1.8791181f, -2.8288575f, 4.0581911f, 5, 6});

  head = {1, 2, 3, 4, 5, 6};
  ref::rope(head, 4, 0, 10000.0f, rope_pairing::adjacent, off);
  CHECK(head == std::array<float, 6>{1, 2, 3, 4, 5, 6});  // position 0 turns nothing
}

TEST_CASE("frequency factors divide the RoPE frequencies", "[reference_model][rope]") {
  // Frequencies 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
  const std::array<float, 4> factors = {1.0f, 2.0f, 8.0f, 8.0f};
  CHECK(ref::rope_freq(0, 8, 10000.0f, factors) == Approx(1.0));
  CHECK(ref::rope_freq(1, 8, 10000.0f, factors) == Approx(0.05));
  CHECK(ref::rope_freq(3, 8, 10000.0f, factors) == Approx(0.001 / 8));
  CHECK(ref::rope_freq(1, 8, 10000.0f, {}) == Approx(0.1));
}

TEST_CASE("attention at position 0 is the value path", "[reference_model]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  hparams hp = tiny_qwen();
  hp.n_layer = 1;
  const reference_weights w = random_weights(hp, rng);
  auto tokens = random_tokens(2, hp.n_vocab, rng);
  // Two equal tokens carry equal values, and then no attention weight could change the mix.
  if (tokens[1] == tokens[0]) tokens[1] = (tokens[0] + 1) % static_cast<token_id>(hp.n_vocab);
  reference_model m = make_model(hp, w);
  const auto logits0 = copy(m.forward(tokens[0], 0));
  const auto logits1 = copy(m.forward(tokens[1], 1));

  // Softmax over one position is exactly 1: queries and keys cannot matter at position 0.
  reference_weights other = w;
  const reference_weights noise = random_weights(hp, rng);
  other.layers[0].wq = noise.layers[0].wq;
  other.layers[0].wk = noise.layers[0].wk;
  other.layers[0].bq = noise.layers[0].bq;
  other.layers[0].bk = noise.layers[0].bk;
  reference_model m2 = make_model(hp, other);
  CHECK(copy(m2.forward(tokens[0], 0)) == logits0);
  CHECK(copy(m2.forward(tokens[1], 1)) != logits1);  // ... but they do from position 1 on

  // The same logits spelled out: x += wo (v repeated per query head); x += ffn(x).
  const reference_layer& l = w.layers[0];
  const size_t embd = hp.n_embd, hd = hp.head_dim;
  std::vector<float> x(w.token_embd.begin() + tokens[0] * embd,
                       w.token_embd.begin() + (tokens[0] + 1) * embd);
  std::vector<float> h(embd), v(hp.n_embd_kv()), att(hp.n_head * hd), out(embd);
  ref::rmsnorm(x, l.attn_norm, hp.rms_eps, h);
  ref::matvec(l.wv, h, v);
  ref::add(v, l.bv);
  for (size_t head = 0; head < hp.n_head; ++head) {  // one kv head serves all query heads
    std::copy_n(v.begin(), hd, att.begin() + head * hd);
  }
  ref::matvec(l.wo, att, out);
  ref::add(x, out);
  std::vector<float> gate(hp.n_ff), up(hp.n_ff);
  ref::rmsnorm(x, l.ffn_norm, hp.rms_eps, h);
  ref::matvec(l.w_gate, h, gate);
  ref::matvec(l.w_up, h, up);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = ref::silu(gate[i]) * up[i];
  ref::matvec(l.w_down, gate, out);
  ref::add(x, out);
  ref::rmsnorm(x, w.output_norm, hp.rms_eps, h);
  std::vector<float> expected(hp.n_vocab);
  ref::matvec(w.token_embd, h, expected);  // tied head
  check_close(logits0, expected);
}

TEST_CASE("grouped-query attention equals multi-head attention with repeated kv weights",
          "[reference_model]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (uint32_t n_head_kv : {1u, 2u}) {
    CAPTURE(n_head_kv);
    hparams gqa = tiny_qwen();  // biases too, so they must be repeated alike
    gqa.n_head_kv = n_head_kv;
    const reference_weights w = random_weights(gqa, rng);
    hparams mha = gqa;
    mha.n_head_kv = mha.n_head;
    reference_weights wm = w;
    // Query head h reads kv head h / group; give MHA's kv head h exactly those rows.
    const uint32_t group = gqa.n_head / n_head_kv;
    const size_t rows = gqa.head_dim, embd = gqa.n_embd;
    auto repeat = [&](const std::vector<float>& src, size_t row_len) {
      std::vector<float> dst;
      for (uint32_t h = 0; h < mha.n_head; ++h) {
        auto first = src.begin() + static_cast<ptrdiff_t>((h / group) * rows * row_len);
        dst.insert(dst.end(), first, first + static_cast<ptrdiff_t>(rows * row_len));
      }
      return dst;
    };
    for (size_t i = 0; i < wm.layers.size(); ++i) {
      wm.layers[i].wk = repeat(w.layers[i].wk, embd);
      wm.layers[i].wv = repeat(w.layers[i].wv, embd);
      wm.layers[i].bk = repeat(w.layers[i].bk, 1);
      wm.layers[i].bv = repeat(w.layers[i].bv, 1);
    }
    const auto tokens = random_tokens(6, gqa.n_vocab, rng);
    reference_model a = make_model(gqa, w), b = make_model(mha, wm);
    const auto ra = a.forward_all(tokens, 0), rb = b.forward_all(tokens, 0);
    REQUIRE(ra.size() == rb.size());
    for (size_t p = 0; p < ra.size(); ++p) check_close(ra[p], rb[p], 1e-6);
  }
}

namespace {

// A whole model small enough to write out: n_embd 2, one head of dim 2, n_ff 2, vocab 3.
using vec2 = std::array<double, 2>;
using mat2 = std::array<vec2, 2>;  // [out][in]

struct tiny_weights {
  std::array<vec2, 3> embd = {vec2{1, 0}, {0.5, -1}, {-0.25, 2}};
  vec2 attn_norm = {1, 0.5}, ffn_norm = {0.75, 1.25}, output_norm = {1, -1};
  mat2 wq = {vec2{1, 0.5}, {-0.5, 1}}, wk = {vec2{0.5, 0}, {0.25, 1}};
  mat2 wv = {vec2{1, -1}, {0.5, 0.5}}, wo = {vec2{0.5, 0.25}, {-1, 1}};
  mat2 gate = {vec2{1, -0.5}, {0.25, 0.75}}, up = {vec2{0.5, 1}, {-1, 0.25}};
  mat2 down = {vec2{1, 0.5}, {-0.5, 2}};
  std::array<vec2, 3> output = {vec2{1, 0}, {0, 1}, {1, 1}};
};

vec2 operator+(vec2 a, vec2 b) {
  return {a[0] + b[0], a[1] + b[1]};
}
vec2 operator*(double s, vec2 a) {
  return {s * a[0], s * a[1]};
}
vec2 operator*(const mat2& m, vec2 x) {
  return {m[0][0] * x[0] + m[0][1] * x[1], m[1][0] * x[0] + m[1][1] * x[1]};
}
vec2 norm(vec2 x, vec2 w, double eps) {
  const double r = std::sqrt((x[0] * x[0] + x[1] * x[1]) / 2 + eps);
  return {x[0] / r * w[0], x[1] / r * w[1]};
}
// One rotary pair with frequency base^0 = 1: multiply by e^(i pos).
vec2 rotate(vec2 x, int pos) {
  const std::complex<double> z = std::complex<double>(x[0], x[1]) * std::polar(1.0, double(pos));
  return {z.real(), z.imag()};
}
double dot2(vec2 a, vec2 b) {
  return a[0] * b[0] + a[1] * b[1];
}

// Logits of token b at position 1 after token a at position 0 (or of a at 0 when `second` is
// false), written with complex rotation and the two-way softmax as a sigmoid.
std::array<double, 3> tiny_expected(const tiny_weights& t, int a, int b, bool second, double eps) {
  auto project = [&](int tok) {
    const vec2 h = norm(t.embd[tok], t.attn_norm, eps);
    return std::array<vec2, 3>{t.wq * h, t.wk * h, t.wv * h};
  };
  const auto qkv0 = project(a);
  vec2 x = t.embd[a], att = qkv0[2];
  if (second) {
    const auto qkv1 = project(b);
    const vec2 q = rotate(qkv1[0], 1), k0 = rotate(qkv0[1], 0), k1 = rotate(qkv1[1], 1);
    const double w1 = 1 / (1 + std::exp((dot2(q, k0) - dot2(q, k1)) / std::sqrt(2.0)));
    att = (1 - w1) * qkv0[2] + w1 * qkv1[2];
    x = t.embd[b];
  }
  x = x + t.wo * att;
  const vec2 h = norm(x, t.ffn_norm, eps), g = t.gate * h, u = t.up * h;
  x = x + t.down * vec2{g[0] / (1 + std::exp(-g[0])) * u[0], g[1] / (1 + std::exp(-g[1])) * u[1]};
  const vec2 y = norm(x, t.output_norm, eps);
  return {dot2(t.output[0], y), dot2(t.output[1], y), dot2(t.output[2], y)};
}

reference_weights to_reference(const tiny_weights& t) {
  auto flat = [](const auto& rows) {
    std::vector<float> v;
    for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
    return v;
  };
  auto vec = [](vec2 x) { return std::vector<float>(x.begin(), x.end()); };
  reference_weights w;
  w.token_embd = flat(t.embd);
  w.output = flat(t.output);
  w.output_norm = vec(t.output_norm);
  w.layers.push_back({vec(t.attn_norm),
                      flat(t.wq),
                      flat(t.wk),
                      flat(t.wv),
                      flat(t.wo),
                      {},
                      {},
                      {},
                      vec(t.ffn_norm),
                      flat(t.gate),
                      flat(t.up),
                      flat(t.down),
                      {},
                      {},
                      {},
                      {},
                      {},
                      {}});
  return w;
}

}  // namespace

TEST_CASE("a model small enough to write out by hand", "[reference_model]") {
  hparams hp;
  hp.n_vocab = 3;
  hp.n_embd = hp.n_ff = hp.head_dim = hp.n_rot = 2;
  hp.n_layer = hp.n_head = hp.n_head_kv = 1;
  const tiny_weights t;
  for (auto [a, b] : {std::pair{1, 2}, std::pair{2, 0}, std::pair{0, 0}}) {
    CAPTURE(a, b);
    reference_model m = make_model(hp, to_reference(t));
    const auto first = tiny_expected(t, a, b, false, hp.rms_eps);
    const auto second = tiny_expected(t, a, b, true, hp.rms_eps);
    check_close(m.forward(a, 0), std::vector<float>(first.begin(), first.end()));
    check_close(m.forward(b, 1), std::vector<float>(second.begin(), second.end()));
  }
}

TEST_CASE("rmsnorm, silu, softmax and matvec match their formulas", "[reference_model][ops]") {
  // mean of squares (9 + 16 + 0 + 144) / 4 = 42.25 = 6.5^2
  std::vector<float> x = {3, -4, 0, 12};
  const std::vector<float> w = {1, 2, 0.5f, -1};
  ref::rmsnorm(x, w, 0.0f, x);  // in place
  check_close(x, std::vector<float>{3 / 6.5f, -8 / 6.5f, 0, -12 / 6.5f});
  std::vector<float> tiny = {1e-4f, -1e-4f}, ones = {1, 1};
  ref::rmsnorm(tiny, ones, 1e-5f, tiny);  // eps dominates: 1e-4 / sqrt(1e-8 + 1e-5)
  const float r = std::sqrt(1.001e-5f);
  check_close(tiny, std::vector<float>{1e-4f / r, -1e-4f / r});

  CHECK(ref::silu(0.0f) == 0.0f);
  CHECK(ref::silu(1.0f) == Approx(1.0 / (1.0 + std::exp(-1.0))));
  CHECK(ref::silu(-2.0f) == Approx(-2.0 / (1.0 + std::exp(2.0))));
  CHECK(ref::silu(100.0f) == Approx(100.0));
  CHECK(ref::silu(-100.0f) == Approx(0.0).margin(1e-30));

  std::vector<float> p = {1, 2, 3};
  ref::softmax(p);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  check_close(
      p, std::vector<float>{float(std::exp(1.0) / z), float(std::exp(2.0) / z), float(std::exp(3.0) / z)});
  std::vector<float> big = {1000, 1001, -std::numeric_limits<float>::infinity()};
  ref::softmax(big);  // no overflow: shifted by the max
  check_close(big, std::vector<float>{float(1 / (1 + std::exp(1.0))), float(1 / (1 + std::exp(-1.0))), 0});
  std::vector<float> one = {-7};
  ref::softmax(one);
  CHECK(one[0] == 1.0f);

  // W (2,3) @ x (3,) -> (2,); the first row cancels exactly only with a double accumulator.
  const std::vector<float> m = {1e8f, 1, -1e8f, 0.5f, -2, 4};
  std::vector<float> out(2);
  ref::matvec(m, std::vector<float>{1, 1, 1}, out);
  CHECK(out == std::vector<float>{1.0f, 2.5f});
}
