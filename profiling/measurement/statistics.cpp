#include "profiling/measurement/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flashscope::measurement {

namespace {

void check_confidence(double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("confidence must be in (0, 1)");
}

std::string number(double value, int precision) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", precision, value);
  return text;
}

}  // namespace

double binomial_half_cdf(std::size_t n, std::size_t k) {
  if (k >= n) return 1.0;
  // log P(B = i) = log C(n, i) - n log 2, built up term by term: C(n, i+1) = C(n, i)(n-i)/(i+1).
  double log_term = -static_cast<double>(n) * std::log(2.0);
  double sum = std::exp(log_term);
  for (std::size_t i = 0; i < k; ++i) {
    log_term += std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1));
    sum += std::exp(log_term);
  }
  return std::min(sum, 1.0);
}

std::optional<MedianRanks> median_interval_ranks(std::size_t n, double confidence) {
  check_confidence(confidence);
  const double tail = (1 - confidence) / 2;
  // The largest j with P(B <= j - 1) <= tail; j = 0 means none qualifies. P(B <= j - 1) grows
  // with j and reaches 1/2 by j = n/2 + 1, so the search ends well before j passes n/2.
  std::size_t j = 0;
  double cdf_below = 0;  // P(B <= j - 1) for the current j + 1 candidate, built incrementally
  double log_term = -static_cast<double>(n) * std::log(2.0);  // log P(B = 0)
  for (std::size_t candidate = 1; 2 * candidate <= n + 1; ++candidate) {
    // P(B <= candidate - 1) = P(B <= candidate - 2) + P(B = candidate - 1).
    if (candidate >= 2) {
      const std::size_t i = candidate - 2;  // P(B = i + 1) from P(B = i)
      log_term += std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1));
    }
    cdf_below += std::exp(log_term);
    if (cdf_below > tail) break;
    j = candidate;
  }
  if (j == 0) return std::nullopt;
  return MedianRanks{j, n - j + 1, 1 - 2 * binomial_half_cdf(n, j - 1)};
}

double median_of(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

std::optional<double> MedianEstimate::relative_width() const {
  if (!interval || median == 0) return std::nullopt;
  return (interval->upper - interval->lower) / std::fabs(median);
}

std::string MedianEstimate::text(std::string_view unit, int precision) const {
  const std::string space = unit.empty() ? "" : " ";
  std::string out = number(median, precision) + space + std::string(unit);
  if (!interval) return out + " (n = " + std::to_string(n) + ": too few rounds for an interval)";
  const long coverage_pct = std::lround(interval->coverage * 1000);  // tenths of a percent
  return out + " [" + number(interval->lower, precision) + ", " +
         number(interval->upper, precision) + "] (ranks " + std::to_string(interval->lower_rank) +
         ".." + std::to_string(interval->upper_rank) + " of n = " + std::to_string(n) + ", " +
         std::to_string(coverage_pct / 10) + "." + std::to_string(coverage_pct % 10) +
         " % coverage)";
}

MedianEstimate estimate_median(std::span<const double> values, double confidence) {
  check_confidence(confidence);
  if (values.empty()) throw std::invalid_argument("estimate_median: no values");
  for (const double value : values)
    if (!std::isfinite(value))
      throw std::invalid_argument("estimate_median: a value is not finite");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  MedianEstimate estimate;
  estimate.n = sorted.size();
  estimate.median = median_of(sorted);
  estimate.min = sorted.front();
  estimate.max = sorted.back();
  if (const auto ranks = median_interval_ranks(sorted.size(), confidence))
    estimate.interval = Interval{sorted[ranks->lower - 1], sorted[ranks->upper - 1], ranks->lower,
                                 ranks->upper, ranks->coverage};
  return estimate;
}

std::vector<double> round_ratios_pct(std::span<const double> baseline_ms,
                                     std::span<const double> kernel_ms) {
  if (baseline_ms.size() != kernel_ms.size())
    throw std::invalid_argument("round_ratios_pct: " + std::to_string(baseline_ms.size()) +
                                " baseline rounds but " + std::to_string(kernel_ms.size()) +
                                " kernel rounds");
  std::vector<double> pct(baseline_ms.size());
  for (std::size_t r = 0; r < pct.size(); ++r) {
    if (!(baseline_ms[r] > 0) || !(kernel_ms[r] > 0) || !std::isfinite(baseline_ms[r]) ||
        !std::isfinite(kernel_ms[r]))
      throw std::invalid_argument("round_ratios_pct: round " + std::to_string(r) +
                                  " has a time that is not positive and finite");
    pct[r] = baseline_ms[r] / kernel_ms[r] * 100.0;
  }
  return pct;
}

MedianEstimate estimate_ratio_pct(std::span<const double> baseline_ms,
                                  std::span<const double> kernel_ms, double confidence) {
  const std::vector<double> pct = round_ratios_pct(baseline_ms, kernel_ms);
  return estimate_median(pct, confidence);
}

std::string_view separation_name(Separation separation) {
  switch (separation) {
    case Separation::no_interval:
      return "no interval";
    case Separation::overlapping:
      return "overlapping";
    case Separation::first_lower:
      return "lower";
    case Separation::first_higher:
      return "higher";
  }
  return "?";
}

Separation separation(const Interval& a, const Interval& b) {
  if (a.upper < b.lower) return Separation::first_lower;
  if (b.upper < a.lower) return Separation::first_higher;
  return Separation::overlapping;
}

Separation separation(const MedianEstimate& a, const MedianEstimate& b) {
  if (!a.interval || !b.interval) return Separation::no_interval;
  return separation(*a.interval, *b.interval);
}

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::keep_going:
      return "continue";
    case StopReason::target_reached:
      return "target width";
    case StopReason::max_rounds:
      return "max rounds";
    case StopReason::time_cap:
      return "time cap";
  }
  return "?";
}

void validate_stopping_rule(const StoppingRule& rule) {
  if (!(rule.target_relative_width > 0))
    throw std::invalid_argument("target_relative_width must be above 0");
  if (rule.min_rounds < 1) throw std::invalid_argument("min_rounds must be at least 1");
  if (rule.max_rounds < rule.min_rounds)
    throw std::invalid_argument("max_rounds must be at least min_rounds");
  if (!(rule.max_seconds > 0)) throw std::invalid_argument("max_seconds must be above 0");
}

StopReason stopping_decision(const StoppingRule& rule, int rounds, double elapsed_seconds,
                             std::span<const std::optional<double>> relative_widths) {
  if (rounds < rule.min_rounds) return StopReason::keep_going;
  const bool within = std::all_of(relative_widths.begin(), relative_widths.end(),
                                  [&](const std::optional<double>& width) {
                                    return width && *width <= rule.target_relative_width;
                                  });
  if (within) return StopReason::target_reached;
  if (rounds >= rule.max_rounds) return StopReason::max_rounds;
  if (elapsed_seconds >= rule.max_seconds) return StopReason::time_cap;
  return StopReason::keep_going;
}

}  // namespace flashscope::measurement
