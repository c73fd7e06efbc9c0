// The scheduling of interleaved measurement (profiling/measurement/interleaved.hpp) with a fake
// BatchTimer: warm-up and batch sizing, the rotation of the contender order, the stopping rule
// (target, time cap, round cap, minimum), per-round ratios, hooks and errors. No GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiling/measurement/interleaved.hpp"

using namespace flashscope::measurement;

namespace {

// A device that takes `time(contender, round, position)` ms per launch, where `round` counts
// every round since prepare() (warm-up rounds included) and `position` is the batch's place in
// its round. Its clock advances by the GPU time of what ran, plus `overhead_s` per round.
class FakeTimer : public BatchTimer {
 public:
  using TimeFunction =
      std::function<double(std::size_t contender, int round, std::size_t position)>;
  FakeTimer(std::size_t contenders, TimeFunction time) : n_(contenders), time_(std::move(time)) {}

  std::size_t contenders() const override { return n_; }
  double warm_up(std::size_t contender, int launches) override {
    warmups.push_back({contender, launches});
    CHECK_FALSE(prepared);
    const double ms = warmup_ms ? warmup_ms(contender, static_cast<int>(warmups.size())) : 1.0;
    clock_s += ms * launches / 1000;
    return ms;
  }
  PatternChoice prepare(const std::vector<int>& launches) override {
    CHECK(pending.empty());
    prepared = true;
    ++prepare_calls;
    batch_launches = launches;
    return choice;
  }
  void enqueue_batch(std::size_t contender) override {
    REQUIRE(prepared);
    pending.push_back(contender);
    order_log.push_back(contender);
  }
  std::vector<double> finish_round() override {
    if (fail_in_round >= 0 && round == fail_in_round) throw std::runtime_error("device lost");
    std::vector<double> times;
    for (std::size_t position = 0; position < pending.size(); ++position) {
      const std::size_t c = pending[position];
      const double ms = time_(c, round, position);
      times.push_back(ms);
      clock_s += ms * batch_launches[c] / 1000;
    }
    clock_s += overhead_s;
    pending.clear();
    ++round;
    if (short_rounds) times.pop_back();
    return times;
  }
  double seconds() override {
    ++clock_reads;
    return clock_s;
  }

  struct Warmup {
    std::size_t contender;
    int launches;
  };
  std::vector<Warmup> warmups;
  std::function<double(std::size_t, int)> warmup_ms;
  std::vector<int> batch_launches;
  std::vector<std::size_t> pending, order_log;
  PatternChoice choice{LaunchPattern::stream, ""};
  bool prepared = false;
  int prepare_calls = 0;
  int round = 0;
  int fail_in_round = -1;
  bool short_rounds = false;
  double clock_s = 0, overhead_s = 0.0001;
  int clock_reads = 0;

 private:
  std::size_t n_;
  TimeFunction time_;
};

InterleavedSettings quick() {
  InterleavedSettings settings;
  settings.stopping = StoppingRule{0.01, 10, 400, 2.0};
  settings.warmup_rounds = 1;
  return settings;
}

// A deterministic pseudo-random value in [-1, 1].
double jitter(std::size_t contender, int round) {
  std::uint64_t x = 0x9e3779b97f4a7c15ull * (contender + 1) + 0xbf58476d1ce4e5b9ull * round;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (x % 2000001) / 1000000.0 - 1.0;
}

}  // namespace

TEST_CASE("the order of the contenders rotates every round") {
  CHECK(round_order(3, 0) == std::vector<std::size_t>{0, 1, 2});
  CHECK(round_order(3, 1) == std::vector<std::size_t>{1, 2, 0});
  CHECK(round_order(3, 2) == std::vector<std::size_t>{2, 0, 1});
  CHECK(round_order(3, 5) == std::vector<std::size_t>{2, 0, 1});
  CHECK(round_order(1, 7) == std::vector<std::size_t>{0});
  CHECK(round_order(0, 3).empty());
  // Over N rounds every contender takes every position once.
  for (std::size_t n = 1; n <= 7; ++n) {
    std::vector<std::vector<int>> seen(n, std::vector<int>(n, 0));
    for (int r = 0; r < static_cast<int>(n); ++r) {
      const std::vector<std::size_t> order = round_order(n, r);
      for (std::size_t position = 0; position < n; ++position)
        ++seen[order[position]][position];
    }
    for (const auto& positions : seen)
      for (const int count : positions)
        CHECK(count == 1);
  }
}

