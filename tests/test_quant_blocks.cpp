// ggml's quantized blocks decoded by hand: each case builds one block's bytes field by field at
// the offsets of ggml-common.h's struct, states the floats ggml's dequantize_row_* gives for a
// few elements (worked out in the comments), and checks dequantize against them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "model/tensor_types.hpp"

using namespace hearth;

namespace {

// Halves used below, as bit patterns.
constexpr uint16_t h_0_25 = 0x3400, h_0_5 = 0x3800, h_1 = 0x3c00, h_2 = 0x4000, h_minus_1 = 0xbc00;

// One block's bytes, written at explicit offsets.
struct block {
  std::vector<std::byte> bytes;
  explicit block(size_t n) : bytes(n) {}
  block& u8(size_t at, uint8_t v) {
    bytes.at(at) = std::byte{v};
    return *this;
  }
  block& u16(size_t at, uint16_t v) {
    return u8(at, static_cast<uint8_t>(v)).u8(at + 1, static_cast<uint8_t>(v >> 8));
  }
  block& fill(size_t at, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; ++i) u8(at + i, v);
    return *this;
  }
  std::vector<float> decode(tensor_type t) const {
    REQUIRE(bytes.size() == traits_of(t).block_bytes);
    std::vector<float> out(traits_of(t).block_size);
    dequantize(t, bytes, out);
    return out;
  }
};

}  // namespace

TEST_CASE("block sizes are ggml's", "[quant_blocks]") {
  struct size {
    tensor_type type;
    uint32_t number, block_size, block_bytes;
    const char* name;
  };
  // ggml.h enum ggml_type and ggml.c type_traits (blck_size, type_size).
  for (const auto& s :
       {size{tensor_type::q4_0, 2, 32, 18, "q4_0"}, size{tensor_type::q4_1, 3, 32, 20, "q4_1"},
        size{tensor_type::q5_0, 6, 32, 22, "q5_0"}, size{tensor_type::q5_1, 7, 32, 24, "q5_1"},
        size{tensor_type::q8_0, 8, 32, 34, "q8_0"}, size{tensor_type::q2_k, 10, 256, 84, "q2_K"},
        size{tensor_type::q3_k, 11, 256, 110, "q3_K"}, size{tensor_type::q4_k, 12, 256, 144, "q4_K"},
        size{tensor_type::q5_k, 13, 256, 176, "q5_K"}, size{tensor_type::q6_k, 14, 256, 210, "q6_K"},
        size{tensor_type::q8_k, 15, 256, 292, "q8_K"}, size{tensor_type::iq4_nl, 20, 32, 18, "iq4_nl"}}) {
    INFO(s.name);
    CHECK(static_cast<uint32_t>(s.type) == s.number);
    REQUIRE(traits_of(s.number));
    CHECK(traits_of(s.number)->block_size == s.block_size);
    CHECK(traits_of(s.type).block_bytes == s.block_bytes);
    CHECK(std::string(traits_of(s.type).name) == s.name);
    CHECK(tensor_type_from_name(s.name) == s.type);
  }
  // Every ggml number has its name, read or not; removed numbers have none.
  CHECK(std::string(ggml_type_name(16)) == "iq2_xxs");
  CHECK(std::string(ggml_type_name(23)) == "iq4_xs");
  CHECK(std::string(ggml_type_name(29)) == "iq1_m");
  CHECK(std::string(ggml_type_name(35)) == "tq2_0");
  CHECK(std::string(ggml_type_name(26)) == "i32");
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 39u, 1000u})
    CHECK(ggml_type_name(removed) == nullptr);
  for (uint32_t unread : {9u, 16u, 19u, 23u, 24u, 28u, 34u}) CHECK_FALSE(traits_of(unread));
}

