#pragma once
// A SentencePiece-style vocabulary written by hand for the llama.cpp fidelity tests, independent
// of model/vocab_builder (whose vocabularies always hold a lone "▁"). This one has none, so a
// space that no piece covers falls back to the bytes of "▁" (<0xE2><0x96><0x81>), the case where
// Hearth and llama.cpp once differed. tests/tokenizer_fixture_model writes it into a model file
// that llama.cpp loads; the ids it gave are the fixed data of test_tokenizer_llama_cpp.cpp.
//
// ids: 0 <unk>, 1 <s> (bos), 2 </s> (eos), 3..258 <0x00>..<0xFF> (byte b is 3 + b),
//      then the pieces in spm_fixture_vocab.cpp's order, from 259.

#include "model/vocab.hpp"

namespace hearth::test {

//! The vocabulary: add_bos, no chat template, at least 512 tokens (a model needs that many).
vocab_spec spm_fixture_vocab();

}  // namespace hearth::test
