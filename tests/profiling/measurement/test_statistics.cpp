// The statistics of interleaved measurement (profiling/measurement/statistics.hpp) against
// hand-computed cases: binomial sums, order-statistic ranks, medians and intervals of small
// samples, per-round ratios, the significance rule and the stopping rule. Host only.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "profiling/measurement/statistics.hpp"

using namespace flashscope::measurement;

namespace {

// Exact binomial(n, 1/2) CDF for small n, from integer binomial coefficients.
double exact_cdf(unsigned n, unsigned k) {
  double coefficient = 1, sum = 0;
  for (unsigned i = 0; i <= k && i <= n; ++i) {
    sum += coefficient;
    coefficient = coefficient * (n - i) / (i + 1);
  }
  return sum / std::ldexp(1.0, static_cast<int>(n));
}

}  // namespace

TEST_CASE("binomial(n, 1/2) sums match exact ones") {
  CHECK(binomial_half_cdf(5, 0) == doctest::Approx(1.0 / 32));
  CHECK(binomial_half_cdf(10, 1) == doctest::Approx(11.0 / 1024));
  CHECK(binomial_half_cdf(10, 2) == doctest::Approx(56.0 / 1024));
  CHECK(binomial_half_cdf(20, 5) == doctest::Approx(21700.0 / 1048576));
  CHECK(binomial_half_cdf(7, 7) == 1.0);
  CHECK(binomial_half_cdf(7, 100) == 1.0);
  for (unsigned n = 1; n <= 60; ++n)
    for (unsigned k = 0; k <= n; ++k) {
      INFO("n = " << n << ", k = " << k);
      CHECK(binomial_half_cdf(n, k) == doctest::Approx(exact_cdf(n, k)).epsilon(1e-12));
    }
  // Symmetry: P(B <= k) + P(B <= n - k - 1) = 1.
  CHECK(binomial_half_cdf(1000, 480) + binomial_half_cdf(1000, 519) == doctest::Approx(1.0));
}

TEST_CASE("the 95 % interval of the median uses the documented ranks") {
  // n < 6: even the whole range covers less than 95 % (n = 5: 1 - 2/32 = 93.75 %).
  for (std::size_t n = 0; n < 6; ++n) {
    INFO("n = " << n);
    CHECK_FALSE(median_interval_ranks(n));
  }
  struct Case {
    std::size_t n, lower, upper;
    double coverage;
  };
  // Hand-computed: coverage = 1 - 2 P(B <= lower - 1).
  const Case cases[] = {
      {6, 1, 6, 1 - 2.0 / 64},                // 0.96875
      {7, 1, 7, 1 - 2.0 / 128},               // 0.984375
      {8, 1, 8, 1 - 2.0 / 256},               // 0.9921875
      {9, 2, 8, 1 - 2.0 * 10 / 512},          // 0.9609375
      {10, 2, 9, 1 - 2.0 * 11 / 1024},        // 0.978515625
      {11, 2, 10, 1 - 2.0 * 12 / 2048},       // 0.98828125
      {12, 3, 10, 1 - 2.0 * 79 / 4096},       // 0.961425781
      {17, 5, 13, 1 - 2.0 * 3214 / 131072},   // 0.950958252
      {20, 6, 15, 1 - 2.0 * 21700 / 1048576}  // 0.958610535
  };
  for (const Case& c : cases) {
    INFO("n = " << c.n);
    const auto ranks = median_interval_ranks(c.n);
    REQUIRE(ranks);
    CHECK(ranks->lower == c.lower);
    CHECK(ranks->upper == c.upper);
    CHECK(ranks->coverage == doctest::Approx(c.coverage).epsilon(1e-12));
  }
  const std::pair<std::size_t, std::size_t> larger[] = {{30, 10},  {40, 14},  {50, 18},
                                                        {100, 40}, {200, 86}, {400, 180}};
  for (const auto& [n, lower] : larger) {
    INFO("n = " << n);
    const auto ranks = median_interval_ranks(n);
    REQUIRE(ranks);
    CHECK(ranks->lower == lower);
    CHECK(ranks->upper == n - lower + 1);
  }
}

TEST_CASE("the chosen ranks are the narrowest that reach the confidence") {
  for (std::size_t n = 6; n <= 500; ++n) {
    INFO("n = " << n);
    const auto ranks = median_interval_ranks(n);
    REQUIRE(ranks);
    CHECK(ranks->lower + ranks->upper == n + 1);
    CHECK(ranks->coverage >= 0.95);
    // One rank further in covers less than 95 %, unless that would cross the median.
    if (2 * (ranks->lower + 1) <= n + 1) CHECK(1 - 2 * binomial_half_cdf(n, ranks->lower) < 0.95);
  }
}

