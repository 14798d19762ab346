// GGUF bytes built by hand: the writer's exact layout, and every way a file can be malformed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "model/gguf.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::gguf;

namespace {

// Little-endian bytes, written field by field as the format describes them.
struct builder {
  std::vector<std::byte> b;

  builder& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<std::byte>(v >> (8 * i)));
    return *this;
  }
  builder& u8(uint8_t v) { return le(v, 1); }
  builder& u32(uint32_t v) { return le(v, 4); }
  builder& u64(uint64_t v) { return le(v, 8); }
  builder& str(std::string_view s) {
    u64(s.size());
    for (char c : s) u8(static_cast<uint8_t>(c));
    return *this;
  }
  builder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  builder& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  builder& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  builder& pad(size_t align) {
    while (align && b.size() % align) u8(0);
    return *this;
  }
  builder& zeros(size_t n) {
    b.resize(b.size() + n);
    return *this;
  }
};

parse_error parse_fails(const builder& bld, parse_errc code, const limits& lim = {}) {
  auto r = file::parse(bld.b, lim);
  REQUIRE_FALSE(r.ok());
  INFO(r.error().message());
  CHECK(r.error().code == code);
  return r.error();
}

}  // namespace

TEST_CASE("the writer lays bytes out exactly as the format says", "[gguf]") {
  writer w;
  w.set("general.architecture", std::string("llama"));
  w.set("ids", array_value{value_type::i16, {int16_t{-2}}});
  w.add_tensor("a", tensor_type::f32, {2}, std::vector<std::byte>(8, std::byte{0xAB}));
  w.add_tensor("b", tensor_type::q8_0, {32}, std::vector<std::byte>(34, std::byte{0xCD}));

  builder want;
  want.header(2, 2).str("general.architecture").u32(8).str("llama");
  want.str("ids").u32(9).u32(3).u64(1).le(0xFFFE, 2);
  want.tensor("a", {2}, 0, 0).tensor("b", {32}, 8, 32).pad(32);
  for (int i = 0; i < 8; ++i) want.u8(0xAB);
  want.pad(32);
  for (int i = 0; i < 34; ++i) want.u8(0xCD);
  want.pad(32);
  CHECK(w.to_bytes() == want.b);
}

TEST_CASE("headers: magic, version, truncation", "[gguf]") {
  auto e = parse_fails(builder{}, parse_errc::truncated);
  CHECK(e.field == "header.magic");
  CHECK(e.offset == 0);
  CHECK(e.message() == "gguf: truncated at byte 0 in header.magic: needs 4 bytes, 0 remain");
  CHECK(e.to_error().code == errc::malformed);

  builder bad_magic;
  bad_magic.header(0, 0).b[0] = std::byte{'g'};
  parse_fails(bad_magic, parse_errc::bad_magic);
  for (uint32_t v : {1u, 4u}) {
    e = parse_fails(builder{}.header(0, 0, v), parse_errc::bad_version);
    CHECK(e.offset == 4);
    CHECK(e.to_error().code == errc::unsupported);
  }
  auto v2 = file::parse(builder{}.header(0, 1, 2).kv_u32("k", 1).b);
  REQUIRE(v2.ok());
  CHECK(v2->version() == 2);
  CHECK(v2->get_uint("k") == 1u);

  e = parse_fails(builder{}.u32(0x46554747).u32(3).u32(0), parse_errc::truncated);
  CHECK(e.field == "header.n_tensors");
  CHECK(e.offset == 8);
}

