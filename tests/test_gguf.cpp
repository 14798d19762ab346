// GGUF writer -> reader round trips, metadata getters, and files on disk.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp

#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "model/gguf.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::gguf;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<std::byte> b(n);
  for (auto& x : b) x = static_cast<std::byte>(rng());
  return b;
}

// The VmFlags line of the mapping that holds p, from /proc/self/smaps ("" if none: a kernel
// without them, or no such mapping).
std::string vm_flags_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2) inside = lo <= at && at < hi;
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

file parse_ok(std::span<const std::byte> bytes) {
  auto r = file::parse(bytes);
  if (!r) FAIL(r.error().message());
  return std::move(r).value();
}

// Values compare by their encoding, so NaN and -0.0 compare as the bits they are.
bool same(const value& a, const value& b) {
  if (a.type() != b.type()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const auto& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, array_value>) {
          if (x.type != y.type || x.items.size() != y.items.size()) return false;
          for (size_t i = 0; i < x.items.size(); ++i) {
            if (!same(x.items[i], y.items[i])) return false;
          }
          return true;
        } else if constexpr (std::is_floating_point_v<T>) {
          return std::memcmp(&x, &y, sizeof(T)) == 0;
        } else {
          return x == y;
        }
      },
      a);
}

array_value array_of(value_type t, std::vector<value> items) {
  return {t, std::move(items)};
}

// One of every value type, with edge values.
std::vector<kv> sample_metadata() {
  return {
      {"u8", uint8_t{255}},
      {"i8", int8_t{-128}},
      {"u16", uint16_t{65535}},
      {"i16", int16_t{-32768}},
      {"u32", uint32_t{4000000000u}},
      {"i32", int32_t{-7}},
      {"f32", -0.0f},
      {"f32.nan", std::numeric_limits<float>::quiet_NaN()},
      {"bool", true},
      {"string", std::string("h\xc3\xa9llo\0world", 12)},
      {"string.empty", std::string()},
      {"array.empty", array_of(value_type::f64, {})},
      {"array.strings", array_of(value_type::string, {std::string("a"), std::string("bc")})},
      {"array.nested", array_of(value_type::array, {array_of(value_type::i32, {int32_t{1}, int32_t{-2}}),
                                                    array_of(value_type::i32, {})})},
      {"u64", std::numeric_limits<uint64_t>::max()},
      {"i64", std::numeric_limits<int64_t>::min()},
      {"f64", 3.141592653589793},
  };
}

}  // namespace

TEST_CASE("metadata of every type round-trips in order", "[gguf]") {
  writer w;
  const auto kvs = sample_metadata();
  for (const auto& p : kvs) w.set(p.key, p.val);
  const auto bytes = w.to_bytes();
  const file f = parse_ok(bytes);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.tensors().empty());
  REQUIRE(f.metadata().size() == kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    INFO(kvs[i].key);
    CHECK(f.metadata()[i].key == kvs[i].key);
    CHECK(same(f.metadata()[i].val, kvs[i].val));
  }
}

TEST_CASE("tensors of every type round-trip with aligned, non-overlapping data", "[gguf]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  struct spec {
    const char* name;
    tensor_type type;
    std::vector<uint64_t> dims;
  };
  const std::vector<spec> specs = {{"a.f32", tensor_type::f32, {3}},
                                   {"b.f16", tensor_type::f16, {5, 2}},
                                   {"c.bf16", tensor_type::bf16, {1, 1, 7}},
                                   {"d.q8_0", tensor_type::q8_0, {64, 3}},
                                   {"e.q4_0", tensor_type::q4_0, {32, 1, 2, 2}}};
  writer w(64);
  std::vector<std::vector<std::byte>> data;
  for (const auto& s : specs) {
    uint64_t n = 1;
    for (uint64_t d : s.dims) n *= d;
    data.push_back(random_bytes(*bytes_for(s.type, n), rng));
    w.add_tensor(s.name, s.type, s.dims, data.back());
  }
  const auto bytes = w.to_bytes();
  const file f = parse_ok(bytes);
  CHECK(f.alignment() == 64);
  CHECK(f.get_uint("general.alignment") == 64u);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.size_bytes() == bytes.size());
  REQUIRE(f.tensors().size() == specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const tensor_info& t = f.tensors()[i];
    INFO(t.name);
    CHECK(t.name == specs[i].name);
    CHECK(t.type == specs[i].type);
    CHECK(t.dims == specs[i].dims);
    CHECK(t.offset % 64 == 0);
    CHECK(t.n_bytes == data[i].size());
    CHECK(t.n_elements * traits_of(t.type).block_bytes == t.n_bytes * traits_of(t.type).block_size);
    const auto got = f.data(t);
    CHECK(std::equal(got.begin(), got.end(), data[i].begin(), data[i].end()));
    CHECK(f.find_tensor(specs[i].name) == &t);
  }
  CHECK(f.find_tensor("missing") == nullptr);
}

