#include "bench/kernels/model_work.hpp"

#include <algorithm>

namespace hearth {
namespace {

double layer_linear_params(const hparams& hp) {
  double n = 0;
  for (const auto& s : model_shapes(hp)) {
    if (s.count == hp.n_layer) n += static_cast<double>(s.n_in) * s.n_out;
  }
  return n;
}

}  // namespace

std::vector<linear_shape> model_shapes(const hparams& hp) {
  const uint32_t d = hp.n_embd, q = hp.n_head * hp.head_dim, kv = hp.n_embd_kv();
  return {{"qkv", d, q + 2 * kv, hp.n_layer},
          {"wo", q, d, hp.n_layer},
          {"gate_up", d, 2 * hp.n_ff, hp.n_layer},
          {"down", hp.n_ff, d, hp.n_layer},
          {"head", d, hp.n_vocab, 1}};
}

double prefill_gflop(const hparams& hp, uint32_t t) {
  const double tokens = t;
  const double linears =
      2.0 * (hp.n_layer * layer_linear_params(hp) * tokens + static_cast<double>(hp.n_vocab) * hp.n_embd);
  const double attention = 2.0 * hp.head_dim * hp.n_head * hp.n_layer * tokens * (tokens + 1.0);
  return (linears + attention) / 1e9;
}

double decode_gflop(const hparams& hp, uint32_t batch, uint32_t context) {
  const double params = hp.n_layer * layer_linear_params(hp) + static_cast<double>(hp.n_vocab) * hp.n_embd;
  const double linears = 2.0 * batch * params;
  const double attention = 4.0 * hp.head_dim * hp.n_head * hp.n_layer * (context + 1.0) * batch;
  return (linears + attention) / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace hearth
