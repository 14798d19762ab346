#include "sim/step_profile.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/text_file.hpp"

namespace hearth::sim {

using nlohmann::json;

namespace {

// The model's terms for one step, in the order of the coefficients: 1, tokens, each knot's
// hinge, sequences, decode kpairs, prompt kpairs.
std::vector<double> terms(const step_profile& p, const profile_point& s) {
  std::vector<double> x = {1.0, static_cast<double>(s.tokens)};
  for (double k : p.knots) x.push_back(std::max(0.0, s.tokens - k));
  x.push_back(s.seqs);
  x.push_back(s.decode_kpairs);
  x.push_back(s.prefill_kpairs);
  return x;
}

// Solves a x = b (n x n, row-major) by Gaussian elimination with partial pivoting; nullopt
// when it is singular to working precision.
std::optional<std::vector<double>> solve(std::vector<double> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[pivot * n + c])) pivot = r;
    if (std::abs(a[pivot * n + c]) < 1e-12 * (1.0 + std::abs(a[c * n + c]))) return std::nullopt;
    for (size_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
    std::swap(b[c], b[pivot]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (size_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t r = n; r-- > 0;) {
    double s = b[r];
    for (size_t k = r + 1; k < n; ++k) s -= a[r * n + k] * x[k];
    x[r] = s / a[r * n + r];
  }
  return x;
}

// The predicted backend time of a step in the groups calibrated() scales: the tokens' terms
// beyond the base, the sequences', decode attention and prompt attention.
std::array<double, 4> groups(const step_profile& p, const profile_point& s) {
  double tokens = p.per_token_ms * s.tokens;
  for (size_t i = 0; i < p.knots.size() && i < p.bend_ms.size(); ++i)
    tokens += p.bend_ms[i] * std::max(0.0, s.tokens - p.knots[i]);
  return {tokens, p.per_seq_ms * s.seqs, p.per_decode_kpair_ms * s.decode_kpairs,
          p.per_prefill_kpair_ms * s.prefill_kpairs};
}

}  // namespace

profile_point shape_of(const step& s) {
  profile_point p{s.n_tokens(), static_cast<uint32_t>(s.seqs.size()), 0, 0, 0};
  for (const step_seq& q : s.seqs) {
    const double n = static_cast<double>(q.tokens.size());
    (q.decode() ? p.decode_kpairs : p.prefill_kpairs) += (n * q.start_pos + n * (n + 1) / 2) / 1000;
  }
  return p;
}

double step_profile::predict_ms(const profile_point& s) const {
  double ms = base_ms + per_token_ms * s.tokens + per_seq_ms * s.seqs +
              per_decode_kpair_ms * s.decode_kpairs + per_prefill_kpair_ms * s.prefill_kpairs;
  for (size_t i = 0; i < knots.size() && i < bend_ms.size(); ++i)
    ms += bend_ms[i] * std::max(0.0, s.tokens - knots[i]);
  return overhead_ms + std::max(0.0, ms) + (s.idle_ms >= idle_gap_ms ? after_idle_ms : 0.0);
}

step_profile step_profile::scaled(double compute_x, double bandwidth_x) const {
  step_profile s = *this;
  s.base_ms /= bandwidth_x;
  s.per_decode_kpair_ms /= bandwidth_x;
  s.per_token_ms /= compute_x;
  for (double& b : s.bend_ms) b /= compute_x;
  s.per_seq_ms /= compute_x;
  s.per_prefill_kpair_ms /= compute_x;
  return s;
}

status<> fit(step_profile& p, std::vector<profile_point> points) {
  const size_t n = 5 + p.knots.size();
  if (points.size() < n)
    return error{errc::invalid_argument, "step profile: " + std::to_string(points.size()) + " points for " +
                                             std::to_string(n) + " terms"};
  // Relative least squares (each point weighted by 1 / ms^2): a 3 ms decode step counts as much
  // as a 300 ms prefill, so the short steps a stream waits on are predicted as well as the long.
  std::vector<double> xtx(n * n, 0.0), xty(n, 0.0);
  for (const auto& pt : points) {
    const auto x = terms(p, pt);
    const double w = 1.0 / std::max(pt.ms * pt.ms, 1e-6);
    for (size_t i = 0; i < n; ++i) {
      xty[i] += w * x[i] * pt.ms;
      for (size_t j = 0; j < n; ++j) xtx[i * n + j] += w * x[i] * x[j];
    }
  }
  const auto c = solve(std::move(xtx), std::move(xty));
  if (!c)
    return error{errc::invalid_argument,
                 "step profile: the points cannot tell the terms apart (vary tokens, sequences and context)"};
  p.base_ms = (*c)[0];
  p.per_token_ms = (*c)[1];
  p.bend_ms.assign(c->begin() + 2, c->begin() + 2 + static_cast<std::ptrdiff_t>(p.knots.size()));
  p.per_seq_ms = (*c)[n - 3];
  p.per_decode_kpair_ms = (*c)[n - 2];
  p.per_prefill_kpair_ms = (*c)[n - 1];
  double sq = 0;
  const double overhead = p.overhead_ms;
  p.overhead_ms = 0;  // the points are backend times
  for (const auto& pt : points) {
    const double e = (p.predict_ms(pt) - pt.ms) / pt.ms;
    sq += e * e;
  }
  p.overhead_ms = overhead;
  p.rms_error = std::sqrt(sq / static_cast<double>(points.size()));
  p.points = std::move(points);
  return {};
}

namespace {

constexpr size_t n_groups = 4;
// The coefficients calibrated() fits: the added constant, each group's scale less 1, and the
// steps after idle time's added ms.
constexpr size_t n_coefficients = 2 + n_groups;
constexpr double min_scale = 0.25, max_scale = 4;

// The coefficients, fitted to what the profile leaves unexplained (each step weighted by 1 / ms^2
// as in fit()); `fixed` groups keep the value given.
std::optional<std::array<double, n_coefficients>> fit_scales(
    const step_profile& p, const std::vector<profile_point>& serving,
    const std::array<std::optional<double>, n_groups>& fixed) {
  constexpr size_t n = n_coefficients;
  std::vector<double> xtx(n * n, 0.0), xty(n, 0.0);
  std::array<size_t, n> seen{};
  for (const auto& pt : serving) {
    const auto g = groups(p, pt);
    std::array<double, n> x = {1.0};
    double residual = pt.ms - p.predict_ms(pt);
    for (size_t k = 0; k < n_groups; ++k) {
      if (fixed[k]) residual -= *fixed[k] * g[k];
      x[k + 1] = fixed[k] ? 0.0 : g[k];
      seen[k + 1] += x[k + 1] != 0;
    }
    x[n - 1] = pt.idle_ms >= p.idle_gap_ms ? 1.0 : 0.0;
    seen[n - 1] += x[n - 1] != 0;
    const double w = 1.0 / std::max(pt.ms * pt.ms, 1e-6);
    for (size_t i = 0; i < n; ++i) {
      xty[i] += w * x[i] * residual;
      for (size_t j = 0; j < n; ++j) xtx[i * n + j] += w * x[i] * x[j];
    }
  }
  // The ridge: each scale starts at 1 (the idle steps' ms at 0) as if five steps that exercise
  // its group had said so. It settles what the steps cannot tell apart (a decode of s sequences
  // is s tokens and s sequences) by the profile's split, holds a group that few steps exercise
  // near its profiled value and one that none do at it, and barely moves a scale hundreds of
  // steps measure.
  for (size_t i = 1; i < n; ++i) {
    double& d = xtx[i * n + i];
    d = seen[i] ? d * (1 + 5.0 / static_cast<double>(seen[i])) : 1.0;
  }
  const auto c = solve(std::move(xtx), std::move(xty));
  if (!c) return std::nullopt;
  std::array<double, n> out{};
  for (size_t i = 0; i < n; ++i) out[i] = i > 0 && i <= n_groups && fixed[i - 1] ? *fixed[i - 1] : (*c)[i];
  return out;
}

double median_of(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The served steps' spread around q, a relative standard deviation robust to the few that a page
// fault or a timer stretched: 1.4826 times the median absolute deviation of log(measured /
// predicted), which is the standard deviation where the logs are normal.
double served_spread(const step_profile& q, const std::vector<profile_point>& serving) {
  std::vector<double> e;
  for (const auto& pt : serving)
    if (const double predicted = q.predict_ms(pt); pt.ms > 0 && predicted > 0)
      e.push_back(std::log(pt.ms / predicted));
  if (e.empty()) return 0;
  const double center = median_of(e);
  for (double& x : e) x = std::abs(x - center);
  return 1.4826 * median_of(e);
}

}  // namespace

namespace {

// calibrated() with the given idle gap.
std::optional<step_profile> calibrated_at_gap(step_profile p, const std::vector<profile_point>& serving,
                                              double idle_gap_ms) {
  p.idle_gap_ms = idle_gap_ms;
  // A scale past its bounds is held at the bound and the rest refitted without it, so that the
  // constant and the other scales still explain the steps.
  std::array<std::optional<double>, n_groups> fixed{};
  std::optional<std::array<double, n_coefficients>> c;
  for (size_t round = 0; round <= n_groups; ++round) {
    c = fit_scales(p, serving, fixed);
    if (!c) return std::nullopt;
    bool held = false;
    for (size_t k = 0; k < n_groups; ++k) {
      const double scale = 1 + (*c)[k + 1];
      if (fixed[k] || (scale >= min_scale && scale <= max_scale)) continue;
      fixed[k] = std::clamp(scale, min_scale, max_scale) - 1;
      held = true;
    }
    if (!held) break;
  }
  const auto& d = *c;
  step_profile q = p;
  // The constant is the overhead's and the base's together. The overhead measured (the runtime's
  // own time, engine_bench's null run) is the least serving costs: a constant the steps lower
  // comes off the base (the weights streamed faster than while profiling).
  q.overhead_ms = p.overhead_ms + std::max(0.0, d[0]);
  q.base_ms = std::max(0.0, p.base_ms + std::min(0.0, d[0]));
  q.per_token_ms *= 1 + d[1];
  for (double& b : q.bend_ms) b *= 1 + d[1];
  q.per_seq_ms *= 1 + d[2];
  q.per_decode_kpair_ms *= 1 + d[3];
  q.per_prefill_kpair_ms *= 1 + d[4];
  q.after_idle_ms = p.after_idle_ms + std::max(0.0, d[5]);
  return q;
}

// What q leaves unexplained, as fit() weighs it.
double relative_residual(const step_profile& q, const std::vector<profile_point>& serving) {
  double sum = 0;
  for (const auto& pt : serving) {
    const double r = (pt.ms - q.predict_ms(pt)) / std::max(pt.ms, 1e-3);
    sum += r * r;
  }
  return sum;
}

}  // namespace

result<step_profile> calibrated(const step_profile& p, const std::vector<profile_point>& serving) {
  if (serving.size() < 20)
    return error{errc::invalid_argument, "step profile: " + std::to_string(serving.size()) +
                                             " served steps to calibrate on (20 at least)"};
  // How long an idle lane must have been for its next step to pay: the candidate that explains
  // the steps best, the shortest of equals. On the Zen 5 (`small` bf16, 18 runs of the household
  // mix) a step after 2-50 ms of idle time took 0-2 ms more than predicted, one after 100 ms or
  // more 15-19 ms: at a gap of 2 ms the added time came out at 12.3 ms, early for most requests.
  std::optional<step_profile> best;
  double best_residual = 0;
  for (const double gap : {p.idle_gap_ms, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0}) {
    if (gap < p.idle_gap_ms) continue;
    auto q = calibrated_at_gap(p, serving, gap);
    if (!q) continue;
    const double residual = relative_residual(*q, serving);
    if (!best || residual < best_residual) best = std::move(q), best_residual = residual;
  }
  if (!best) return error{errc::invalid_argument, "step profile: the served steps cannot be told apart"};
  best->noise = std::max(p.noise, served_spread(*best, serving));
  return *best;
}

step_profile with_request_path(step_profile p, std::span<const request_path> served) {
  if (served.empty()) return p;
  const auto n = static_cast<double>(served.size());
  double sx = 0, sy = 0;
  for (const auto& r : served) sx += r.prompt_tokens, sy += r.ms;
  const double mx = sx / n, my = sy / n;  // exact for one prompt length: whole token counts
  double sxx = 0, sxy = 0, xx = 0, xy = 0;
  for (const auto& r : served) {
    const double x = r.prompt_tokens;
    sxx += (x - mx) * (x - mx), sxy += (x - mx) * (r.ms - my);
    xx += x * x, xy += x * r.ms;
  }
  double slope = sxx > 1e-9 * xx ? std::max(0.0, sxy / sxx) : 0.0, intercept = my - slope * mx;
  if (intercept < 0) intercept = 0, slope = xx > 0 ? std::max(0.0, xy / xx) : 0.0;  // through 0
  p.path_ms = intercept;
  p.path_per_token_ms = slope;
  return p;
}

std::string to_json(const step_profile& p) {
  json pts = json::array();
  for (const auto& pt : p.points)
    pts.push_back({pt.tokens, pt.seqs, pt.decode_kpairs, pt.prefill_kpairs, pt.ms});
  const json j = {{"cpu", p.cpu},
                  {"model", p.model},
                  {"compute", p.compute},
                  {"threads", p.threads},
                  {"knots", p.knots},
                  {"base_ms", p.base_ms},
                  {"per_token_ms", p.per_token_ms},
                  {"bend_ms", p.bend_ms},
                  {"per_seq_ms", p.per_seq_ms},
                  {"per_decode_kpair_ms", p.per_decode_kpair_ms},
                  {"per_prefill_kpair_ms", p.per_prefill_kpair_ms},
                  {"overhead_ms", p.overhead_ms},
                  {"idle_gap_ms", p.idle_gap_ms},
                  {"after_idle_ms", p.after_idle_ms},
                  {"path_ms", p.path_ms},
                  {"path_per_token_ms", p.path_per_token_ms},
                  {"noise", p.noise},
                  {"rms_error", p.rms_error},
                  {"points", pts}};
  return j.dump(2) + "\n";
}

result<step_profile> profile_from_json(std::string_view text, std::string_view source) {
  const std::string where(source);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error{errc::malformed, where + ": not a JSON object"};
  step_profile p;
  try {
    p.cpu = j.at("cpu").get<std::string>();
    p.model = j.at("model").get<std::string>();
    p.compute = j.at("compute").get<std::string>();
    p.threads = j.at("threads").get<unsigned>();
    p.knots = j.at("knots").get<std::vector<double>>();
    p.base_ms = j.at("base_ms").get<double>();
    p.per_token_ms = j.at("per_token_ms").get<double>();
    p.bend_ms = j.at("bend_ms").get<std::vector<double>>();
    p.per_seq_ms = j.at("per_seq_ms").get<double>();
    p.per_decode_kpair_ms = j.at("per_decode_kpair_ms").get<double>();
    p.per_prefill_kpair_ms = j.at("per_prefill_kpair_ms").get<double>();
    p.overhead_ms = j.at("overhead_ms").get<double>();
    p.idle_gap_ms = j.value("idle_gap_ms", p.idle_gap_ms);
    p.after_idle_ms = j.value("after_idle_ms", 0.0);
    p.path_ms = j.value("path_ms", 0.0);
    p.path_per_token_ms = j.value("path_per_token_ms", 0.0);
    p.noise = j.value("noise", 0.0);
    p.rms_error = j.value("rms_error", 0.0);
    for (const auto& pt : j.value("points", json::array()))
      p.points.push_back({pt.at(0).get<uint32_t>(), pt.at(1).get<uint32_t>(), pt.at(2).get<double>(),
                          pt.at(3).get<double>(), pt.at(4).get<double>()});
  } catch (const json::exception& e) {
    return error{errc::malformed, where + ": " + e.what()};
  }
  if (p.bend_ms.size() != p.knots.size())
    return error{errc::malformed, where + ": field 'bend_ms' needs one value per knot"};
  return p;
}

result<step_profile> load_profile(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return profile_from_json(*text, path);
}

}  // namespace hearth::sim
