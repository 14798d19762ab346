// Reads a workload with toml++. Inside this file a bad field throws bad_workload; the edge,
// parse_workload, turns it (and toml++'s parse_error) into an error value.
#include "bench/household/workload.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>

#include "common/text_file.hpp"

namespace hearth::household {

namespace {

struct bad_workload {
  std::string message;
};

constexpr std::string_view top_fields[] = {"name", "duration_s", "drain_s", "itl_quantile", "class"};
constexpr std::string_view class_fields[] = {"name",   "priority", "weight", "rate",          "arrival", "cv",
                                             "prompt", "output",   "slo",    "shared_prefix", "seed"};
constexpr std::string_view length_fields[] = {"dist", "value", "min", "max", "mean", "cv"};
constexpr std::string_view slo_fields[] = {"ttft_ms", "itl_ms"};
constexpr uint32_t token_limit = 1u << 20;

// Reads fields of one table; every message names the source, the line, who and the field.
class reader {
 public:
  reader(std::string_view source, const toml::table& t, std::string who, std::string prefix = {})
      : source_(source), t_(t), who_(std::move(who)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    const toml::node* at = t_.get(field);
    const auto line = (at ? at->source() : t_.source()).begin.line;
    throw bad_workload{std::string(source_) + ":" + std::to_string(line) + ": " + who_ +
                       (who_.empty() ? "" : ": ") + prefix_ + std::string(field) + " " + std::string(what)};
  }

  void only(std::span<const std::string_view> known) const {
    for (const auto& [k, v] : t_) {
      if (std::ranges::find(known, k.str()) != known.end()) continue;
      std::string list;
      for (std::string_view f : known) list += (list.empty() ? "" : ", ") + std::string(f);
      fail(k.str(), "is not a known field (known: " + list + ")");
    }
  }

  bool has(std::string_view field) const { return t_.contains(field); }

  std::string text(std::string_view field, const char* fallback) const {
    const toml::node* n = t_.get(field);
    if (!n) {
      if (!fallback) fail(field, "is missing");
      return fallback;
    }
    if (!n->is_string()) fail(field, "must be a string");
    return std::string(n->as_string()->get());
  }

  // A finite number in [lo, hi]; integers accepted. Missing: the fallback, or an error when none.
  double number(std::string_view field, double lo, double hi, const double* fallback) const {
    const toml::node* n = t_.get(field);
    if (!n) {
      if (!fallback) fail(field, "is missing");
      return *fallback;
    }
    if (!n->is_number()) fail(field, "must be a number");
    const double v = *n->value<double>();
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream what;
      what << "must be from " << lo << " to " << hi << " (got " << v << ")";
      fail(field, what.str());
    }
    return v;
  }
  double number(std::string_view field, double lo, double hi, double fallback) const {
    return number(field, lo, hi, &fallback);
  }
  double number(std::string_view field, double lo, double hi) const { return number(field, lo, hi, nullptr); }

  uint64_t whole(std::string_view field, uint64_t lo, uint64_t hi, uint64_t fallback) const {
    const toml::node* n = t_.get(field);
    if (!n) return fallback;
    if (!n->is_integer()) fail(field, "must be a whole number");
    const int64_t v = n->as_integer()->get();
    if (v < 0 || static_cast<uint64_t>(v) < lo || static_cast<uint64_t>(v) > hi)
      fail(field, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " +
                      std::to_string(v) + ")");
    return static_cast<uint64_t>(v);
  }

  const toml::table& sub(std::string_view field) const {
    const toml::node* n = t_.get(field);
    if (!n) fail(field, "is missing");
    if (!n->is_table()) fail(field, "must be a table, e.g. " + std::string(field) + " = { ... }");
    return *n->as_table();
  }

  reader nested(std::string_view field) const {
    return {source_, sub(field), who_, prefix_ + std::string(field) + "."};
  }

