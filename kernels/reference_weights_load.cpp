// The GGUF side of the reference weights, apart so that code building weights in memory
// (tests, generated models) does not pull in the GGUF reader.
#include "kernels/reference_weights.hpp"

#include "model/gguf.hpp"

namespace hearth {

namespace {

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "}";
}

}  // namespace

result<reference_weights> load_reference_weights(const gguf::file& f, const hparams& hp) {
  reference_weights w;
  w.layers.resize(hp.n_layer);
  std::string problem;  // the first missing or misshapen tensor
  for_each_weight(hp, w, [&](const std::string& name, const std::vector<uint64_t>& dims,
                             std::vector<float>& data) {
    if (!problem.empty()) return;
    const gguf::tensor_info* t = f.find_tensor(name);
    if (t == nullptr) {
      problem = "tensor " + name + " is missing";
    } else if (t->dims != dims) {
      problem = "tensor " + name + " has dims " + dims_string(t->dims) + ", expected " +
                dims_string(dims);
    } else {
      // The reader checked that data(t) holds n_bytes = bytes_for(type, n_elements).
      data.resize(t->n_elements);
      dequantize(t->type, f.data(*t), data);
    }
  });
  if (!problem.empty()) return error{errc::malformed, "reference weights: " + problem};
  return w;
}

}  // namespace hearth
