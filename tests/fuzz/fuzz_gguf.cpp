// libFuzzer harness for the GGUF reader. Any input must parse or fail as a value; an accepted
// file must keep every tensor inside the input and survive writer -> reader unchanged.
#include <cstdlib>
#include <fstream>
#include <string>

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
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span bytes(reinterpret_cast<const std::byte*>(data), size);
  auto r = file::parse(bytes);
  if (!r) {
    (void)r.error().message();
    return 0;
  }
  for (const auto& t : r->tensors()) {
    const auto d = r->data(t);
    if (d.size() != t.n_bytes || d.data() < bytes.data() ||
        d.data() + d.size() > bytes.data() + bytes.size()) {
      std::abort();
    }
  }
  const auto once = rewrite(*r);
  auto again = file::parse(once);
  if (!again || rewrite(*again) != once) std::abort();
  return 0;
}
