#include "sim/step_profile.hpp"

#include <algorithm>
#include <cmath>

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
  return overhead_ms + std::max(0.0, ms);
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
