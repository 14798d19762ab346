#include "bench/household/svg.hpp"

#include <algorithm>
#include <cstdio>

namespace hearth::household {

namespace {

constexpr double panel_w = 460, panel_h = 320;
constexpr double left = 60, right = 20, top = 36, bottom = 80;  // plot area margins inside a panel
constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A round step giving about 5 ticks over [lo, hi].
double tick_step(double lo, double hi) {
  const double raw = (hi - lo) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string panel(const chart& c, double x0) {
  double x_min = INFINITY, x_max = -INFINITY;
  for (const auto& s : c.series) {
    for (auto [x, y] : s.points) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
    }
  }
  if (!std::isnan(c.x_end)) x_max = std::min(x_max, c.x_end);
  if (!std::isnan(c.reference_x)) x_max = std::max(x_max, c.reference_x);
  if (!(x_min <= x_max)) x_min = 0, x_max = 1;
  if (x_min > 0 && (x_min < 0.5 * x_max || x_max - x_min < 1e-9 * x_max)) x_min = 0;  // one value: from 0
  if (x_max - x_min < 1e-12) x_max = x_min + 1;
  const double w = panel_w - left - right, h = panel_h - top - bottom;
  auto px = [&](double x) { return x0 + left + (std::clamp(x, x_min, x_max) - x_min) / (x_max - x_min) * w; };
  auto py = [&](double y) {
    return top + (1 - (std::clamp(y, c.y_min, c.y_max) - c.y_min) / (c.y_max - c.y_min)) * h;
  };
  std::string s;
  s += "<text x=\"" + num(x0 + panel_w / 2) + "\" y=\"20\" text-anchor=\"middle\" font-weight=\"bold\">" +
       escape(c.title) + "</text>\n";
  s += "<rect x=\"" + num(x0 + left) + "\" y=\"" + num(top) + "\" width=\"" + num(w) + "\" height=\"" +
       num(h) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  const double xs = tick_step(x_min, x_max);
  for (double t = std::ceil(x_min / xs) * xs; t <= x_max + 1e-9 * xs; t += xs) {
    s += "<line x1=\"" + num(px(t)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(px(t)) + "\" y2=\"" +
         num(top + h) + "\" stroke=\"#eee\"/><text x=\"" + num(px(t)) + "\" y=\"" + num(top + h + 16) +
         "\" text-anchor=\"middle\" font-size=\"11\">" + num(t) + "</text>\n";
  }
  const double ys = tick_step(c.y_min, c.y_max);
  for (double t = std::ceil(c.y_min / ys) * ys; t <= c.y_max + 1e-9 * ys; t += ys) {
    s += "<line x1=\"" + num(x0 + left) + "\" y1=\"" + num(py(t)) + "\" x2=\"" + num(x0 + left + w) +
         "\" y2=\"" + num(py(t)) + "\" stroke=\"#eee\"/><text x=\"" + num(x0 + left - 6) + "\" y=\"" +
         num(py(t) + 4) + "\" text-anchor=\"end\" font-size=\"11\">" + num(t) + "</text>\n";
  }
  if (std::isinf(x_min) || c.series.empty() ||
      std::ranges::all_of(c.series, [](const chart_series& ser) { return ser.points.empty(); })) {
    s += "<text x=\"" + num(x0 + left + w / 2) + "\" y=\"" + num(top + h / 2) +
         "\" text-anchor=\"middle\" fill=\"#888\">no samples</text>\n";
  }
  if (!std::isnan(c.reference_y)) {
    s += "<line x1=\"" + num(x0 + left) + "\" y1=\"" + num(py(c.reference_y)) + "\" x2=\"" +
         num(x0 + left + w) + "\" y2=\"" + num(py(c.reference_y)) +
         "\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>\n";
  }
  if (!std::isnan(c.reference_x)) {
    s += "<line x1=\"" + num(px(c.reference_x)) + "\" y1=\"" + num(top) + "\" x2=\"" +
         num(px(c.reference_x)) + "\" y2=\"" + num(top + h) +
         "\" stroke=\"#444\" stroke-dasharray=\"5,4\"/><text x=\"" + num(px(c.reference_x) - 4) + "\" y=\"" +
         num(top + 12) + "\" text-anchor=\"end\" font-size=\"10\">" + escape(c.reference_x_label) +
         "</text>\n";
  }
  s += "<text x=\"" + num(x0 + left + w / 2) + "\" y=\"" + num(top + h + 34) +
       "\" text-anchor=\"middle\" font-size=\"12\">" + escape(c.x_label) + "</text>\n";
  s += "<text transform=\"translate(" + num(x0 + 16) + "," + num(top + h / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" + escape(c.y_label) + "</text>\n";
  for (size_t i = 0; i < c.series.size(); ++i) {
    const auto& ser = c.series[i];
    const char* color = palette[i % std::size(palette)];
    std::string pts;
    for (auto [x, y] : ser.points) pts += num(px(x)) + "," + num(py(y)) + " ";
    s += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"" + pts +
         "\"/>\n";
    if (ser.markers) {
      for (auto [x, y] : ser.points) {
        s += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
      }
    }
    // Legend below the axis label, one entry per line.
    const double lx = x0 + left, ly = top + h + 50 + static_cast<double>(i) * 14;
    s += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 8) + "\" width=\"10\" height=\"10\" fill=\"" + color +
         "\"/><text x=\"" + num(lx + 14) + "\" y=\"" + num(ly + 1) + "\" font-size=\"10\">" +
         escape(ser.label) + "</text>\n";
  }
  return s;
}

}  // namespace

std::string render_svg(std::span<const chart> panels) {
  size_t legend_rows = 0;
  for (const auto& c : panels) legend_rows = std::max(legend_rows, c.series.size());
  const double width = panel_w * static_cast<double>(std::max<size_t>(panels.size(), 1));
  const double height = panel_h + 14 * static_cast<double>(legend_rows > 2 ? legend_rows - 2 : 0);
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
                  num(height) +
                  "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t i = 0; i < panels.size(); ++i) s += panel(panels[i], panel_w * static_cast<double>(i));
  return s + "</svg>\n";
}

double cdf_axis_end(std::vector<double> x, double target) {
  if (x.empty()) return NAN;
  std::ranges::sort(x);
  const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(x.size()))) - 1;
  const double end = 1.1 * std::max(x[k], target);
  return end < x.back() ? end : NAN;
}

std::vector<std::pair<double, double>> cdf_points(std::vector<double> x, size_t max_points) {
  std::ranges::sort(x);
  std::vector<std::pair<double, double>> p;
  if (x.empty()) return p;
  // A staircase: at each sample the share rises from the previous step's to its own.
  const size_t n = x.size(), stride = std::max<size_t>(1, n / max_points);
  double below = 0;
  for (size_t i = stride - 1; i < n + stride - 1; i += stride) {
    const size_t k = std::min(i, n - 1);
    const double share = static_cast<double>(k + 1) / static_cast<double>(n);
    p.emplace_back(x[k], below);
    p.emplace_back(x[k], share);
    below = share;
  }
  return p;
}

}  // namespace hearth::household
