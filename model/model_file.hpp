#pragma once
// A model file as every command opens it: the mapped GGUF, its tokenizer and hyper-parameters,
// read once, with errors that name the file. The weights are not read here (a backend loads
// them from `gguf`, which stays mapped while anything shares it), so opening is cheap and a
// command checks everything else before the long part.

#include <memory>
#include <string>

#include "common/result.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/tokenizer.hpp"

namespace hearth {

struct model_file {
  std::string path;
  std::shared_ptr<const gguf::file> gguf;
  std::shared_ptr<const tokenizer> tok;
  hparams hp;
  bool generated = false;  //!< random weights from `hearth model make` (is_generated_model)

  //! The file's name without its folder and extension: what the HTTP APIs call the model.
  std::string name() const;
};

result<model_file> open_model_file(const std::string& path);

}  // namespace hearth