 private:
  std::string_view source_;
  const toml::table& t_;
  std::string who_, prefix_;
};

length_dist read_length(const reader& r) {
  r.only(length_fields);
  length_dist d;
  const std::string kind = r.text("dist", nullptr);
  if (kind == "fixed") {
    d.kind = length_kind::fixed;
    d.min = d.max = static_cast<uint32_t>(r.whole("value", 1, token_limit, 0));
    if (d.min == 0) r.fail("value", "is missing");
    d.mean = d.min;
    return d;
  }
  d.min = static_cast<uint32_t>(r.whole("min", 1, token_limit, 1));
  d.max = static_cast<uint32_t>(r.whole("max", 1, token_limit, 0));
  if (!r.has("max")) r.fail("max", "is missing");
  if (d.max < d.min) r.fail("max", "must be >= min");
  if (kind == "uniform") {
    d.kind = length_kind::uniform;
    d.mean = (d.min + d.max) / 2.0;
  } else if (kind == "lognormal") {
    d.kind = length_kind::lognormal;
    d.mean = r.number("mean", 1, token_limit);
    d.cv = r.number("cv", 0, 10);
  } else {
    r.fail("dist", "must be \"fixed\", \"uniform\" or \"lognormal\" (got \"" + kind + "\")");
  }
  return d;
}

tenant_class read_priority(const reader& r) {
  const std::string p = r.text("priority", "standard");
  if (p == "interactive") return tenant_class::interactive;
  if (p == "standard") return tenant_class::standard;
  if (p == "background") return tenant_class::background;
  r.fail("priority", "must be \"interactive\", \"standard\" or \"background\" (got \"" + p + "\")");
}

workload_class read_class(std::string_view source, const toml::table& t, size_t index) {
  workload_class c;
  c.name = reader(source, t, "class #" + std::to_string(index + 1)).text("name", nullptr);
  const reader r(source, t, "class '" + c.name + "'");
  if (c.name.empty() || c.name.size() > 64) r.fail("name", "must be 1 to 64 characters");
  r.only(class_fields);
  c.priority = read_priority(r);
  c.weight = r.number("weight", 1e-6, 1e6, 1.0);
  c.arrival.rate = r.number("rate", 1e-6, 1e6);
  const std::string arrival = r.text("arrival", "poisson");
  if (arrival == "poisson") {
    c.arrival.kind = arrival_kind::poisson;
    if (r.has("cv")) r.fail("cv", "is for gamma arrivals (Poisson gaps have cv 1)");
  } else if (arrival == "gamma") {
    c.arrival.kind = arrival_kind::gamma;
    c.arrival.cv = r.number("cv", 0.05, 20);
  } else {
    r.fail("arrival", "must be \"poisson\" or \"gamma\" (got \"" + arrival + "\")");
  }
  c.prompt = read_length(r.nested("prompt"));
  c.output = read_length(r.nested("output"));
  if (r.has("slo")) {
    const reader s = r.nested("slo");
    s.only(slo_fields);
    c.ttft_ms = s.number("ttft_ms", 0, 1e9, 0.0);
    c.itl_ms = s.number("itl_ms", 0, 1e9, 0.0);
  }
  c.shared_prefix = static_cast<uint32_t>(r.whole("shared_prefix", 0, token_limit, 0));
  if (c.shared_prefix > 0 && c.shared_prefix >= c.prompt.min)
    r.fail("shared_prefix", "must be below the shortest prompt (" + std::to_string(c.prompt.min) + ")");
  c.seed = r.whole("seed", 0, std::numeric_limits<int64_t>::max(), index + 1);
  return c;
}

workload read(const toml::table& root, std::string_view source) {
  const reader top(source, root, "");
  top.only(top_fields);
  workload w;
  w.name = top.text("name", "workload");
  w.duration_s = top.number("duration_s", 0.1, 1e6, w.duration_s);
  w.drain_s = top.number("drain_s", 0, 1e6, w.drain_s);
  w.itl_quantile = top.number("itl_quantile", 0.5, 1, w.itl_quantile);
  const toml::node* list = root.get("class");
  if (!list) top.fail("class", "is missing: a workload needs at least one [[class]]");
  const toml::array* array = list->as_array();
  if (!array || !array->is_array_of_tables() || array->empty())
    top.fail("class", "must be an array of tables: write each class as [[class]]");
  for (size_t i = 0; i < array->size(); ++i) {
    w.classes.push_back(read_class(source, *array->get(i)->as_table(), i));
    for (size_t j = 0; j < i; ++j) {
      if (w.classes[j].name == w.classes[i].name)
        reader(source, *array->get(i)->as_table(), "class '" + w.classes[i].name + "'")
            .fail("name", "is used twice");
    }
  }
  return w;
}

}  // namespace

const workload_class* workload::find(std::string_view tenant) const {
  const auto it = std::ranges::find(classes, tenant, &workload_class::name);
  return it == classes.end() ? nullptr : &*it;
}

double workload::total_rate() const {
  double r = 0;
  for (const auto& c : classes) r += c.arrival.rate;
  return r;
}

result<workload> parse_workload(std::string_view toml_text, std::string_view source) {
  try {
    return read(toml::parse(toml_text, source), source);
  } catch (const toml::parse_error& e) {
    return error{errc::malformed, std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                                      std::string(e.description())};
  } catch (const bad_workload& e) {
    return error{errc::malformed, e.message};
  }
}

result<workload> load_workload(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_workload(*text, path);
}

std::vector<tenant_config> tenants_of(const workload& w) {
  std::vector<tenant_config> tenants;
  for (const workload_class& k : w.classes)
    tenants.push_back({.name = k.name,
                       .cls = k.priority,
                       .weight = k.weight,
                       .slo = {k.ttft_ms, k.itl_ms, w.itl_quantile}});
  return tenants;
}

}  // namespace hearth::household