TEST_CASE("counts are checked against limits and the bytes that remain", "[gguf]") {
  limits lim;
  lim.max_kv = 2;
  auto e = parse_fails(builder{}.header(0, 3), parse_errc::limit_exceeded, lim);
  CHECK(e.field == "header.n_kv");
  CHECK(e.to_error().code == errc::limit_exceeded);
  e = parse_fails(builder{}.header(0, 1000), parse_errc::truncated);
  CHECK(e.field == "header.n_kv");
  CHECK(e.offset == 16);
  e = parse_fails(builder{}.header(uint64_t{1} << 62, 0), parse_errc::limit_exceeded);
  CHECK(e.field == "header.n_tensors");
  e = parse_fails(builder{}.header(2, 0).zeros(40), parse_errc::truncated);
  CHECK(e.field == "header.n_tensors");

  lim = {};
  lim.max_string_bytes = 4;
  e = parse_fails(builder{}.header(0, 1).str("hello").u32(4).u32(0), parse_errc::limit_exceeded, lim);
  CHECK(e.field == "kv[0].key");
  CHECK(e.offset == 24);
  e = parse_fails(builder{}.header(0, 1).u64(100).zeros(20), parse_errc::truncated);
  CHECK(e.field == "kv[0].key");

  lim = {};
  lim.max_array_items = 3;
  e = parse_fails(builder{}.header(0, 1).str("a").u32(9).u32(0).u64(4).zeros(4), parse_errc::limit_exceeded,
                  lim);
  CHECK(e.field == "kv[0] (a).count");
  e = parse_fails(builder{}.header(0, 1).str("a").u32(9).u32(4).u64(3).zeros(11), parse_errc::truncated);
  CHECK(e.field == "kv[0] (a).count");
}

TEST_CASE("metadata values: types, booleans, nesting, duplicates", "[gguf]") {
  auto e = parse_fails(builder{}.header(0, 1).str("k").u32(13).u32(0), parse_errc::bad_value_type);
  CHECK(e.field == "kv[0] (k).type");
  CHECK(e.offset == 33);
  e = parse_fails(builder{}.header(0, 1).str("k").u32(9).u32(99).u64(0), parse_errc::bad_value_type);
  CHECK(e.field == "kv[0] (k).type");

  e = parse_fails(builder{}.header(0, 1).str("k").u32(7).u8(2), parse_errc::bad_bool);
  CHECK(e.field == "kv[0] (k)");

  // Strings inside an array: the third one claims more bytes than remain.
  e = parse_fails(builder{}.header(0, 1).str("tok").u32(9).u32(8).u64(3).str("a").str("b").u64(9),
                  parse_errc::truncated);
  CHECK(e.field == "kv[0] (tok).items[2]");

  // Nested arrays: limits.max_array_depth levels are fine, one more is not.
  const auto nested = [](int depth) {
    builder b;
    b.header(0, 1).str("n").u32(9);
    for (int i = 1; i < depth; ++i) b.u32(9).u64(1);
    b.u32(4).u64(1).u32(5);
    return b;
  };
  CHECK(file::parse(nested(4).b).ok());
  e = parse_fails(nested(5), parse_errc::bad_value_type);
  CHECK(e.field == "kv[0] (n).items[0].items[0].items[0].type");

  e = parse_fails(builder{}.header(0, 2).kv_u32("k", 1).kv_u32("k", 2), parse_errc::duplicate_key);
  CHECK(e.field == "kv[1].key");
}

TEST_CASE("general.alignment must be a u32 power of two", "[gguf]") {
  for (uint32_t bad : {0u, 48u, 1u << 21}) {
    auto e = parse_fails(builder{}.header(0, 1).kv_u32("general.alignment", bad), parse_errc::bad_alignment);
    CHECK(e.field == "kv[0] (general.alignment)");
    CHECK(e.offset == 24 + 8 + 17 + 4);
  }
  parse_fails(builder{}.header(0, 1).str("general.alignment").u32(10).u64(32), parse_errc::bad_alignment);
  auto one =
      file::parse(builder{}.header(1, 1).kv_u32("general.alignment", 1).tensor("t", {1}, 1, 0).u8(7).u8(0).b);
  REQUIRE(one.ok());
  CHECK(one->alignment() == 1);
  CHECK(one->data(one->tensors()[0]).size() == 2);
}

