#include "kernels/model_tensors.hpp"

#include "model/tensor_types.hpp"

namespace hearth {

result<tensor_index> tensor_index::build(const gguf::file& f, const hparams& hp) {
  tensor_index ix(f, hp.n_layer);
  for (const weight_desc& d : llama_weights(hp)) {
    auto t = find_weight(f, d);
    if (!t) return t.error();
    ix.slots_[slot(d.kind, d.layer)] = *t;
  }
  return ix;
}

std::vector<float> tensor_index::floats(weight_kind k, uint32_t layer) const {
  std::vector<float> out(get(k, layer)->n_elements);
  dequantize(get(k, layer)->type, data(k, layer), out);
  return out;
}

void tensor_index::release(std::initializer_list<weight_kind> kinds, uint32_t layer) const {
  for (weight_kind k : kinds) f_->release(*get(k, layer));
}

}  // namespace hearth
