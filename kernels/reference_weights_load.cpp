// The GGUF side of the reference weights, apart so that code building weights in memory
// (tests, generated models) does not pull in the GGUF reader.
#include "kernels/reference_weights.hpp"

#include "model/gguf.hpp"

namespace hearth {

result<reference_weights> load_reference_weights(const gguf::file& f, const hparams& hp) {
  reference_weights w;
  w.layers.resize(hp.n_layer);
  for (const weight_desc& d : llama_weights(hp)) {
    auto t = find_weight(f, d);
    if (!t) return t.error();
    // The reader checked that data(t) holds n_bytes = bytes_for(type, n_elements).
    std::vector<float>& data = slot(w, d);
    data.resize((*t)->n_elements);
    dequantize((*t)->type, f.data(**t), data);
  }
  return w;
}

}  // namespace hearth
