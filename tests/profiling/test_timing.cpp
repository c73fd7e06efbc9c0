// How many launches time_launches makes for a kernel of a given duration, and its summary line.
// Pure functions: no GPU needed.
#include <doctest/doctest.h>

#include <stdexcept>

#include "profiling/timing.hpp"

using namespace flashscope;

TEST_CASE("the timed batch covers the target, within --min-runs..--runs") {
  const TimingSettings defaults;                     // 10..30 timed launches, target 200 ms
  CHECK(timed_launch_count(defaults, 0.05) == 30);   // short kernels: the full count
  CHECK(timed_launch_count(defaults, 10.0) == 20);   // 200 / 10
  CHECK(timed_launch_count(defaults, 9.0) == 23);    // ceil(22.2)
  CHECK(timed_launch_count(defaults, 150.0) == 10);  // long ones: never fewer than 10

  TimingSettings fixed = defaults;
  fixed.target_ms = 0;  // always --runs
  CHECK(timed_launch_count(fixed, 150.0) == 30);

  TimingSettings few = defaults;
  few.timed_runs = 5;  // a minimum above the maximum yields to it
  CHECK(timed_launch_count(few, 150.0) == 5);
  CHECK(timed_launch_count(few, 0.01) == 5);
}

TEST_CASE("warm-up stops once it covers half the target, after at least two launches") {
  const TimingSettings defaults;  // up to 10 warm-up launches
  // further_warmup_count excludes the first launch, which measured the estimate.
  CHECK(further_warmup_count(defaults, 0.05) == 9);
  CHECK(further_warmup_count(defaults, 25.0) == 3);  // 100 / 25 = 4 launches in all
  CHECK(further_warmup_count(defaults, 150.0) == 1);

  TimingSettings one = defaults;
  one.warmup_runs = 1;
  CHECK(further_warmup_count(one, 150.0) == 0);
  CHECK(further_warmup_count(one, 0.05) == 0);

  TimingSettings fixed = defaults;
  fixed.target_ms = 0;
  CHECK(further_warmup_count(fixed, 150.0) == 9);
}

TEST_CASE("timing settings are summarised and validated") {
  TimingSettings settings;
  CHECK(timing_summary(settings) == "up to 10 warm-up + 10..30 timed launches (target 200 ms)");
  settings.target_ms = 0;
  CHECK(timing_summary(settings) == "10 warm-up + 30 timed launches");
  settings.target_ms = 50;
  settings.min_timed_runs = 30;
  CHECK(timing_summary(settings) == "up to 10 warm-up + 30 timed launches (target 50 ms)");

  TimingSettings bad;
  bad.warmup_runs = 0;
  CHECK_THROWS_AS(validate_timing_settings(bad), std::invalid_argument);
  bad = {};
  bad.min_timed_runs = 0;
  CHECK_THROWS_AS(validate_timing_settings(bad), std::invalid_argument);
  bad = {};
  bad.target_ms = -1;
  CHECK_THROWS_AS(validate_timing_settings(bad), std::invalid_argument);
  CHECK_NOTHROW(validate_timing_settings(TimingSettings{}));
}

TEST_CASE("samples are summarised by median, min and max") {
  const TimingStats odd = summarize_samples({3.0, 1.0, 2.0});
  CHECK(odd.median_ms == 2.0);
  CHECK(odd.min_ms == 1.0);
  CHECK(odd.max_ms == 3.0);
  CHECK(odd.samples_ms == std::vector<double>{3.0, 1.0, 2.0});  // launch order kept
  CHECK(summarize_samples({4.0, 1.0, 2.0, 3.0}).median_ms == 2.5);
  CHECK_THROWS_AS(summarize_samples({}), std::invalid_argument);
}
