// Reads [[tenant]] tables with toml++. Inside this file a bad field throws bad_config; the edge,
// parse_tenants, turns it (and toml++'s parse_error) into an error value.
#include "tenants/tenant_config.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "common/text_file.hpp"

namespace hearth {

namespace {

struct bad_config {
  std::string message;
};

// "source:line: ", the prefix of every message.
std::string where(std::string_view source, const toml::source_region& region) {
  return std::string(source) + ":" + std::to_string(region.begin.line) + ": ";
}

constexpr std::string_view z85_alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
constexpr size_t z85_key_chars = 40;  // a 32-byte CURVE key: 8 groups of 5 characters
constexpr size_t max_name_chars = 64;

constexpr std::string_view tenant_fields[] = {"name", "key",   "http_key_sha256", "class", "weight",
                                              "slo",  "quota", "share_prefix",    "admin"};
constexpr std::string_view slo_fields[] = {"ttft_ms", "itl_ms", "itl_quantile"};
constexpr std::string_view quota_fields[] = {"max_concurrent", "max_queued", "max_prompt_tokens",
                                             "tokens_per_minute"};
constexpr size_t sha256_hex_chars = 64;

// Whether `h` is a SHA-256 as sha256sum prints it: 64 lowercase hex digits.
bool is_sha256_hex(std::string_view h) {
  return h.size() == sha256_hex_chars && h.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Whether `key` is Z85 text of a 32-byte key: 40 characters of the alphabet, and every group of
// five a base-85 number that fits in 32 bits.
bool is_z85_key(std::string_view key) {
  if (key.size() != z85_key_chars) return false;
  for (size_t group = 0; group < key.size(); group += 5) {
    uint64_t value = 0;
    for (char c : key.substr(group, 5)) {
      const size_t digit = z85_alphabet.find(c);
      if (digit == std::string_view::npos) return false;
      value = value * 85 + digit;
    }
    if (value > std::numeric_limits<uint32_t>::max()) return false;
  }
  return true;
}

bool is_valid_name(std::string_view name) {
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  };
  return !name.empty() && name.size() <= max_name_chars && std::ranges::all_of(name, allowed);
}

// Reads one [[tenant]] table; every message names the source, the line, the tenant and the field.
class tenant_reader {
 public:
  tenant_reader(std::string_view source, const toml::table& table, size_t index)
      : source_(source), table_(table), who_("tenant #" + std::to_string(index + 1)) {}

  tenant_config read(key_rule keys) {
    tenant_config t;
    t.name = text("name", true);
    if (!is_valid_name(t.name))
      fail(table_.get("name"), "name", "must be 1 to 64 letters, digits, '_', '.' or '-'");
    who_ = "tenant '" + t.name + "'";  // from here on, errors name the tenant
    only_known(table_, tenant_fields, "");
    t.key = text("key", keys == key_rule::required);
    if (table_.contains("key") && !is_z85_key(t.key))
      fail(table_.get("key"), "key", "must be a CURVE public key in Z85 text (40 characters)");
    t.http_key_sha256 = text("http_key_sha256", false);
    if (table_.contains("http_key_sha256") && !is_sha256_hex(t.http_key_sha256))
      fail(table_.get("http_key_sha256"), "http_key_sha256",
           "must be a SHA-256 in lowercase hex (64 characters)");
    t.cls = tenant_class_field();
    t.weight = number(table_, "", "weight", 1.0, /*positive=*/true);
    t.share_prefix = flag("share_prefix", true);
    t.admin = flag("admin", false);
    read_slo(t.slo);
    read_quota(t.quota);
    return t;
  }

  [[noreturn]] void fail(const toml::node* at, std::string_view field, std::string_view what) const {
    throw bad_config{where(source_, (at ? at : &table_)->source()) + who_ + ": " + std::string(field) + " " +
                     std::string(what)};
  }

 private:
  void only_known(const toml::table& t, std::span<const std::string_view> known,
                  std::string_view prefix) const {
    for (const auto& [k, v] : t)
      if (std::ranges::find(known, k.str()) == known.end()) {
        std::string list;
        for (std::string_view f : known) list += (list.empty() ? "" : ", ") + std::string(f);
        fail(&v, std::string(prefix) + std::string(k.str()), "is not a known field (known: " + list + ")");
      }
  }

  std::string text(std::string_view field, bool required) const {
    const toml::node* n = table_.get(field);
    if (!n) {
      if (required) fail(nullptr, field, "is missing");
      return {};
    }
    if (!n->is_string()) fail(n, field, "must be a string");
    return std::string(n->as_string()->get());
  }

  tenant_class tenant_class_field() const {
    if (!table_.contains("class")) return tenant_class::standard;
    const std::string name = text("class", true);
    if (name == "interactive") return tenant_class::interactive;
    if (name == "standard") return tenant_class::standard;
    if (name == "background") return tenant_class::background;
    fail(table_.get("class"), "class",
         "must be \"interactive\", \"standard\" or \"background\" (got \"" + name + "\")");
  }

  bool flag(std::string_view field, bool fallback) const {
    const toml::node* n = table_.get(field);
    if (!n) return fallback;
    if (!n->is_boolean()) fail(n, field, "must be true or false");
    return n->as_boolean()->get();
  }

  // A finite number, > 0 when `positive`, else >= 0; integers are accepted for floats.
  double number(const toml::table& t, std::string_view prefix, std::string_view field, double fallback,
                bool positive) const {
    const toml::node* n = t.get(field);
    if (!n) return fallback;
    const std::string path = std::string(prefix) + std::string(field);
    if (!n->is_number()) fail(n, path, "must be a number");
    const double value = *n->value<double>();
    if (!std::isfinite(value) || (positive ? value <= 0 : value < 0))
      fail(n, path, positive ? "must be a number > 0" : "must be a number >= 0");
    return value;
  }

