// Parse errors and the read side of a parsed GGUF file: metadata look-ups and tensor views.

#include <algorithm>
#include <limits>
#include <type_traits>

#include "model/gguf.hpp"

namespace hearth::gguf {

const char* to_string(parse_errc code) {
  switch (code) {
    case parse_errc::io:
      return "io";
    case parse_errc::truncated:
      return "truncated";
    case parse_errc::bad_magic:
      return "bad_magic";
    case parse_errc::bad_version:
      return "bad_version";
    case parse_errc::limit_exceeded:
      return "limit_exceeded";
    case parse_errc::bad_value_type:
      return "bad_value_type";
    case parse_errc::bad_bool:
      return "bad_bool";
    case parse_errc::duplicate_key:
      return "duplicate_key";
    case parse_errc::bad_alignment:
      return "bad_alignment";
    case parse_errc::bad_tensor_type:
      return "bad_tensor_type";
    case parse_errc::bad_dims:
      return "bad_dims";
    case parse_errc::duplicate_tensor:
      return "duplicate_tensor";
    case parse_errc::misaligned:
      return "misaligned";
    case parse_errc::out_of_bounds:
      return "out_of_bounds";
    case parse_errc::overlap:
      return "overlap";
    case parse_errc::overflow:
      return "overflow";
  }
  return "unknown";
}

std::string parse_error::message() const {
  return std::string("gguf: ") + (file.empty() ? "" : file + ": ") + to_string(code) + " at byte " +
         std::to_string(offset) + " in " + field + ": " + detail;
}

hearth::error parse_error::to_error() const {
  switch (code) {
    case parse_errc::io:
      return {errc::io, message()};
    case parse_errc::limit_exceeded:
      return {errc::limit_exceeded, message()};
    // Well-formed files Hearth cannot use: other versions, quantizations it does not read.
    case parse_errc::bad_version:
    case parse_errc::bad_tensor_type:
      return {errc::unsupported, message()};
    default:
      return {errc::malformed, message()};
  }
}

const value* file::find(std::string_view key) const {
  const auto it = std::find_if(kvs_.begin(), kvs_.end(), [&](const kv& p) { return p.key == key; });
  return it == kvs_.end() ? nullptr : &it->val;
}

namespace {

// Integer alternatives only: bool is a variant alternative of its own, not a number here.
template <class T>
constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

}  // namespace

std::optional<uint64_t> file::get_uint(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  return std::visit(
      [](const auto& x) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (is_integer_v<T>) {
          if (x >= 0) return static_cast<uint64_t>(x);
        }
        return std::nullopt;
      },
      *v);
}

std::optional<int64_t> file::get_int(std::string_view key) const {
  const value* v = find(key);
  if (!v) return std::nullopt;
  return std::visit(
      [](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (x <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return static_cast<int64_t>(x);
          }
        } else if constexpr (is_integer_v<T>) {
          return static_cast<int64_t>(x);
        }
        return std::nullopt;
      },
      *v);
}

std::optional<double> file::get_float(std::string_view key) const {
  const value* v = find(key);
  if (const auto* f = v ? std::get_if<float>(v) : nullptr) return *f;
  if (const auto* d = v ? std::get_if<double>(v) : nullptr) return *d;
  return std::nullopt;
}

std::optional<bool> file::get_bool(std::string_view key) const {
  const value* v = find(key);
  const auto* b = v ? std::get_if<bool>(v) : nullptr;
  return b ? std::optional<bool>(*b) : std::nullopt;
}

const std::string* file::get_string(std::string_view key) const {
  const value* v = find(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}

const array_value* file::get_array(std::string_view key) const {
  const value* v = find(key);
  return v ? std::get_if<array_value>(v) : nullptr;
}

const tensor_info* file::find_tensor(std::string_view name) const {
  const auto it =
      std::find_if(tensors_.begin(), tensors_.end(), [&](const tensor_info& t) { return t.name == name; });
  return it == tensors_.end() ? nullptr : &*it;
}

std::span<const std::byte> file::data(const tensor_info& t) const {
  // The parser proved data_offset + offset + n_bytes <= size for this file's own tensors.
  // An info from another file may point anywhere: a bug, but not one worth a wild read.
  const bool inside = t.n_bytes <= bytes_.size() && data_offset_ <= bytes_.size() - t.n_bytes &&
                      t.offset <= bytes_.size() - t.n_bytes - data_offset_;
  assert(inside && "gguf::file::data: tensor_info from another file");
  if (!inside) return {};
  return bytes_.subspan(data_offset_ + t.offset, t.n_bytes);
}

}  // namespace hearth::gguf
