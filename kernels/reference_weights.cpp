#include "kernels/reference_weights.hpp"

#include <numeric>

namespace hearth {

status<> check_weights(const hparams& hp, const reference_weights& w) {
  if (w.layers.size() != hp.n_layer) {
    return error{errc::invalid_argument, "reference weights: " + std::to_string(w.layers.size()) +
                                             " layers, hparams say " + std::to_string(hp.n_layer)};
  }
  if (hp.tied_output && !w.output.empty()) {
    return error{errc::invalid_argument, "reference weights: output.weight given for a tied model"};
  }
  status<> st;
  for_each_weight(
      hp, w, [&](const std::string& name, const std::vector<uint64_t>& dims, const std::vector<float>& data) {
        const uint64_t want = std::accumulate(dims.begin(), dims.end(), uint64_t{1}, std::multiplies<>());
        if (st.ok() && data.size() != want) {
          st = error{errc::invalid_argument, "reference weights: " + name + " holds " +
                                                 std::to_string(data.size()) + " floats, expected " +
                                                 std::to_string(want)};
        }
      });
  return st;
}

}  // namespace hearth
