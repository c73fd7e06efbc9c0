// Axis arithmetic of the plot module, free of any GUI so it is unit-tested headless: mapping
// between data and axis space (linear or log 2), "nice" tick placement, fitting, zoom and pan.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace flashscope::plot {

enum class AxisScale { linear, log2 };

struct Range {
  double min = 0;
  double max = 1;
  double span() const { return max - min; }
  bool operator==(const Range&) const = default;
};

struct Tick {
  double value;  // in data units
  std::string label;
};

// Axis space is where the axis is uniform: the value itself, or log2 of it.
double to_axis_space(double value, AxisScale scale);
double from_axis_space(double axis_value, AxisScale scale);

// Ticks at 1, 2 or 5 times a power of ten, at most `max_ticks` of them, labelled with just
// enough decimals to tell neighbours apart ("0.5", "10", "250k", "1.5M").
std::vector<Tick> linear_ticks(Range range, int max_ticks);

// Ticks at powers of two (every 2nd, 4th, ... power when too many), labelled as integers
// ("512", "16384") so sequence lengths read exactly.
std::vector<Tick> log2_ticks(Range range, int max_ticks);

std::vector<Tick> axis_ticks(Range range, AxisScale scale, int max_ticks);

// Label for a tick: `spacing` decides the decimals, `largest_magnitude` (the axis' largest
// label) the suffix shared by the whole axis.
std::string format_tick(double value, double spacing, double largest_magnitude);

// The range showing every value with `padding` (a fraction of the span, in axis space) on
// both sides. `include_zero` anchors bar and throughput charts at zero. Degenerate inputs
// (no values, all equal, non-positive values on a log axis) still give a usable range.
Range fit_range(std::span<const double> values, AxisScale scale, double padding, bool include_zero);

// Zoom by `factor` (< 1 zooms in) keeping `anchor` (a data value) at the same screen place.
Range zoom_range(Range range, double anchor, double factor, AxisScale scale);

// Shift by `fraction` of the visible span (positive moves the view towards larger values).
Range pan_range(Range range, double fraction, AxisScale scale);

}  // namespace flashscope::plot
