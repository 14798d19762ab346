#pragma once
// Real, usable vocabularies for the generated models: BPE merges learned from synthetic_text
// (model/synthetic_text.hpp) by train_bpe (model/bpe_trainer.hpp). Same seed -> byte-identical
// vocab_spec; another seed -> other merges. A larger n_vocab extends a smaller one's merges.
//
// bpe (Llama 3 style), ids:  0..255          the bytes, id = byte value, GPT-2 alphabet text
//                            256..            one token per merge, in rank order
//                            last 10          <|begin_of_text|> (bos), <|end_of_text|> (eos),
//                                             reserved 0-3, <|start_header_id|>,
//                                             <|end_header_id|>, reserved 4, <|eot_id|> (eot)
// spm (Llama 2 style), ids:  0 <unk>, 1 <s> (bos), 2 </s> (eos), 3..258 <0x00>..<0xFF> (byte)
//                            259..            merged pieces that are valid UTF-8 without control
//                                             characters, " " written "▁", score -rank
//                            last 95          the single characters "▁" and '!'..'~'
// Should the text ever yield too few merges, the remaining ids become reserved tokens
// (<|reserved_special_token_N|> control / <unused_N> unused), so the size is always exact.

#include <cstdint>

#include "model/vocab.hpp"

namespace hearth {

//! Smallest n_vocab each builder accepts (specials and byte tokens); smaller values are raised.
constexpr uint32_t min_bpe_vocab = 256 + 10;
constexpr uint32_t min_spm_vocab = 3 + 256 + 95;

//! Llama 3 style byte-level BPE vocabulary: exactly max(n_vocab, min_bpe_vocab) tokens,
//! pre "llama-bpe", add_bos, the Llama 3 chat template.
vocab_spec make_bpe_vocab(uint64_t seed, uint32_t n_vocab = 32000);

//! SentencePiece-style vocabulary from the same merges: exactly max(n_vocab, min_spm_vocab)
//! tokens, add_bos, the Llama 2 chat template.
vocab_spec make_spm_vocab(uint64_t seed, uint32_t n_vocab = 32000);

//! Qwen 2/3 style: make_bpe_vocab with pre "qwen2", no BOS added, and the first three special
//! tokens Qwen's <|endoftext|> (bos, pad), <|im_start|>, <|im_end|> (eos, eot); ChatML template.
vocab_spec make_qwen_vocab(uint64_t seed, uint32_t n_vocab = 32000);

//! Phi-3 style: make_spm_vocab's pieces, then Phi-3's control tokens <|endoftext|> (eos),
//! <|assistant|>, <|system|>, <|end|> (eot), <|user|> as the last five ids (Phi-3 keeps them
//! at 32000..32010, after its SentencePiece vocabulary); the Phi-3 template.
vocab_spec make_phi3_vocab(uint64_t seed, uint32_t n_vocab = 32000);

//! Phi-4-mini style: make_bpe_vocab with pre "gpt-4o", no BOS added, and the ten special tokens
//! Phi-4-mini's tokenizer starts with, <|endoftext|> (bos, eos, pad), <|endofprompt|>,
//! <|assistant|>, <|end|> (eot), <|user|>, <|system|>, <|tool|>, <|/tool|>, <|tool_call|>,
//! <|/tool_call|>; the Phi-3 template (the chat format Hearth reads Phi-4-mini's as).
vocab_spec make_phi4_mini_vocab(uint64_t seed, uint32_t n_vocab = 32000);

//! Gemma style: make_spm_vocab's pieces without the space prefix (as Gemma's converters write
//! add_space_prefix false), then <start_of_turn> and <end_of_turn> (eot) as the last two ids;
//! the Gemma template.
vocab_spec make_gemma_vocab(uint64_t seed, uint32_t n_vocab = 32000);

}  // namespace hearth