TEST_CASE("tensor infos: dims, types, sizes, offsets", "[gguf]") {
  const auto one = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset = 0) {
    return builder{}.header(1, 0).tensor("t", std::move(dims), type, offset).pad(32).zeros(64);
  };
  CHECK(file::parse(one({16}, 0).b).ok());
  auto e = parse_fails(one({}, 0), parse_errc::bad_dims);
  CHECK(e.field == "tensor_infos[0].n_dims");
  parse_fails(one({1, 1, 1, 1, 1}, 0), parse_errc::bad_dims);
  e = parse_fails(one({4, 0}, 0), parse_errc::bad_dims);
  CHECK(e.field == "tensor_infos[0].dims[1]");
  e = parse_fails(one({(uint64_t{1} << 32) + 1}, 0), parse_errc::limit_exceeded);
  CHECK(e.field == "tensor_infos[0].dims[0]");
  e = parse_fails(one({256}, 16), parse_errc::bad_tensor_type);  // iq2_xxs: not read by Hearth
  CHECK(e.field == "tensor_infos[0].type");
  CHECK(e.to_error().code == errc::unsupported);
  e = parse_fails(one({33, 2}, 8), parse_errc::bad_dims);
  CHECK(e.field == "tensor_infos[0].dims[0]");
  CHECK(e.offset == 24 + 9 + 4);

  limits wide;
  wide.max_dim = std::numeric_limits<uint64_t>::max();
  parse_fails(one({uint64_t{1} << 40, uint64_t{1} << 40}, 0), parse_errc::overflow, wide);
  parse_fails(one({uint64_t{1} << 62}, 0), parse_errc::overflow, wide);  // bytes, not elements
  e = parse_fails(one({uint64_t{1} << 32, 1024}, 0), parse_errc::limit_exceeded);
  CHECK(e.field == "tensor_infos[0].dims");

  e = parse_fails(one({4}, 0, 16), parse_errc::misaligned);
  CHECK(e.field == "tensor_infos[0].offset");
  e = parse_fails(one({16}, 0, 32), parse_errc::out_of_bounds);
  CHECK(e.field == "tensor_infos[0].offset");
  parse_fails(one({4}, 0, std::numeric_limits<uint64_t>::max() & ~uint64_t{31}), parse_errc::out_of_bounds);

  e = parse_fails(builder{}.header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32).pad(32).zeros(64),
                  parse_errc::duplicate_tensor);
  CHECK(e.field == "tensor_infos[1].name");
  e = parse_fails(builder{}.header(2, 0).tensor("a", {16}, 0, 32).tensor("b", {16}, 0, 0).pad(32).zeros(128),
                  parse_errc::overlap);
  CHECK(e.field == "tensor_infos[0].offset");
  // Tensors may share nothing, but may come in any order and leave gaps.
  CHECK(file::parse(builder{}.header(2, 0).tensor("a", {8}, 0, 64).tensor("b", {8}, 0, 0).pad(32).zeros(96).b)
            .ok());
}

TEST_CASE("every prefix and random corruptions of a valid file fail cleanly", "[gguf]") {
  writer w;
  w.set("general.architecture", std::string("llama"));
  w.set("tokens", array_value{value_type::string, {std::string("<s>"), std::string("a")}});
  w.set("nested", array_value{value_type::array, {array_value{value_type::u8, {uint8_t{1}}}}});
  w.add_tensor("x", tensor_type::q4_0, {32, 2}, std::vector<std::byte>(36, std::byte{3}));
  w.add_tensor("y", tensor_type::bf16, {3}, std::vector<std::byte>(6, std::byte{4}));
  const auto good = w.to_bytes();
  const auto parsed = file::parse(good);
  const auto& y = parsed->tensors()[1];
  const uint64_t data_end = parsed->data_offset() + y.offset + y.n_bytes;
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = file::parse(std::span(good).first(n));
    INFO("prefix of " << n << " bytes");
    // The padding after the last tensor's data is not needed.
    CHECK(r.ok() == (n >= data_end));
    if (!r.ok())
      CHECK((r.error().code == parse_errc::truncated || r.error().code == parse_errc::out_of_bounds));
  }

  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  size_t n_ok = 0;
  for (int i = 0; i < 3000; ++i) {
    auto bad = good;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
      bad[rng() % bad.size()] = static_cast<std::byte>(rng());
    }
    auto r = file::parse(bad);
    if (!r.ok()) continue;
    ++n_ok;
    for (const auto& t : r->tensors()) {
      const auto d = r->data(t);
      REQUIRE(d.size() == t.n_bytes);
      REQUIRE(d.data() >= bad.data());
      REQUIRE(d.data() + d.size() <= bad.data() + bad.size());
    }
  }
  CHECK(n_ok > 0);  // changes to data bytes and string contents still parse
}