TEST_CASE("batch sizes and warm-up lengths") {
  InterleavedSettings settings;  // 2 ms batches, at most 200 launches; warm-up 25 ms, 2..100
  CHECK(launches_per_batch(settings, 0.05) == 40);
  CHECK(launches_per_batch(settings, 0.3) == 7);  // ceil(6.67)
  CHECK(launches_per_batch(settings, 2.0) == 1);
  CHECK(launches_per_batch(settings, 30.0) == 1);
  CHECK(launches_per_batch(settings, 0.001) == 200);
  CHECK(launches_per_batch(settings, 0.0) == 200);  // no estimate: the cap
  settings.launches_per_round = 7;
  CHECK(launches_per_batch(settings, 30.0) == 7);
  CHECK(launches_per_batch(settings, 0.001) == 7);

  const InterleavedSettings defaults;
  CHECK(further_warmup_launches(defaults, 5.0) == 4);    // 5 launches cover 25 ms
  CHECK(further_warmup_launches(defaults, 0.01) == 99);  // the cap of 100
  CHECK(further_warmup_launches(defaults, 100.0) == 1);  // at least 2 in all
  CHECK(further_warmup_launches(defaults, 0.0) == 99);
  InterleavedSettings one = defaults;
  one.min_warmup_launches = 1;
  CHECK(further_warmup_launches(one, 100.0) == 0);
}

TEST_CASE("settings are validated and summarised") {
  CHECK_NOTHROW(validate_interleaved_settings(InterleavedSettings{}));
  CHECK(interleaved_summary(InterleavedSettings{}) ==
        "interleaved rounds of 2 ms batches, graph pattern, stop at 1 % CI width, 10..400 "
        "rounds, 2 s cap");
  InterleavedSettings gapped;
  gapped.pattern = LaunchPattern::gapped;
  gapped.gap_us = 50;
  gapped.launches_per_round = 3;
  CHECK(interleaved_summary(gapped) ==
        "interleaved rounds of 3-launch batches, gapped (50 us gaps) pattern, stop at 1 % CI "
        "width, 10..400 rounds, 2 s cap");

  const auto bad = [](const std::function<void(InterleavedSettings&)>& change) {
    InterleavedSettings settings;
    change(settings);
    return settings;
  };
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.batch_target_ms = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.launches_per_round = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.max_launches_per_round = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.min_warmup_launches = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.max_warmup_launches = 1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.warmup_rounds = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.confidence = 1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(validate_interleaved_settings(bad([](auto& s) { s.stopping.min_rounds = 0; })),
                  std::invalid_argument);
  // A gap only means something in the gapped pattern.
  CHECK_THROWS_WITH(validate_interleaved_settings(bad([](auto& s) { s.gap_us = 10; })),
                    doctest::Contains("gapped pattern only"));

  CHECK(launch_pattern_from_string("graph") == LaunchPattern::graph);
  CHECK(launch_pattern_from_string("gapped") == LaunchPattern::gapped);
  CHECK(launch_pattern_from_string("stream") == LaunchPattern::stream);
  CHECK_FALSE(launch_pattern_from_string("events"));
}

