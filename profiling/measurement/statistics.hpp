// Statistics of interleaved measurements (docs/profiling.md, "Interleaved measurement and
// intervals"): the median of per-round times, a distribution-free confidence interval of that
// median from order statistics, the same for a ratio computed round by round, the relative width
// of an interval, the adaptive stopping rule and the significance rule ("do two intervals
// separate"). Host code only: no CUDA, no other flashscope library, so the results model and the
// views can use it too.
//
// The interval. For n independent samples of a continuous distribution with median m, the number
// B of samples below m is binomial(n, 1/2). The interval [x_(j), x_(n-j+1)] between the j-th
// smallest and the j-th largest sample misses m only when B <= j - 1 or B >= n - j + 1, so it
// covers m with probability
//
//     coverage(n, j) = 1 - 2 * P(B <= j - 1)
//
// whatever the distribution. The interval reported is the narrowest of these whose coverage is at
// least the confidence asked (95 %): the largest j with P(B <= j - 1) <= (1 - confidence) / 2.
// Its exact coverage is reported with it (it is >= 95 %, e.g. 97.9 % for n = 10). For n < 6
// even j = 1 (the whole range) covers less than 95 % (n = 5: 1 - 2/32 = 93.75 %): such a sample
// has no 95 % interval, and says so (MedianEstimate::interval is empty).
//
// Some ranks (1-based, lower .. upper) at 95 %: n = 6..8: 1..n; n = 9..11: 2..n-1 (n = 10:
// 2..9); n = 12..14: 3..n-2; n = 20: 6..15; n = 30: 10..21; n = 50: 18..33; n = 100: 40..61.
// tests/profiling/measurement/test_statistics.cpp checks these against exact binomial sums.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::measurement {

inline constexpr double kDefaultConfidence = 0.95;

// The ranks of the order-statistic interval of the median of n samples: [x_(lower), x_(upper)],
// 1-based, upper = n - lower + 1, and its exact coverage (>= confidence).
struct MedianRanks {
  std::size_t lower = 0;
  std::size_t upper = 0;
  double coverage = 0;
};

// Empty when no pair of order statistics reaches `confidence` (n < 6 at 95 %; n = 0 always).
// Throws std::invalid_argument unless 0 < confidence < 1.
std::optional<MedianRanks> median_interval_ranks(std::size_t n,
                                                 double confidence = kDefaultConfidence);

// P(B <= k) for B ~ binomial(n, 1/2), in double precision (log-space terms, exact to rounding
// for the n a measurement reaches). k >= n gives 1.
double binomial_half_cdf(std::size_t n, std::size_t k);

// The median: the middle value for an odd count, the mean of the two middle ones for an even
// count. Throws std::invalid_argument on an empty list.
double median_of(std::span<const double> values);

struct Interval {
  double lower = 0;
  double upper = 0;
  std::size_t lower_rank = 0;  // 1-based ranks of the order statistics behind the bounds
  std::size_t upper_rank = 0;
  double coverage = 0;  // exact coverage of this pair of ranks (>= the confidence asked)
};

struct MedianEstimate {
  std::size_t n = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  std::optional<Interval> interval;  // empty: too few samples for the confidence (n < 6 at 95 %)

  // (upper - lower) / |median|; empty without an interval or with a median of 0.
  std::optional<double> relative_width() const;
  // "2.395 ms [2.39, 2.401] (ranks 14..27 of n = 40, 96.2 % coverage)", `unit` after the
  // median; without an interval "2.395 ms (n = 5: too few rounds for an interval)".
  std::string text(std::string_view unit, int precision = 4) const;
};

// Median, range and order-statistic interval of `values` (any order). Throws
// std::invalid_argument on an empty list, a value that is not finite, or a confidence outside
// (0, 1).
MedianEstimate estimate_median(std::span<const double> values,
                               double confidence = kDefaultConfidence);

// pct_r = baseline_r / kernel_r * 100, one value per round (a kernel faster than its baseline
// scores over 100). The two lists are per-round times of the same rounds, in round order.
// Throws std::invalid_argument when their lengths differ or a time is not positive and finite.
std::vector<double> round_ratios_pct(std::span<const double> baseline_ms,
                                     std::span<const double> kernel_ms);

// estimate_median(round_ratios_pct(baseline_ms, kernel_ms)): the ratio's median and interval
// come from the per-round ratios, so clock drift that moves both times of a round cancels.
MedianEstimate estimate_ratio_pct(std::span<const double> baseline_ms,
                                  std::span<const double> kernel_ms,
                                  double confidence = kDefaultConfidence);

// The significance rule of the views: two estimates differ only when their intervals are
// disjoint. A missing interval (too few rounds) never separates.
enum class Separation {
  no_interval,  // one side has no interval: nothing can be said
  overlapping,  // the intervals share at least one point: not a significant difference
  first_lower,  // a's interval lies wholly below b's
  first_higher  // a's interval lies wholly above b's
};
std::string_view separation_name(Separation separation);
Separation separation(const Interval& a, const Interval& b);
Separation separation(const MedianEstimate& a, const MedianEstimate& b);
inline bool intervals_separate(const Interval& a, const Interval& b) {
  const Separation s = separation(a, b);
  return s == Separation::first_lower || s == Separation::first_higher;
}

// The adaptive stopping rule of an interleaved measurement: after each round, stop when every
// tracked estimate's relative interval width is at most `target_relative_width`, or when the
// time cap or the round cap is reached; never before `min_rounds`.
struct StoppingRule {
  double target_relative_width = 0.01;  // (upper - lower) / median, e.g. 0.01 = 1 %
  int min_rounds = 10;
  int max_rounds = 400;
  double max_seconds = 2.0;  // wall time of the timed rounds of one cell
};

enum class StopReason { keep_going, target_reached, max_rounds, time_cap };
std::string_view stop_reason_name(StopReason reason);  // "continue", "target", "max rounds", ...

// Throws std::invalid_argument naming the field at fault: target > 0, 1 <= min_rounds <=
// max_rounds, max_seconds > 0.
void validate_stopping_rule(const StoppingRule& rule);

// The decision after `rounds` complete rounds, `elapsed_seconds` after the first began.
// `relative_widths` holds one entry per tracked estimate; an empty entry (no interval yet) is not
// within the target. Precedence when several apply: target_reached, max_rounds, time_cap.
// An empty list of estimates counts as within the target.
StopReason stopping_decision(const StoppingRule& rule, int rounds, double elapsed_seconds,
                             std::span<const std::optional<double>> relative_widths);

}  // namespace flashscope::measurement
