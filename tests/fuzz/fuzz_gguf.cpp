// libFuzzer harness for the GGUF reader. Any input must parse or fail as a value; an accepted
// file must keep every tensor inside the input and survive writer -> reader unchanged, and each
// of its (small) tensors must dequantize, and its floats quantize again, whatever the bytes (NaN
// and infinite halves included). A refused tensor type is named with its tensor.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "model/gguf.hpp"

using namespace hearth;
using namespace hearth::gguf;

namespace {

// The same metadata and tensors, written again by the writer.
std::vector<std::byte> rewrite(const file& f) {
  writer w(f.alignment());
  for (const auto& p : f.metadata()) w.set(p.key, p.val);
  for (const auto& t : f.tensors()) {
    const auto d = f.data(t);
    w.add_tensor(t.name, t.type, t.dims, std::vector<std::byte>(d.begin(), d.end()));
  }
  return w.to_bytes();
}

void write_seed(const std::string& dir, const std::string& name, const writer& w) {
  const auto bytes = w.to_bytes();
  std::ofstream(dir + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("HEARTH_FUZZ_WRITE_SEEDS");
  if (!dir) return 0;
  writer small;
  small.set("general.architecture", std::string("llama"));
  small.set("llama.block_count", uint32_t{2});
  small.add_tensor("w", tensor_type::f32, {2, 2}, std::vector<std::byte>(16, std::byte{1}));
  write_seed(dir, "small.gguf", small);

  writer rich(64);
  rich.set("tokenizer.ggml.tokens",
           array_value{value_type::string, {std::string("<s>"), std::string("\xe2\x96\x81h")}});
  rich.set("nested", array_value{value_type::array, {array_value{value_type::i8, {int8_t{-1}}}}});
  rich.set("flag", true);
  rich.set("eps", 1e-5f);
  rich.add_tensor("q", tensor_type::q4_0, {32}, std::vector<std::byte>(18, std::byte{2}));
  rich.add_tensor("k", tensor_type::q8_0, {32, 2}, std::vector<std::byte>(68, std::byte{3}));
  rich.add_tensor("b", tensor_type::bf16, {3}, std::vector<std::byte>(6, std::byte{4}));
  write_seed(dir, "rich.gguf", rich);

  // One tensor of every type Hearth reads, holding a real quantization of a ramp, so that
  // mutations land in scales, mins and packed bits of each block layout.
  writer quant;
  std::vector<float> ramp(256);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i) / 64.0f - 2.0f;
  for (const tensor_type t : tensor_types()) {
    std::vector<std::byte> bytes(*bytes_for(t, ramp.size()));
    quantize(t, ramp, bytes);
    quant.add_tensor(traits_of(t).name, t, {256}, std::move(bytes));
  }
  write_seed(dir, "quant.gguf", quant);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  auto r = file::parse(bytes);
  if (!r) {
    (void)r.error().message();
    fuzz::check(r.error().code != parse_errc::bad_tensor_type || r.error().detail.rfind("tensor '", 0) == 0,
                "a refused tensor type is named with its tensor");
    return 0;
  }
  for (const auto& t : r->tensors()) {
    const auto d = r->data(t);
    if (d.size() != t.n_bytes || d.data() < bytes.data() ||
        d.data() + d.size() > bytes.data() + bytes.size()) {
      std::abort();
    }
  }
  for (const auto& t : r->tensors()) {
    if (t.n_elements > (1u << 16)) continue;  // bounded work per input
    std::vector<float> values(t.n_elements);
    dequantize(t.type, r->data(t), values);
    std::vector<std::byte> again(t.n_bytes);
    quantize(t.type, values, again);
  }
  const auto once = rewrite(*r);
  auto again = file::parse(once);
  if (!again || rewrite(*again) != once) std::abort();
  return 0;
}
