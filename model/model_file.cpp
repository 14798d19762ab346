#include "model/model_file.hpp"

#include <filesystem>

#include "model/model_maker.hpp"

namespace hearth {

std::string model_file::name() const {
  return std::filesystem::path(path).stem().string();
}

result<model_file> open_model_file(const std::string& path) {
  auto f = gguf::file::open(path);
  if (!f) return f.error().to_error();
  auto tok = tokenizer::from_gguf(*f);
  if (!tok) return tok.error();
  auto hp = read_hparams(*f);
  if (!hp) return hp.error();
  const bool generated = is_generated_model(*f);
  return model_file{path, std::make_shared<const gguf::file>(std::move(*f)),
                    std::make_shared<const tokenizer>(std::move(*tok)), *hp, generated};
}

}  // namespace hearth