TEST_CASE("set replaces a value in place, and general.alignment re-lays the data", "[gguf]") {
  writer w;
  w.set("a", uint32_t{1});
  w.set("b", std::string("x"));
  w.add_tensor("t0", tensor_type::f32, {1}, std::vector<std::byte>(4, std::byte{1}));
  w.add_tensor("t1", tensor_type::f32, {1}, std::vector<std::byte>(4, std::byte{2}));
  w.set("a", std::string("replaced"));
  w.set("general.alignment", uint32_t{128});
  const auto bytes = w.to_bytes();
  const file f = parse_ok(bytes);
  REQUIRE(f.metadata().size() == 3);
  CHECK(f.metadata()[0].key == "a");
  CHECK(*f.get_string("a") == "replaced");
  CHECK(f.alignment() == 128);
  CHECK(f.data_offset() % 128 == 0);
  CHECK(f.tensors()[1].offset == 128);
  CHECK(f.data(f.tensors()[1])[0] == std::byte{2});
  CHECK(bytes.size() == f.data_offset() + 256);  // every tensor padded, the last one too
}

TEST_CASE("typed getters convert only where the value fits", "[gguf]") {
  writer w;
  w.set("u8", uint8_t{7});
  w.set("neg", int32_t{-3});
  w.set("big", std::numeric_limits<uint64_t>::max());
  w.set("f32", 0.5f);
  w.set("f64", 0.25);
  w.set("flag", false);
  w.set("name", std::string("llama"));
  w.set("list", array_of(value_type::u32, {uint32_t{1}}));
  const auto bytes = w.to_bytes();
  const file f = parse_ok(bytes);
  CHECK(f.get_uint("u8") == 7u);
  CHECK(f.get_int("u8") == 7);
  CHECK_FALSE(f.get_uint("neg"));
  CHECK(f.get_int("neg") == -3);
  CHECK(f.get_uint("big") == std::numeric_limits<uint64_t>::max());
  CHECK_FALSE(f.get_int("big"));
  CHECK(f.get_float("f32") == 0.5);
  CHECK(f.get_float("f64") == 0.25);
  CHECK_FALSE(f.get_float("u8"));
  CHECK_FALSE(f.get_uint("f32"));
  CHECK(f.get_bool("flag") == false);
  CHECK_FALSE(f.get_uint("flag"));
  CHECK_FALSE(f.get_bool("u8"));
  CHECK(*f.get_string("name") == "llama");
  CHECK(f.get_string("u8") == nullptr);
  REQUIRE(f.get_array("list") != nullptr);
  CHECK(f.get_array("list")->items.size() == 1);
  CHECK(f.get_array("name") == nullptr);
  CHECK(f.find("absent") == nullptr);
  CHECK_FALSE(f.get_uint("absent"));
}