TEST_CASE("32-element blocks decode as ggml defines them", "[quant_blocks]") {
  SECTION("q4_1: d * q + m") {
    // d = 0.5, m = -1; byte j: low nibble j (element j), high nibble 15 - j (element j + 16).
    block b(20);
    b.u16(0, h_0_5).u16(2, h_minus_1);
    for (uint8_t j = 0; j < 16; ++j) b.u8(4 + j, static_cast<uint8_t>(j | ((15 - j) << 4)));
    const auto x = b.decode(tensor_type::q4_1);
    CHECK(x[0] == -1.0f);   // 0.5 * 0 - 1
    CHECK(x[5] == 1.5f);    // 0.5 * 5 - 1
    CHECK(x[15] == 6.5f);   // 0.5 * 15 - 1
    CHECK(x[16] == 6.5f);   // element 16: high nibble of byte 0 = 15
    CHECK(x[31] == -1.0f);  // high nibble of byte 15 = 0
  }
  SECTION("q5_0: d * (q - 16), 5th bits in qh") {
    // d = 1; qh = 0x0000ffff: elements 0-15 have the 5th bit; every qs byte 0x21.
    block b(22);
    b.u16(0, h_1).u8(2, 0xff).u8(3, 0xff).fill(6, 16, 0x21);
    const auto x = b.decode(tensor_type::q5_0);
    CHECK(x[0] == 1.0f);  // (1 | 16) - 16
    CHECK(x[15] == 1.0f);
    CHECK(x[16] == -14.0f);  // high nibble 2, no 5th bit: 2 - 16
    CHECK(x[31] == -14.0f);
  }
  SECTION("q5_1: d * q + m") {
    // d = 0.25, m = 2; qh bits 0 and 31; qs zero but byte 15 = 0xf0.
    block b(24);
    b.u16(0, h_0_25).u16(2, h_2).u8(4, 0x01).u8(7, 0x80).u8(8 + 15, 0xf0);
    const auto x = b.decode(tensor_type::q5_1);
    CHECK(x[0] == 6.0f);  // 0.25 * 16 + 2
    CHECK(x[1] == 2.0f);
    CHECK(x[15] == 2.0f);   // low nibble of byte 15 is 0
    CHECK(x[31] == 9.75f);  // 0.25 * (15 | 16) + 2
  }
  SECTION("q8_0: d * q") {
    block b(34);
    b.u16(0, h_0_5);
    for (int j = 0; j < 32; ++j)
      b.u8(2 + static_cast<size_t>(j), static_cast<uint8_t>(static_cast<int8_t>(j - 16)));
    const auto x = b.decode(tensor_type::q8_0);
    CHECK(x[0] == -8.0f);
    CHECK(x[16] == 0.0f);
    CHECK(x[31] == 7.5f);
  }
  SECTION("iq4_nl: d * kvalues_iq4nl[q]") {
    // d = 2; byte j: low nibble j, high nibble 15 - j. The table: -127 -104 -83 -65 -49 -35 -22 -10
    // 1 13 25 38 53 69 89 113.
    block b(18);
    b.u16(0, h_2);
    for (uint8_t j = 0; j < 16; ++j) b.u8(2 + j, static_cast<uint8_t>(j | ((15 - j) << 4)));
    const auto x = b.decode(tensor_type::iq4_nl);
    CHECK(x[0] == -254.0f);  // 2 * -127
    CHECK(x[7] == -20.0f);   // 2 * -10
    CHECK(x[8] == 2.0f);     // 2 * 1
    CHECK(x[15] == 226.0f);  // 2 * 113
    CHECK(x[16] == 226.0f);  // high nibble of byte 0 = 15
    CHECK(x[31] == -254.0f);
  }
}