TEST_CASE("steady contenders stop at the minimum, every round in rotated order") {
  // Three contenders at 0.05, 0.5 and 4 ms per launch, no noise: every interval has zero width.
  const double ms[] = {0.05, 0.5, 4.0};
  FakeTimer timer(3, [&](std::size_t c, int, std::size_t) { return ms[c]; });
  timer.warmup_ms = [&](std::size_t c, int) { return ms[c]; };
  std::vector<std::string> events;
  RoundHooks hooks{[&] { events.push_back("before @" + std::to_string(timer.order_log.size())); },
                   [&] { events.push_back("after @" + std::to_string(timer.order_log.size())); }};
  const InterleavedResult result = run_interleaved(timer, {}, quick(), hooks);

  // Warm-up: one launch each, then enough to cover 25 ms (2..100 in all).
  REQUIRE(timer.warmups.size() == 6);
  CHECK(timer.warmups[0].contender == 0);
  CHECK(timer.warmups[0].launches == 1);
  CHECK(timer.warmups[1].launches == 99);  // 25 / 0.05 = 500 -> 100 in all
  CHECK(timer.warmups[3].launches == 49);  // 25 / 0.5 = 50
  CHECK(timer.warmups[5].launches == 6);   // ceil(25 / 4) = 7
  CHECK(result.contenders[2].warmup_launches == 7);
  // Batches of 2 ms: 40, 4 and 1 launches.
  CHECK(timer.batch_launches == std::vector<int>{40, 4, 1});
  CHECK(result.contenders[0].launches_per_round == 40);

  CHECK(result.rounds == 10);
  CHECK(result.stop_reason == StopReason::target_reached);
  CHECK(result.pattern.pattern == LaunchPattern::stream);
  CHECK(timer.prepare_calls == 1);  // the warm-up round agreed with the estimates
  CHECK_FALSE(result.resized);
  // One warm-up round, then ten timed ones; the hooks bracket the timed rounds exactly.
  REQUIRE(timer.order_log.size() == 33);
  CHECK(events == std::vector<std::string>{"before @3", "after @33"});
  for (int round = 0; round < 10; ++round) {
    const std::vector<std::size_t> expected = round_order(3, round);
    for (std::size_t k = 0; k < 3; ++k)
      CHECK(timer.order_log[3 + 3 * round + k] == expected[k]);
  }
  for (std::size_t c = 0; c < 3; ++c) {
    const ContenderResult& contender = result.contenders[c];
    CHECK(contender.round_ms.size() == 10);
    CHECK(contender.time.median == ms[c]);
    REQUIRE(contender.time.interval);
    CHECK(contender.time.interval->lower == ms[c]);
    CHECK(contender.within_target);
  }
}

TEST_CASE("batches sized from a host-bound warm-up are sized again after the warm-up round") {
  // Launched back to back from the host, contender 0's warm-up takes 0.15 ms per launch (the
  // host's launch cost); in its real pattern (a graph) it takes 0.02 ms. Contender 1 is honest.
  FakeTimer timer(2, [](std::size_t c, int, std::size_t) { return c == 0 ? 0.02 : 1.0; });
  timer.warmup_ms = [](std::size_t c, int) { return c == 0 ? 0.15 : 1.0; };
  std::size_t enqueued_before_rounds = 0;
  const InterleavedResult result = run_interleaved(
      timer, {}, quick(), {[&] { enqueued_before_rounds = timer.order_log.size(); }, {}});
  CHECK(timer.prepare_calls == 2);
  CHECK(result.resized);
  CHECK(timer.batch_launches == std::vector<int>{100, 2});  // 2 ms / 0.02 ms; 2 ms / 1 ms
  CHECK(result.contenders[0].launches_per_round == 100);
  CHECK(result.contenders[1].launches_per_round == 2);
  CHECK(enqueued_before_rounds == 4);  // a warm-up round at each size
  CHECK(result.summary().find("batches resized after the warm-up round") != std::string::npos);

  // Never with a fixed batch, and never to fewer launches.
  FakeTimer fixed(2, [](std::size_t c, int, std::size_t) { return c == 0 ? 0.02 : 1.0; });
  fixed.warmup_ms = [](std::size_t c, int) { return c == 0 ? 0.15 : 1.0; };
  InterleavedSettings settings = quick();
  settings.launches_per_round = 3;
  const InterleavedResult kept = run_interleaved(fixed, {}, settings);
  CHECK(fixed.prepare_calls == 1);
  CHECK_FALSE(kept.resized);
  FakeTimer slower(1, [](std::size_t, int, std::size_t) { return 5.0; });
  slower.warmup_ms = [](std::size_t, int) { return 0.5; };  // 4 launches of 5 ms: too long, kept
  const InterleavedResult long_batches = run_interleaved(slower, {}, quick());
  CHECK(slower.prepare_calls == 1);
  CHECK(long_batches.contenders[0].launches_per_round == 4);
}