TEST_CASE("a tensor type Hearth does not read is refused by name, saying what would load", "[gguf]") {
  const auto one = [](const char* name, uint32_t type) {
    return builder{}.header(1, 0).tensor(name, {256}, type, 0).pad(32).zeros(512);
  };
  auto e = parse_fails(one("output.weight", 16), parse_errc::bad_tensor_type);
  CHECK_THAT(e.detail, Catch::StartsWith("tensor 'output.weight' is iq2_xxs, a type Hearth does not read"));
  CHECK_THAT(e.detail,
             Catch::Contains("q4_K") && Catch::Contains("q6_K") && Catch::Contains("llama-quantize"));
  e = parse_fails(one("blk.0.ffn_up.weight", 34), parse_errc::bad_tensor_type);
  CHECK_THAT(e.detail, Catch::StartsWith("tensor 'blk.0.ffn_up.weight' is tq1_0"));
  // Numbers ggml removed (q4_2) or never had are named as numbers.
  e = parse_fails(one("w", 4), parse_errc::bad_tensor_type);
  CHECK_THAT(e.detail, Catch::StartsWith("tensor 'w' has type 4, which ggml does not define"));
  e = parse_fails(one("w", 0xffffffffu), parse_errc::bad_tensor_type);
  CHECK_THAT(e.detail, Catch::StartsWith("tensor 'w' has type 4294967295"));
  // Every type Hearth reads parses, with its block size and byte size checked.
  for (const tensor_type t : tensor_types()) {
    const auto& tr = traits_of(t);
    INFO(tr.name);
    const auto good = builder{}
                          .header(1, 0)
                          .tensor("t", {256, 2}, static_cast<uint32_t>(t), 0)
                          .pad(32)
                          .zeros(2 * *bytes_for(t, 256));
    auto f = file::parse(good.b);
    REQUIRE(f.ok());
    CHECK(f->tensors()[0].n_bytes == 2 * *bytes_for(t, 256));
    if (tr.block_size > 1) {
      e = parse_fails(builder{}
                          .header(1, 0)
                          .tensor("t", {tr.block_size + 16}, static_cast<uint32_t>(t), 0)
                          .pad(32)
                          .zeros(1024),
                      parse_errc::bad_dims);
      CHECK_THAT(e.detail, Catch::Contains(tr.name));
    }
    // One byte short of its data: out of bounds.
    parse_fails(builder{}
                    .header(1, 0)
                    .tensor("t", {256, 2}, static_cast<uint32_t>(t), 0)
                    .pad(32)
                    .zeros(2 * *bytes_for(t, 256) - 1),
                parse_errc::out_of_bounds);
  }
}

TEST_CASE("a file that fails to parse is named in the message", "[gguf]") {
  const std::string path = (std::filesystem::temp_directory_path() / "hearth-iq2.gguf").string();
  const auto bytes = builder{}.header(1, 0).tensor("output.weight", {256}, 16, 0).pad(32).zeros(512).b;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  auto r = file::open(path);
  std::filesystem::remove(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == path);
  CHECK_THAT(r.error().message(), Catch::StartsWith("gguf: " + path + ": bad_tensor_type at byte "));
  CHECK_THAT(r.error().message(), Catch::Contains("tensor 'output.weight' is iq2_xxs"));
}
