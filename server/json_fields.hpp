#pragma once
// Reading a client's JSON object field by field, each refusal naming the field: what the wire
// protocol's codec and the HTTP APIs' readers share. Inside a reader a bad field throws
// `refusal`; the reader's edge (parse_message, the HTTP parsers) turns it into an error value.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::wire {

//! A field refused, with the message that names it.
struct refusal {
  std::string message;
};

//! The largest seed a client may give: 2^53, every integer up to it exact in a JSON double.
inline constexpr int64_t max_seed = int64_t{1} << 53;

//! A field name as a client wrote it, quoted and short enough to put in an error.
std::string shown(std::string_view name);

//! Whether `text` nests arrays and objects deeper than `max_depth`: checked before parsing, so
//! a flood of brackets never costs a deep DOM.
bool nested_too_deep(std::string_view text, int max_depth);

//! The fields of one JSON object; every refusal names the field (`path` prefixes nested ones).
class fields {
 public:
  fields(const nlohmann::json& object, std::string path = {}) : o_(object), path_(std::move(path)) {}

  //! Refuses any field not in `known`.
  void only(std::initializer_list<std::string_view> known) const { only(known, {}); }
  //! Refuses any field in neither list (`what` says what it is not: "a field of this message").
  void only(std::span<const std::string_view> known, std::span<const std::string_view> also_known,
            std::string_view what = "a field of this message") const;
  bool has(std::string_view f) const { return o_.contains(f); }
  //! A string of min_bytes to max_bytes; missing is refused.
  std::string text(std::string_view f, size_t min_bytes, size_t max_bytes) const;
  //! An integer in [lo, hi], `fallback` when missing.
  int64_t integer(std::string_view f, int64_t lo, int64_t hi, int64_t fallback) const;
  //! A number in [lo, hi], or (lo, hi] when `lo_open`; `fallback` when missing.
  double number(std::string_view f, double lo, double hi, bool lo_open, double fallback) const;
  bool flag(std::string_view f, bool fallback) const;
  //! An array of min_n to max_n entries; missing is refused.
  const nlohmann::json& array(std::string_view f, size_t min_n, size_t max_n) const;
  //! The field itself, whatever its type; missing is refused.
  const nlohmann::json& get(std::string_view f) const;
  //! The field's name with the path in front, as errors give it.
  std::string name(std::string_view f) const { return path_ + std::string(f); }
  [[noreturn]] void fail(std::string_view f, const std::string& what) const;

 private:
  const nlohmann::json& o_;
  std::string path_;
};

//! Stop strings: at most this many, each 1 to max_stop_bytes (docs/protocol.md).
inline constexpr size_t max_stops = 8;
inline constexpr size_t max_stop_bytes = 256;

//! The stop strings in `field` (none when missing): an array, or with `one_string_too` also a
//! single string (as OpenAI's `stop` may be).
std::vector<std::string> read_stops(const fields& f, std::string_view field, bool one_string_too);

}  // namespace hearth::wire
