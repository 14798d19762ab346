#pragma once
// The tensors of one model file, found and shape-checked once (model/llama_weights.hpp), by kind
// and layer: what a backend reads its weights from.

#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

#include "common/result.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/llama_weights.hpp"

namespace hearth {

class tensor_index {
 public:
  //! errc::malformed naming a missing or misshapen tensor.
  static result<tensor_index> build(const gguf::file& f, const hparams& hp);

  const gguf::file& file() const { return *f_; }
  const gguf::tensor_info* get(weight_kind k, uint32_t layer = 0) const { return slots_[slot(k, layer)]; }
  //! The tensor's bytes as stored.
  std::span<const std::byte> data(weight_kind k, uint32_t layer = 0) const {
    return f_->data(*get(k, layer));
  }
  //! The tensor dequantized to f32.
  std::vector<float> floats(weight_kind k, uint32_t layer = 0) const;
  //! Drops the file pages of tensors that have been converted (gguf::file::release).
  void release(std::initializer_list<weight_kind> kinds, uint32_t layer = 0) const;

 private:
  static constexpr size_t n_kinds = static_cast<size_t>(weight_kind::output) + 1;
  tensor_index(const gguf::file& f, uint32_t n_layer) : f_(&f), slots_(n_kinds * (n_layer + 1), nullptr) {}
  static size_t slot(weight_kind k, uint32_t layer) {
    return size_t{layer} * n_kinds + static_cast<size_t>(k);
  }

  const gguf::file* f_;
  std::vector<const gguf::tensor_info*> slots_;
};

}  // namespace hearth
