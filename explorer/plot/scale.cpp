#include "explorer/plot/scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace flashscope::plot {

namespace {

// Smallest positive value a log axis accepts; stands in for zero or negative data.
constexpr double kLogFloor = 1e-9;

}  // namespace

double to_axis_space(double value, AxisScale scale) {
  return scale == AxisScale::log2 ? std::log2(std::max(value, kLogFloor)) : value;
}

double from_axis_space(double axis_value, AxisScale scale) {
  return scale == AxisScale::log2 ? std::exp2(axis_value) : axis_value;
}

std::string format_tick(double value, double spacing, double largest_magnitude) {
  // One suffix per axis, chosen by its largest label, keeps cycle or byte axes short
  // ("250k", "1.5M") without mixing "5000" and "10k" on the same axis.
  struct Suffix {
    double threshold;
    double divisor;
    const char* text;
  };
  static constexpr Suffix kSuffixes[] = {{1e9, 1e9, "G"}, {1e6, 1e6, "M"}, {1e4, 1e3, "k"}};
  double divisor = 1;
  const char* suffix = "";
  for (const Suffix& candidate : kSuffixes) {
    if (std::fabs(largest_magnitude) >= candidate.threshold) {
      divisor = candidate.divisor;
      suffix = candidate.text;
      break;
    }
  }
  const double scaled_spacing = spacing / divisor;
  int decimals = 0;
  if (scaled_spacing > 0 && scaled_spacing < 1)
    decimals = std::min(6, static_cast<int>(std::ceil(-std::log10(scaled_spacing) - 1e-9)));
  const double scaled = value / divisor;
  if (std::fabs(scaled) < scaled_spacing * 1e-6) return "0";  // no "-0", "0.0k" or "0M"
  char text[48];
  std::snprintf(text, sizeof text, "%.*f%s", decimals, scaled, suffix);
  return text;
}

std::vector<Tick> linear_ticks(Range range, int max_ticks) {
  std::vector<Tick> ticks;
  if (!(range.span() > 0) || max_ticks < 2 || !std::isfinite(range.span())) return ticks;
  const double rough = range.span() / (max_ticks - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double spacing = 10 * magnitude;
  for (double multiple : {1.0, 2.0, 5.0, 10.0}) {
    if (multiple * magnitude >= rough) {
      spacing = multiple * magnitude;
      break;
    }
  }
  const double first = std::ceil(range.min / spacing - 1e-9);
  const double last = std::floor(range.max / spacing + 1e-9);
  const double largest = std::max(std::fabs(first), std::fabs(last)) * spacing;
  // Count ticks rather than stepping a double index: on a span near the resolution of doubles
  // at its magnitude (1e16 to 1e16 + 2), index + 1 rounds back to index and such a loop never
  // ends. Exactly, last - first < max_ticks; values that round together are drawn once.
  const double count = std::min(last - first, static_cast<double>(max_ticks));
  for (int i = 0; i <= count; ++i) {
    const double value = (first + i) * spacing;
    if (!ticks.empty() && !(value > ticks.back().value)) continue;
    ticks.push_back({value, format_tick(value, spacing, largest)});
  }
  return ticks;
}

std::vector<Tick> log2_ticks(Range range, int max_ticks) {
  std::vector<Tick> ticks;
  // An infinite end (a value near the largest double, or an axis zoomed out that far) has no
  // power of two to tick, and its log2 does not fit an int.
  if (!(range.min > 0) || !(range.max > range.min) || !std::isfinite(range.max) || max_ticks < 1)
    return ticks;
  const int first = static_cast<int>(std::ceil(std::log2(range.min) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log2(range.max) + 1e-9));
  if (last < first) return ticks;
  int stride = 1;
  while ((last - first) / stride + 1 > max_ticks)
    stride *= 2;
  // Align to multiples of the stride so panning does not make the labels jump.
  const int start = static_cast<int>(std::ceil(static_cast<double>(first) / stride)) * stride;
  for (int exponent = start; exponent <= last; exponent += stride) {
    const double value = std::exp2(exponent);
    char text[48];
    if (exponent >= 0 && exponent <= 40)
      std::snprintf(text, sizeof text, "%.0f", value);
    else if (exponent < 0 && exponent >= -6)
      std::snprintf(text, sizeof text, "%g", value);
    else
      std::snprintf(text, sizeof text, "2^%d", exponent);
    ticks.push_back({value, text});
  }
  return ticks;
}

std::vector<Tick> axis_ticks(Range range, AxisScale scale, int max_ticks) {
  return scale == AxisScale::log2 ? log2_ticks(range, max_ticks) : linear_ticks(range, max_ticks);
}

Range fit_range(std::span<const double> values, AxisScale scale, double padding,
                bool include_zero) {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  for (double value : values) {
    if (!std::isfinite(value) || (scale == AxisScale::log2 && value <= 0)) continue;
    const double axis = to_axis_space(value, scale);
    low = std::min(low, axis);
    high = std::max(high, axis);
  }
  if (low > high) return scale == AxisScale::log2 ? Range{1, 2} : Range{0, 1};
  if (include_zero && scale == AxisScale::linear) {
    low = std::min(low, 0.0);
    high = std::max(high, 0.0);
  }
  if (high - low <= 0) {
    // One distinct value: open a window around it (one octave on a log axis).
    const double half = scale == AxisScale::log2 ? 0.5 : std::max(std::fabs(low) * 0.1, 0.5);
    low -= half;
    high += half;
  }
  const double pad = (high - low) * padding;
  const bool anchored_at_zero = include_zero && scale == AxisScale::linear;
  const double padded_low = anchored_at_zero && low == 0 ? 0 : low - pad;
  const double padded_high = anchored_at_zero && high == 0 ? 0 : high + pad;
  return {from_axis_space(padded_low, scale), from_axis_space(padded_high, scale)};
}

Range zoom_range(Range range, double anchor, double factor, AxisScale scale) {
  const double low = to_axis_space(range.min, scale);
  const double high = to_axis_space(range.max, scale);
  const double at = to_axis_space(anchor, scale);
  return {from_axis_space(at + (low - at) * factor, scale),
          from_axis_space(at + (high - at) * factor, scale)};
}

Range pan_range(Range range, double fraction, AxisScale scale) {
  const double low = to_axis_space(range.min, scale);
  const double high = to_axis_space(range.max, scale);
  const double shift = (high - low) * fraction;
  return {from_axis_space(low + shift, scale), from_axis_space(high + shift, scale)};
}

}  // namespace flashscope::plot
