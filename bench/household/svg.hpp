#pragma once
// Line charts as SVG text, written by hand (no plotting dependency): panels side by side, each
// with axes, ticks, a legend, an optional horizontal reference line (a share to reach) and an
// optional vertical one (a latency target). Enough for the sweep's frontier (SLO attainment
// against arrival rate) and latency CDFs.

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
  double reference_y = NAN;            //!< a dashed horizontal line (e.g. the 90 % target); NaN: none
  double reference_x = NAN;            //!< a dashed vertical line (e.g. an SLO target, ms); NaN: none
  std::string reference_x_label = {};  //!< written beside that line
  //! Where the x axis ends; points beyond it are drawn at its edge. NaN: at the largest x.
  double x_end = NAN;
};

//! One SVG document with the panels in a row.
std::string render_svg(std::span<const chart> panels);

//! Where a latency CDF's x axis should end so that its curves are not squashed flat by a far
//! tail (one gap of 2 s among thousands of 5 ms ones): a tenth past the 99th percentile of the
//! samples, or past `target` when that is further. NaN (the whole range) when the largest
//! sample is no further than that anyway.
double cdf_axis_end(std::vector<double> samples, double target);

//! The empirical CDF of samples as a staircase: for every stride-th sorted sample x (at most
//! max_points of them, the largest always included), (x, share below it) then (x, rank / n).
std::vector<std::pair<double, double>> cdf_points(std::vector<double> samples, size_t max_points = 200);

}  // namespace hearth::household