TEST_CASE("other confidences and bad ones") {
  // 90 %: n = 5 now has one (1 - 2/32 = 93.75 % >= 90 %); n = 4 does not (87.5 %).
  CHECK_FALSE(median_interval_ranks(4, 0.90));
  const auto five = median_interval_ranks(5, 0.90);
  REQUIRE(five);
  CHECK(five->lower == 1);
  CHECK(five->upper == 5);
  // 99 %: n = 8 is the first (1 - 2/256 = 99.2 %); n = 7 covers 98.4 %.
  CHECK_FALSE(median_interval_ranks(7, 0.99));
  CHECK(median_interval_ranks(8, 0.99));
  CHECK_THROWS_AS(median_interval_ranks(10, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(median_interval_ranks(10, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(median_interval_ranks(10, std::nan("")), std::invalid_argument);
}

TEST_CASE("median of odd and even counts") {
  CHECK(median_of(std::vector<double>{3, 1, 2}) == 2);
  CHECK(median_of(std::vector<double>{4, 1, 3, 2}) == 2.5);
  CHECK(median_of(std::vector<double>{7}) == 7);
  CHECK_THROWS_AS(median_of(std::vector<double>{}), std::invalid_argument);
}

TEST_CASE("a sample's median, range and interval") {
  // n = 10, shuffled 1..10: median 5.5, 95 % interval [x_(2), x_(9)] = [2, 9].
  const std::vector<double> ten = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
  const MedianEstimate estimate = estimate_median(ten);
  CHECK(estimate.n == 10);
  CHECK(estimate.median == 5.5);
  CHECK(estimate.min == 1);
  CHECK(estimate.max == 10);
  REQUIRE(estimate.interval);
  CHECK(estimate.interval->lower == 2);
  CHECK(estimate.interval->upper == 9);
  CHECK(estimate.interval->lower_rank == 2);
  CHECK(estimate.interval->upper_rank == 9);
  CHECK(estimate.interval->coverage == doctest::Approx(0.978515625));
  REQUIRE(estimate.relative_width());
  CHECK(*estimate.relative_width() == doctest::Approx(7 / 5.5));

  // n = 5: a median and a range, no interval.
  const MedianEstimate five = estimate_median(std::vector<double>{2.0, 2.2, 2.1, 2.4, 2.3});
  CHECK(five.median == 2.2);
  CHECK_FALSE(five.interval);
  CHECK_FALSE(five.relative_width());
  CHECK(five.text("ms") == "2.2 ms (n = 5: too few rounds for an interval)");

  // n = 6: the whole range.
  const MedianEstimate six = estimate_median(std::vector<double>{2.0, 2.6, 2.1, 2.4, 2.3, 2.2});
  CHECK(six.median == doctest::Approx(2.25));
  REQUIRE(six.interval);
  CHECK(six.interval->lower == 2.0);
  CHECK(six.interval->upper == 2.6);
  CHECK(six.text("ms") == "2.25 ms [2, 2.6] (ranks 1..6 of n = 6, 96.9 % coverage)");

  // Outliers move the interval only as far as their rank: one wild round of 20 changes nothing.
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i)
    twenty.push_back(100 + i);  // 101..120
  const MedianEstimate clean = estimate_median(twenty);
  twenty[19] = 1e6;
  const MedianEstimate wild = estimate_median(twenty);
  CHECK(clean.median == wild.median);
  CHECK(clean.interval->lower == wild.interval->lower);  // x_(6) = 106
  CHECK(clean.interval->upper == wild.interval->upper);  // x_(15) = 115
  CHECK(wild.interval->lower == 106);
  CHECK(wild.interval->upper == 115);

  CHECK_THROWS_AS(estimate_median(std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(estimate_median(std::vector<double>{1, std::nan(""), 2}), std::invalid_argument);
  CHECK_THROWS_AS(estimate_median(std::vector<double>{1, HUGE_VAL}), std::invalid_argument);
}

TEST_CASE("a ratio is computed round by round, then summarised") {
  const std::vector<double> baseline = {2.0, 2.2, 1.8, 2.0, 2.1, 1.9};
  const std::vector<double> kernel = {2.5, 2.75, 2.25, 2.5, 2.5, 2.0};
  const std::vector<double> pct = round_ratios_pct(baseline, kernel);
  REQUIRE(pct.size() == 6);
  CHECK(pct[0] == doctest::Approx(80));
  CHECK(pct[1] == doctest::Approx(80));
  CHECK(pct[2] == doctest::Approx(80));
  CHECK(pct[3] == doctest::Approx(80));
  CHECK(pct[4] == doctest::Approx(84));
  CHECK(pct[5] == doctest::Approx(95));
  const MedianEstimate ratio = estimate_ratio_pct(baseline, kernel);
  CHECK(ratio.median == doctest::Approx(80));
  REQUIRE(ratio.interval);
  CHECK(ratio.interval->lower == doctest::Approx(80));
  CHECK(ratio.interval->upper == doctest::Approx(95));

  // Drift common to both sides of a round cancels: every round 20 % apart, the clock moving by
  // a factor of 1.5 over the rounds, gives 80 % with an interval of zero width, where the
  // ratio of the two medians would carry none of the drift but the times' intervals all of it.
  std::vector<double> drifting_baseline, drifting_kernel;
  for (int r = 0; r < 12; ++r) {
    const double clock = 1.0 + r / 22.0;
    drifting_baseline.push_back(2.0 * clock);
    drifting_kernel.push_back(2.5 * clock);
  }
  const MedianEstimate drift = estimate_ratio_pct(drifting_baseline, drifting_kernel);
  CHECK(drift.median == doctest::Approx(80));
  REQUIRE(drift.interval);
  CHECK(*drift.relative_width() == doctest::Approx(0).epsilon(1e-12));
  CHECK(*estimate_median(drifting_kernel).relative_width() > 0.2);

  CHECK_THROWS_AS(round_ratios_pct(std::vector<double>{1, 2}, std::vector<double>{1}),
                  std::invalid_argument);
  CHECK_THROWS_AS(round_ratios_pct(std::vector<double>{1}, std::vector<double>{0}),
                  std::invalid_argument);
  CHECK_THROWS_AS(round_ratios_pct(std::vector<double>{-1}, std::vector<double>{1}),
                  std::invalid_argument);
}

TEST_CASE("two estimates differ only when their intervals separate") {
  const Interval a{1.0, 2.0, 1, 6, 0.97};
  CHECK(separation(a, Interval{2.5, 3.0, 1, 6, 0.97}) == Separation::first_lower);
  CHECK(separation(Interval{2.5, 3.0, 1, 6, 0.97}, a) == Separation::first_higher);
  CHECK(separation(a, Interval{2.0, 3.0, 1, 6, 0.97}) == Separation::overlapping);  // touching
  CHECK(separation(a, Interval{1.2, 1.5, 1, 6, 0.97}) == Separation::overlapping);  // nested
  CHECK(separation(a, Interval{0.5, 1.0, 1, 6, 0.97}) == Separation::overlapping);
  CHECK(intervals_separate(a, Interval{2.01, 3.0, 1, 6, 0.97}));
  CHECK_FALSE(intervals_separate(a, Interval{1.99, 3.0, 1, 6, 0.97}));

  const MedianEstimate low = estimate_median(std::vector<double>{1, 2, 3, 4, 5, 6});
  const MedianEstimate high = estimate_median(std::vector<double>{7, 8, 9, 10, 11, 12});
  const MedianEstimate few = estimate_median(std::vector<double>{100, 101, 102});
  CHECK(separation(low, high) == Separation::first_lower);
  CHECK(separation(high, low) == Separation::first_higher);
  CHECK(separation(low, few) == Separation::no_interval);  // never "significant" without one
  CHECK(separation_name(Separation::overlapping) == "overlapping");
}

TEST_CASE("the stopping rule") {
  const StoppingRule rule{0.01, 10, 100, 2.0};
  using W = std::optional<double>;
  const std::vector<W> tight = {0.004, 0.009, 0.01};
  const std::vector<W> loose = {0.004, 0.02};
  const std::vector<W> missing = {0.004, std::nullopt};

  // Never before the minimum, whatever else holds.
  CHECK(stopping_decision(rule, 9, 0.1, tight) == StopReason::keep_going);
  CHECK(stopping_decision(rule, 9, 50.0, loose) == StopReason::keep_going);
  // Every width within the target (inclusive).
  CHECK(stopping_decision(rule, 10, 0.1, tight) == StopReason::target_reached);
  // One too wide, or one without an interval, keeps going until a cap.
  CHECK(stopping_decision(rule, 10, 0.1, loose) == StopReason::keep_going);
  CHECK(stopping_decision(rule, 50, 1.99, missing) == StopReason::keep_going);
  CHECK(stopping_decision(rule, 50, 2.0, loose) == StopReason::time_cap);
  CHECK(stopping_decision(rule, 100, 0.5, loose) == StopReason::max_rounds);
  // Precedence: target, then max rounds, then time.
  CHECK(stopping_decision(rule, 100, 9.0, tight) == StopReason::target_reached);
  CHECK(stopping_decision(rule, 100, 9.0, loose) == StopReason::max_rounds);
  // Nothing tracked: the minimum alone.
  CHECK(stopping_decision(rule, 10, 0.0, std::vector<W>{}) == StopReason::target_reached);
  CHECK(stop_reason_name(StopReason::time_cap) == "time cap");

  CHECK_NOTHROW(validate_stopping_rule(rule));
  CHECK_THROWS_AS(validate_stopping_rule({0, 10, 100, 2}), std::invalid_argument);
  CHECK_THROWS_AS(validate_stopping_rule({0.01, 0, 100, 2}), std::invalid_argument);
  CHECK_THROWS_AS(validate_stopping_rule({0.01, 10, 9, 2}), std::invalid_argument);
  CHECK_THROWS_AS(validate_stopping_rule({0.01, 10, 100, 0}), std::invalid_argument);
}
