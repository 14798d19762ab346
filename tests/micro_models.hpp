#pragma once
// The micro models the engine, gateway and HTTP tests run on, and the HTTP script server: a
// 600-token vocabulary and two layers, fast to build. No Catch here (the script server is no test).
#include "model/model_maker.hpp"

namespace hearth::test {

inline const model_preset micro_preset{"micro", 64, 2, 4, 2, 96, 600};

//! The micro model with a chat template that has tools: a Qwen micro with Qwen 2.5's, or the
//! Llama one with Llama 3.1's. A context of 2048: a tool prompt in a 600-token vocabulary is long.
inline make_options micro_tools_options(chat_format f) {
  return {.preset = micro_preset,
          .dtype = tensor_type::f32,
          .seed = 7,
          .n_ctx = 2048,
          .arch = f == chat_format::qwen25 ? model_arch::qwen2 : model_arch::llama,
          .chat = f};
}

}  // namespace hearth::test
