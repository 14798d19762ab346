#pragma once
// Line charts as SVG text, written by hand (no plotting dependency): panels side by side, each
// with axes, ticks, a legend and optional horizontal reference line. Enough for the sweep's
// frontier (SLO attainment against arrival rate) and latency CDFs.

#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hearth::household {

struct chart_series {
  std::string label;
  std::vector<std::pair<double, double>> points;  //!< (x, y), drawn in this order
  bool markers = false;
};

struct chart {
  std::string title, x_label, y_label;
  std::vector<chart_series> series;
  double y_min = 0, y_max = 1;
  double reference_y = NAN;  //!< a dashed horizontal line (e.g. the 90 % target); NaN: none
};

//! One SVG document with the panels in a row.
std::string render_svg(std::span<const chart> panels);

//! The empirical CDF of samples as a staircase: for every stride-th sorted sample x (at most
//! max_points of them, the largest always included), (x, share below it) then (x, rank / n).
std::vector<std::pair<double, double>> cdf_points(std::vector<double> samples, size_t max_points = 200);

}  // namespace hearth::household