TEST_CASE("random models survive write -> parse -> write byte for byte", "[gguf]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<tensor_type> types = {tensor_type::f32, tensor_type::f16, tensor_type::bf16,
                                          tensor_type::q8_0, tensor_type::q4_0};
  for (int round = 0; round < 20; ++round) {
    writer w(uint64_t{1} << (rng() % 8));
    const auto kvs = sample_metadata();
    for (size_t i = 0; i < kvs.size(); ++i) {
      if (rng() % 2) w.set(kvs[i].key + "." + std::to_string(rng() % 4), kvs[i].val);
    }
    const size_t n_tensors = rng() % 6;
    for (size_t i = 0; i < n_tensors; ++i) {
      const auto type = types[rng() % types.size()];
      std::vector<uint64_t> dims = {traits_of(type).block_size * (1 + rng() % 3)};
      while (dims.size() < 4 && rng() % 2) dims.push_back(1 + rng() % 3);
      uint64_t n = 1;
      for (uint64_t d : dims) n *= d;
      w.add_tensor(std::to_string(i), type, dims, random_bytes(*bytes_for(type, n), rng));
    }
    const auto first = w.to_bytes();
    const file f = parse_ok(first);
    writer again(f.alignment());
    for (const auto& p : f.metadata()) again.set(p.key, p.val);
    for (const auto& t : f.tensors()) {
      const auto d = f.data(t);
      again.add_tensor(t.name, t.type, t.dims, std::vector<std::byte>(d.begin(), d.end()));
    }
    REQUIRE(again.to_bytes() == first);
  }
}

TEST_CASE("files are written atomically and mapped back", "[gguf]") {
  // A fresh folder for each run of the body (one per section), whatever an earlier run left.
  std::string made = (fs::temp_directory_path() / "hearth-gguf-XXXXXX").string();
  REQUIRE(mkdtemp(made.data()) != nullptr);
  const fs::path dir = made;
  const std::string path = (dir / "m.gguf").string();

  writer w;
  w.set("general.architecture", std::string("llama"));
  int calls = 0;
  w.add_tensor("w", tensor_type::q8_0, {32, 2}, [&](std::span<std::byte> out) {
    ++calls;
    CHECK(out.size() == 68);
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i);
  });
  REQUIRE(w.write(path).ok());
  CHECK(calls == 1);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temp

  auto r = file::open(path);
  REQUIRE(r.ok());
  const auto from_memory = w.to_bytes();
  CHECK(r->size_bytes() == from_memory.size());
  const auto d = r->data(r->tensors()[0]);
  CHECK(d[67] == std::byte{67});
  CHECK(*r->get_string("general.architecture") == "llama");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(std::memcmp(on_disk.data(), from_memory.data(), from_memory.size()) == 0);

  SECTION("released tensor pages read back the same") {
    writer big;
    big.add_tensor("big", tensor_type::f32, {4096, 8}, [](std::span<std::byte> out) {
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 7);
    });
    const std::string big_path = (dir / "big.gguf").string();
    REQUIRE(big.write(big_path).ok());
    auto f = file::open(big_path);
    REQUIRE(f.ok());
    const auto& t = f->tensors()[0];
    const std::vector<std::byte> before(f->data(t).begin(), f->data(t).end());
    f->release(t);
    CHECK(std::equal(before.begin(), before.end(), f->data(t).begin(), f->data(t).end()));
    r->release(r->tensors()[0]);  // smaller than a page: nothing to release, no harm
    CHECK(r->data(r->tensors()[0])[67] == std::byte{67});
  }
  SECTION("the mapping is advised for transparent huge pages, where the kernel has them") {
    // Where the kernel has THP and tells a mapping's flags (the mapping of the test's own code
    // shows whether it does).
    const auto code = reinterpret_cast<const void*>(&vm_flags_of);
    if (fs::exists("/sys/kernel/mm/transparent_hugepage/enabled") && !vm_flags_of(code).empty())
      CHECK(vm_flags_of(d.data()).find(" hg") != std::string::npos);
  }
  SECTION("a file outlives the mapping's other copies") {
    const file copy = *r;
    r = file::parse({});  // drops the original
    CHECK(copy.data(copy.tensors()[0])[1] == std::byte{1});
  }
  SECTION("missing files, directories and empty files fail as values") {
    CHECK(file::open((dir / "absent.gguf").string()).error().code == parse_errc::io);
    CHECK(file::open(dir.string()).error().code == parse_errc::io);
    std::ofstream((dir / "empty.gguf").string()).close();
    CHECK(file::open((dir / "empty.gguf").string()).error().code == parse_errc::truncated);
    const auto st = w.write((dir / "no" / "such" / "dir.gguf").string());
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == errc::io);
  }
  fs::remove_all(dir);
}