TEST_CASE("q2_K and q3_K blocks decode as ggml defines them", "[quant_blocks]") {
  SECTION("q2_K: d * sc * q - dmin * m") {
    // Layout: scales[16] | qs[64] | d | dmin. Sub-block j: sc = j % 15 + 1, m = j % 3.
    // qs bytes 0-31 = 0xe4 (2-bit planes 0, 1, 2, 3), bytes 32-63 = 0x1b (planes 3, 2, 1, 0):
    // element e's q is plane (e / 32) % 4 of byte 32 * (e / 128) + e % 32.
    block b(84);
    for (uint8_t j = 0; j < 16; ++j) b.u8(j, static_cast<uint8_t>((j % 15 + 1) | ((j % 3) << 4)));
    b.fill(16, 32, 0xe4).fill(48, 32, 0x1b).u16(80, h_1).u16(82, h_0_5);
    const auto x = b.decode(tensor_type::q2_k);
    CHECK(x[0] == 0.0f);     // sub 0 (sc 1, m 0), q 0
    CHECK(x[40] == 2.0f);    // sub 2 (sc 3, m 2), q 1: 3 - 0.5 * 2
    CHECK(x[100] == 21.0f);  // sub 6 (sc 7, m 0), plane 3 of 0xe4: q 3
    CHECK(x[170] == 21.5f);  // sub 10 (sc 11, m 1), second 128: plane 1 of 0x1b is 2: 22 - 0.5
    CHECK(x[200] == 13.0f);  // sub 12 (sc 13, m 0), plane 2 of 0x1b is 1
    CHECK(x[255] == 0.0f);   // sub 15 (sc 1, m 0), plane 3 of 0x1b is 0
  }
  SECTION("q3_K: d * (sc - 32) * (q - 4), q's 3rd bit in hmask") {
    // Layout: hmask[32] | qs[64] | scales[12] | d. Stored 6-bit scales j + 30 (sub-block scale
    // j - 2), packed by hand: bytes 0-7 hold the low nibbles of scales j (low) and j + 8 (high),
    // byte 8 + k the top 2 bits of scales k, k + 4, k + 8, k + 12 at bits 0, 2, 4, 6.
    block b(110);
    const uint8_t scales[12] = {0x6e, 0x7f, 0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xa9, 0xa9, 0xaa, 0xaa};
    for (uint8_t i = 0; i < 12; ++i) b.u8(96 + i, scales[i]);
    // hmask 0x55: the 3rd bit is set for e / 32 even. qs 0xe4: low 2 bits = (e / 32) % 4.
    b.fill(0, 32, 0x55).fill(32, 64, 0xe4).u16(108, h_0_5);
    const auto x = b.decode(tensor_type::q3_k);
    CHECK(x[0] == 0.0f);     // sub 0 (scale -2), low 0, 3rd bit set: q - 4 = 0
    CHECK(x[50] == -1.5f);   // sub 3 (scale 1), low 1, bit 1 clear: 0.5 * 1 * (1 - 4)
    CHECK(x[70] == 2.0f);    // sub 4 (scale 2), low 2, bit 2 set: 0.5 * 2 * 2
    CHECK(x[100] == -2.0f);  // sub 6 (scale 4), low 3, bit 3 clear: 0.5 * 4 * -1
    CHECK(x[200] == 10.0f);  // sub 12 (scale 10), low 2, bit 6 set: 0.5 * 10 * 2
    CHECK(x[255] == -6.5f);  // sub 15 (scale 13), low 3, bit 7 clear: 0.5 * 13 * -1
  }
}