  uint32_t count(const toml::table& t, std::string_view field) const {
    const toml::node* n = t.get(field);
    if (!n) return 0;
    const std::string path = "quota." + std::string(field);
    if (!n->is_integer()) fail(n, path, "must be a whole number (0 = unlimited)");
    const int64_t value = n->as_integer()->get();
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      fail(n, path, "must be from 0 to 4294967295 (got " + std::to_string(value) + ")");
    return static_cast<uint32_t>(value);
  }

  const toml::table* sub_table(std::string_view field) const {
    const toml::node* n = table_.get(field);
    if (n && !n->is_table()) fail(n, field, "must be a table, e.g. " + std::string(field) + " = { ... }");
    return n ? n->as_table() : nullptr;
  }

  void read_slo(tenant_slo& slo) const {
    const toml::table* t = sub_table("slo");
    if (!t) return;
    only_known(*t, slo_fields, "slo.");
    slo.ttft_ms = number(*t, "slo.", "ttft_ms", 0, false);
    slo.itl_ms = number(*t, "slo.", "itl_ms", 0, false);
    slo.itl_quantile = number(*t, "slo.", "itl_quantile", slo.itl_quantile, true);
    if (slo.itl_quantile > 1) fail(t->get("itl_quantile"), "slo.itl_quantile", "must be at most 1");
  }

  void read_quota(tenant_quota& q) const {
    const toml::table* t = sub_table("quota");
    if (!t) return;
    only_known(*t, quota_fields, "quota.");
    q.max_concurrent = count(*t, "max_concurrent");
    q.max_queued = count(*t, "max_queued");
    q.max_prompt_tokens = count(*t, "max_prompt_tokens");
    q.tokens_per_minute = count(*t, "tokens_per_minute");
  }

  std::string_view source_;
  const toml::table& table_;
  std::string who_;
};

// Names and keys identify tenants (in logs, and at the gateway): each must be unique.
void check_unique(const std::vector<tenant_config>& tenants, const tenant_reader& last) {
  const tenant_config& t = tenants.back();
  for (size_t i = 0; i + 1 < tenants.size(); ++i) {
    if (tenants[i].name == t.name)
      last.fail(nullptr, "name", "is already used by tenant #" + std::to_string(i + 1));
    if (!t.key.empty() && tenants[i].key == t.key)
      last.fail(nullptr, "key", "is already used by tenant '" + tenants[i].name + "'");
    if (!t.http_key_sha256.empty() && tenants[i].http_key_sha256 == t.http_key_sha256)
      last.fail(nullptr, "http_key_sha256", "is already used by tenant '" + tenants[i].name + "'");
  }
}

std::vector<tenant_config> read_tenants(const toml::table& root, key_rule keys, std::string_view source) {
  std::vector<tenant_config> tenants;
  const toml::node* list = root.get("tenant");
  if (!list) return tenants;
  const toml::array* array = list->as_array();
  if (!array || !array->is_array_of_tables())
    throw bad_config{where(source, list->source()) +
                     "tenant must be an array of tables: write each tenant as [[tenant]]"};
  for (size_t i = 0; i < array->size(); ++i) {
    tenant_reader reader(source, *array->get(i)->as_table(), i);
    tenants.push_back(reader.read(keys));
    check_unique(tenants, reader);
  }
  return tenants;
}

}  // namespace

status<> check_tenants(const std::vector<tenant_config>& tenants) {
  auto bad = [](const tenant_config& t, const std::string& what) {
    return error{errc::invalid_argument, "tenant '" + t.name + "': " + what};
  };
  auto target = [](double ms) { return std::isfinite(ms) && ms >= 0; };
  for (size_t i = 0; i < tenants.size(); ++i) {
    const tenant_config& t = tenants[i];
    if (!is_valid_name(t.name)) return bad(t, "name must be 1 to 64 letters, digits, '_', '.' or '-'");
    if (!t.key.empty() && !is_z85_key(t.key))
      return bad(t, "key must be a CURVE public key in Z85 text (40 characters)");
    if (!t.http_key_sha256.empty() && !is_sha256_hex(t.http_key_sha256))
      return bad(t, "http_key_sha256 must be a SHA-256 in lowercase hex (64 characters)");
    if (!std::isfinite(t.weight) || t.weight <= 0) return bad(t, "weight must be a number > 0");
    if (!target(t.slo.ttft_ms) || !target(t.slo.itl_ms)) return bad(t, "slo targets must be numbers >= 0");
    if (!(t.slo.itl_quantile > 0 && t.slo.itl_quantile <= 1))
      return bad(t, "slo.itl_quantile must be > 0 and <= 1");
    for (size_t j = 0; j < i; ++j) {
      if (tenants[j].name == t.name) return bad(t, "name is used twice");
      if (!t.key.empty() && tenants[j].key == t.key)
        return bad(t, "key is already used by tenant '" + tenants[j].name + "'");
      if (!t.http_key_sha256.empty() && tenants[j].http_key_sha256 == t.http_key_sha256)
        return bad(t, "http_key_sha256 is already used by tenant '" + tenants[j].name + "'");
    }
  }
  return {};
}

result<std::vector<tenant_config>> parse_tenants(std::string_view toml_text, key_rule keys,
                                                 std::string_view source) {
  try {
    return read_tenants(toml::parse(toml_text, source), keys, source);
  } catch (const toml::parse_error& e) {
    return error{errc::malformed, where(source, e.source()) + std::string(e.description())};
  } catch (const bad_config& e) {
    return error{errc::malformed, e.message};
  }
}

result<std::vector<tenant_config>> load_tenants(const std::string& path, key_rule keys) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_tenants(*text, keys, path);
}

}  // namespace hearth