TEST_CASE("noisy contenders run until the time cap or the round cap") {
  // +-5 % noise: a 1 % interval of the median needs far more than the caps allow here.
  const auto noisy = [](std::size_t c, int round, std::size_t) {
    return 1.0 * (1 + 0.05 * jitter(c, round));
  };
  InterleavedSettings settings = quick();
  settings.stopping.max_seconds = 0.5;  // about 0.5 s / (2 contenders x 2 ms) = 125 rounds
  {
    FakeTimer timer(2, noisy);
    const InterleavedResult result = run_interleaved(timer, {}, settings);
    CHECK(result.stop_reason == StopReason::time_cap);
    CHECK(result.seconds >= 0.5);
    CHECK(result.rounds > 100);
    CHECK(result.rounds < 130);
    CHECK_FALSE(result.contenders[0].within_target);
    REQUIRE(result.contenders[0].time.interval);
    CHECK(*result.contenders[0].time.relative_width() > 0.01);
  }
  settings.stopping.max_rounds = 40;
  {
    FakeTimer timer(2, noisy);
    const InterleavedResult result = run_interleaved(timer, {}, settings);
    CHECK(result.stop_reason == StopReason::max_rounds);
    CHECK(result.rounds == 40);
  }
  // The minimum holds even past the time cap.
  settings.stopping = StoppingRule{0.01, 25, 400, 1e-6};
  {
    FakeTimer timer(2, noisy);
    const InterleavedResult result = run_interleaved(timer, {}, settings);
    CHECK(result.stop_reason == StopReason::time_cap);
    CHECK(result.rounds == 25);
  }
}

TEST_CASE("moderate noise narrows until the target") {
  // +-1 % noise: the interval of the median falls under 1 % after a few dozen rounds.
  FakeTimer timer(2, [](std::size_t c, int round, std::size_t) {
    return (c == 0 ? 1.0 : 2.0) * (1 + 0.01 * jitter(c, round));
  });
  InterleavedSettings settings = quick();
  settings.stopping.max_seconds = 100;
  const InterleavedResult result = run_interleaved(timer, {}, settings);
  CHECK(result.stop_reason == StopReason::target_reached);
  CHECK(result.rounds > 10);
  CHECK(result.rounds < 400);
  for (const ContenderResult& contender : result.contenders) {
    CHECK(contender.within_target);
    CHECK(*contender.time.relative_width() <= 0.01);
  }
  // Stopping looked at the last round only when it had to: widths of round n - 1 were too wide.
  std::vector<double> shorter = result.contenders[0].round_ms;
  std::vector<double> other = result.contenders[1].round_ms;
  shorter.pop_back();
  other.pop_back();
  const bool earlier_within = *estimate_median(shorter).relative_width() <= 0.01 &&
                              *estimate_median(other).relative_width() <= 0.01;
  CHECK_FALSE(earlier_within);
}

TEST_CASE("ratios are computed round by round, so common drift cancels") {
  // The clock drifts by 30 % over the run; the kernel (0) always takes 1.25x the baseline (1).
  const auto drifting = [](std::size_t c, int round, std::size_t) {
    const double clock = 1.0 + 0.3 * std::sin(round * 0.37);
    return (c == 0 ? 2.5 : 2.0) * clock;
  };
  FakeTimer timer(2, drifting);
  InterleavedSettings settings = quick();
  settings.stopping.max_rounds = 60;
  const InterleavedResult result = run_interleaved(timer, {{0, 1}}, settings);
  REQUIRE(result.ratios.size() == 1);
  const RatioResult& ratio = result.ratios[0];
  CHECK(ratio.pair.kernel == 0);
  CHECK(ratio.pair.baseline == 1);
  CHECK(ratio.round_pct.size() == static_cast<std::size_t>(result.rounds));
  CHECK(ratio.pct.median == doctest::Approx(80));
  REQUIRE(ratio.pct.interval);
  CHECK(*ratio.pct.relative_width() == doctest::Approx(0).epsilon(1e-9));
  CHECK(ratio.within_target);
  // The times carry the drift: the rounds go on to the cap.
  CHECK(result.stop_reason == StopReason::max_rounds);
  CHECK(*result.contenders[0].time.relative_width() > 0.05);

  // A ratio is wider than either time when the two move apart: each time alternates by +-0.4 %
  // (0.8 % wide), in opposite directions, so the ratio alternates by about +-0.8 % (1.6 % wide).
  // With a 1 % target the ratio holds the stop back; with stop_on_ratios off it does not.
  const auto opposed = [](std::size_t c, int round, std::size_t) {
    const double s = round % 2 == 0 ? 1.0 : -1.0;
    return c == 0 ? 2.5 * (1 + 0.004 * s) : 2.0 * (1 - 0.004 * s);
  };
  settings.stopping = StoppingRule{0.01, 10, 60, 100};
  FakeTimer with_ratios(2, opposed);
  const InterleavedResult ratio_bound = run_interleaved(with_ratios, {{0, 1}}, settings);
  CHECK(ratio_bound.stop_reason == StopReason::max_rounds);
  CHECK(ratio_bound.contenders[0].within_target);
  CHECK(ratio_bound.contenders[1].within_target);
  CHECK_FALSE(ratio_bound.ratios[0].within_target);
  CHECK(*ratio_bound.ratios[0].pct.relative_width() == doctest::Approx(0.016).epsilon(0.01));

  settings.stop_on_ratios = false;
  FakeTimer times_only(2, opposed);
  const InterleavedResult time_bound = run_interleaved(times_only, {{0, 1}}, settings);
  CHECK(time_bound.stop_reason == StopReason::target_reached);
  CHECK(time_bound.rounds == 10);
  CHECK_FALSE(time_bound.ratios[0].within_target);  // still reported, just not waited for
}

