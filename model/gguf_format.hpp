#pragma once
// Constants of the GGUF layout shared by the reader and the writer (not part of the public API).

#include <cstdint>
#include <type_traits>

namespace hearth::gguf::format {

constexpr uint32_t magic = 0x46554747;                      //!< "GGUF" read as a little-endian u32
constexpr uint32_t version = 3;                             //!< what the writer emits
constexpr uint64_t default_alignment = 32;                  //!< when general.alignment is absent
constexpr uint64_t max_alignment = 1u << 20;                //!< larger values only waste file space
constexpr const char* alignment_key = "general.alignment";  //!< a u32 in real files

//! A power of two in [1, max_alignment].
constexpr bool is_valid_alignment(uint64_t a) {
  return a >= 1 && a <= max_alignment && (a & (a - 1)) == 0;
}

//! The unsigned integer of T's width: scalars travel as their little-endian bit patterns.
template <class T>
using bits_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

}  // namespace hearth::gguf::format