TEST_CASE("q4_K, q5_K and q6_K blocks decode as ggml defines them", "[quant_blocks]") {
  // q4_K / q5_K scales and mins, 6 bits each: sc = 1 2 3 4 17 33 49 63, m = 0 4 8 12 16 20 40 63.
  // Bytes 0-3: sc[0..3] | (sc[4..7] >> 4) << 6; bytes 4-7: m[0..3] | (m[4..7] >> 4) << 6;
  // bytes 8-11: (sc[4..7] & 15) | (m[4..7] & 15) << 4.
  const uint8_t k4_scales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x44, 0x88, 0xcc, 0x01, 0x41, 0x81, 0xff};
  SECTION("q4_K: d * sc * q - dmin * m") {
    // Layout: d | dmin | scales[12] | qs[128]. d = 1, dmin = 0.25. qs bytes 0-63 = 0x5a (q 10 for
    // the first 32 of each 64 elements, 5 for the next), 64-127 = 0xa5, byte 3 = 0xf0.
    block b(144);
    b.u16(0, h_1).u16(2, h_0_25);
    for (uint8_t i = 0; i < 12; ++i) b.u8(4 + i, k4_scales[i]);
    b.fill(16, 64, 0x5a).fill(80, 64, 0xa5).u8(16 + 3, 0xf0);
    const auto x = b.decode(tensor_type::q4_k);
    CHECK(x[0] == 10.0f);      // sub 0: 1 * 10 - 0
    CHECK(x[3] == 0.0f);       // low nibble of byte 3 = 0
    CHECK(x[35] == 29.0f);     // sub 1, high nibble of byte 3 = 15: 2 * 15 - 0.25 * 4
    CHECK(x[32] == 9.0f);      // sub 1: 2 * 5 - 1
    CHECK(x[64] == 28.0f);     // sub 2: 3 * 10 - 2
    CHECK(x[100] == 17.0f);    // sub 3: 4 * 5 - 3
    CHECK(x[130] == 81.0f);    // sub 4 (second 128: 0xa5): 17 * 5 - 4
    CHECK(x[170] == 325.0f);   // sub 5: 33 * 10 - 5
    CHECK(x[200] == 235.0f);   // sub 6: 49 * 5 - 10
    CHECK(x[255] == 614.25f);  // sub 7: 63 * 10 - 15.75
  }
  SECTION("q5_K: q4_K with a 5th bit in qh") {
    // Layout: d | dmin | scales[12] | qh[32] | qs[128]. qs all 0x21 (q 1, then 2); qh[0] = 0xff
    // (elements 0, 32, ..., 224 get +16), qh[31] = 0x81 (elements 31 and 255).
    block b(176);
    b.u16(0, h_1).u16(2, h_0_25);
    for (uint8_t i = 0; i < 12; ++i) b.u8(4 + i, k4_scales[i]);
    b.u8(16, 0xff).u8(16 + 31, 0x81).fill(48, 128, 0x21);
    const auto x = b.decode(tensor_type::q5_k);
    CHECK(x[0] == 17.0f);  // sub 0: 1 * (1 + 16)
    CHECK(x[1] == 1.0f);
    CHECK(x[31] == 17.0f);
    CHECK(x[32] == 35.0f);      // sub 1: 2 * (2 + 16) - 1
    CHECK(x[33] == 3.0f);       // 2 * 2 - 1
    CHECK(x[63] == 3.0f);       // qh[31] bit 1 clear
    CHECK(x[224] == 1118.25f);  // sub 7: 63 * 18 - 15.75
    CHECK(x[255] == 1118.25f);
    CHECK(x[254] == 110.25f);  // 63 * 2 - 15.75
  }
  SECTION("q6_K: d * sc * (q - 32)") {
    // Layout: ql[128] | qh[64] | scales[16] (int8) | d. d = 0.5, scales j - 8. ql all 0x21 (low 4
    // bits 1 for groups 0-1 of each 128, 2 for groups 2-3) but ql[32] = 0x0f; qh zero but
    // qh[0] = 0xe4 (high 2 bits 0, 1, 2, 3 for groups 0-3 of lane 0).
    block b(210);
    b.fill(0, 128, 0x21).u8(32, 0x0f).u8(128, 0xe4);
    for (uint8_t j = 0; j < 16; ++j) b.u8(192 + j, static_cast<uint8_t>(static_cast<int8_t>(j - 8)));
    b.u16(208, h_0_5);
    const auto x = b.decode(tensor_type::q6_k);
    CHECK(x[0] == 124.0f);  // sub 0 (-8): q = 1 - 32: 0.5 * -8 * -31
    CHECK(x[1] == 124.0f);
    CHECK(x[32] == 3.0f);      // sub 2 (-6): low 15 (ql[32]), high 1: 31 - 32
    CHECK(x[64] == -4.0f);     // sub 4 (-4): low 2, high 2: 34 - 32
    CHECK(x[96] == -16.0f);    // sub 6 (-2): high nibble of ql[32] = 0, high 3: 48 - 32
    CHECK(x[128] == 0.0f);     // sub 8 (0)
    CHECK(x[255] == -105.0f);  // sub 15 (7): low 2: 0.5 * 7 * -30
  }
  SECTION("q8_K: d * q, d a float") {
    block b(292);
    const float d = 0.25f;
    uint32_t bits;
    std::memcpy(&bits, &d, 4);
    for (size_t i = 0; i < 4; ++i) b.u8(i, static_cast<uint8_t>(bits >> (8 * i)));
    for (int e = 0; e < 256; ++e)
      b.u8(4 + static_cast<size_t>(e), static_cast<uint8_t>(static_cast<int8_t>(e - 128)));
    const auto x = b.decode(tensor_type::q8_k);
    CHECK(x[0] == -32.0f);
    CHECK(x[128] == 0.0f);
    CHECK(x[255] == 31.75f);
  }
}