TEST_CASE("rotation spreads an ordering effect over every contender alike") {
  // Whoever runs first in a round is 10 % slow (a cold start): each of 2 contenders is first in
  // every other round, so both have the same share of slow rounds.
  FakeTimer timer(2,
                  [](std::size_t, int, std::size_t position) { return position == 0 ? 1.1 : 1.0; });
  InterleavedSettings settings = quick();
  settings.stopping = StoppingRule{0.01, 20, 20, 100};
  const InterleavedResult result = run_interleaved(timer, {{0, 1}}, settings);
  REQUIRE(result.rounds == 20);
  for (const ContenderResult& contender : result.contenders) {
    int slow = 0;
    for (const double ms : contender.round_ms)
      slow += ms > 1.05;
    CHECK(slow == 10);
  }
  // Per round one side is slow: the ratio alternates 110 % / 90.9 %, its median sits between.
  CHECK(result.ratios[0].pct.median == doctest::Approx((110 + 100 / 1.1) / 2));
}

TEST_CASE("the pattern the timer chose is reported") {
  FakeTimer timer(1, [](std::size_t, int, std::size_t) { return 1.0; });
  timer.choice = {LaunchPattern::stream, "graph capture failed for cudnn (...)"};
  const InterleavedResult result = run_interleaved(timer, {}, quick());
  CHECK(result.pattern.pattern == LaunchPattern::stream);
  CHECK(result.summary() ==
        "10 rounds in 0.02 s (target width), stream pattern (graph capture failed for cudnn "
        "(...))");
}

TEST_CASE("bad pairs, bad rounds and device errors") {
  FakeTimer timer(2, [](std::size_t, int, std::size_t) { return 1.0; });
  CHECK_THROWS_AS(run_interleaved(timer, {{0, 2}}, quick()), std::invalid_argument);
  CHECK_THROWS_AS(run_interleaved(timer, {{1, 1}}, quick()), std::invalid_argument);
  CHECK(timer.warmups.empty());  // refused before anything ran

  FakeTimer none(0, [](std::size_t, int, std::size_t) { return 1.0; });
  CHECK_THROWS_AS(run_interleaved(none, {}, quick()), std::invalid_argument);

  FakeTimer zero(1, [](std::size_t, int, std::size_t) { return 0.0; });
  CHECK_THROWS_WITH(run_interleaved(zero, {}, quick()), doctest::Contains("not positive"));

  FakeTimer short_rounds(2, [](std::size_t, int, std::size_t) { return 1.0; });
  short_rounds.short_rounds = true;
  CHECK_THROWS_WITH(run_interleaved(short_rounds, {}, quick()),
                    doctest::Contains("1 batch times for 2 batches"));

  // A device error in the fourth timed round: the after hook still runs, once.
  FakeTimer failing(2, [](std::size_t, int, std::size_t) { return 1.0; });
  failing.fail_in_round = 4;  // round 0 is the warm-up round
  int before = 0, after = 0;
  CHECK_THROWS_WITH(run_interleaved(failing, {}, quick(), {[&] { ++before; }, [&] { ++after; }}),
                    "device lost");
  CHECK(before == 1);
  CHECK(after == 1);
}
