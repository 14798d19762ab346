#include "server/json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hearth::wire {

using json = nlohmann::json;

std::string shown(std::string_view name) {
  std::string s(1, '\'');  // (appended piece by piece: g++ 12 warns falsely, -Wrestrict, on "'" + ...)
  s.append(name.substr(0, 64));
  s.append(name.size() > 64 ? "...'" : "'");
  return s;
}

bool nested_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

void fields::only(std::span<const std::string_view> known, std::span<const std::string_view> also_known,
                  std::string_view what) const {
  for (const auto& [k, v] : o_.items())
    if (std::ranges::find(known, k) == known.end() && std::ranges::find(also_known, k) == also_known.end())
      fail(k, "is not " + std::string(what));
}

std::string fields::text(std::string_view f, size_t min_bytes, size_t max_bytes) const {
  const json& v = get(f);
  if (!v.is_string()) fail(f, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() < min_bytes || s.size() > max_bytes)
    fail(f, "must be " + std::to_string(min_bytes) + " to " + std::to_string(max_bytes) + " bytes (got " +
                std::to_string(s.size()) + ")");
  return s;
}

int64_t fields::integer(std::string_view f, int64_t lo, int64_t hi, int64_t fallback) const {
  if (!has(f)) return fallback;
  const json& v = get(f);
  const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (!v.is_number_integer()) fail(f, "must be " + range);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) fail(f, "must be " + range);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) fail(f, "must be " + range + " (got " + std::to_string(x) + ")");
  return x;
}

double fields::number(std::string_view f, double lo, double hi, bool lo_open, double fallback) const {
  if (!has(f)) return fallback;
  const json& v = get(f);
  if (!v.is_number()) fail(f, "must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || (lo_open ? x <= lo : x < lo) || x > hi) {
    char range[96];
    std::snprintf(range, sizeof range, "must be a number in %s%g, %g] (got %g)", lo_open ? "(" : "[", lo, hi,
                  x);
    fail(f, range);
  }
  return x;
}

bool fields::flag(std::string_view f, bool fallback) const {
  if (!has(f)) return fallback;
  const json& v = get(f);
  if (!v.is_boolean()) fail(f, "must be true or false");
  return v.get<bool>();
}

const json& fields::array(std::string_view f, size_t min_n, size_t max_n) const {
  const json& v = get(f);
  if (!v.is_array()) fail(f, "must be an array");
  if (v.size() < min_n || v.size() > max_n)
    fail(f, "must have " + std::to_string(min_n) + " to " + std::to_string(max_n) + " entries (got " +
                std::to_string(v.size()) + ")");
  return v;
}

const json& fields::get(std::string_view f) const {
  const auto it = o_.find(f);
  if (it == o_.end()) fail(f, "is missing");
  return *it;
}

std::vector<std::string> read_stops(const fields& f, std::string_view field, bool one_string_too) {
  std::vector<std::string> out;
  if (!f.has(field)) return out;
  if (one_string_too && f.get(field).is_string()) return {f.text(field, 1, max_stop_bytes)};
  const json& list = f.array(field, 0, max_stops);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = std::string(field) + "[" + std::to_string(i) + "]";
    if (!list[i].is_string()) f.fail(at, "must be a string");
    const auto& s = list[i].get_ref<const std::string&>();
    if (s.empty() || s.size() > max_stop_bytes) f.fail(at, "must be 1 to 256 bytes");
    out.push_back(s);
  }
  return out;
}

void fields::fail(std::string_view f, const std::string& what) const {
  throw refusal{"field " + shown(name(f)) + " " + what};
}

}  // namespace hearth::wire
