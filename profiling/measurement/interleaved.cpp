// The device-free half of interleaved measurement: settings, batch sizes, rotation, the rounds
// loop and its stopping rule (interleaved.hpp). The CUDA half is interleaved_cuda.cpp.
#include "profiling/measurement/interleaved.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flashscope::measurement {

namespace {

std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Calls `after` once: by run() on the normal path (where its exceptions propagate), or when
// leaving scope by an exception (where they are dropped, the first one being on its way).
class AfterHook {
 public:
  explicit AfterHook(const std::function<void()>& after) : after_(after) {}
  ~AfterHook() {
    if (!done_ && after_) try {
        after_();
      } catch (...) {
      }
  }
  AfterHook(const AfterHook&) = delete;
  AfterHook& operator=(const AfterHook&) = delete;
  void run() {
    done_ = true;
    if (after_) after_();
  }

 private:
  const std::function<void()>& after_;
  bool done_ = false;
};

void check_round(const std::vector<double>& times, std::size_t expected, const char* what) {
  if (times.size() != expected)
    throw std::runtime_error(std::string(what) + ": the timer returned " +
                             std::to_string(times.size()) + " batch times for " +
                             std::to_string(expected) + " batches");
  for (const double ms : times)
    if (!(ms > 0) || !std::isfinite(ms))
      throw std::runtime_error(std::string(what) + ": a batch time of " + shortest(ms) +
                               " ms is not positive");
}

}  // namespace

std::string_view launch_pattern_name(LaunchPattern pattern) {
  switch (pattern) {
    case LaunchPattern::stream:
      return "stream";
    case LaunchPattern::graph:
      return "graph";
    case LaunchPattern::gapped:
      return "gapped";
  }
  return "?";
}

std::optional<LaunchPattern> launch_pattern_from_string(std::string_view text) {
  for (const LaunchPattern pattern :
       {LaunchPattern::stream, LaunchPattern::graph, LaunchPattern::gapped})
    if (text == launch_pattern_name(pattern)) return pattern;
  return std::nullopt;
}

void validate_interleaved_settings(const InterleavedSettings& settings) {
  validate_stopping_rule(settings.stopping);
  if (!(settings.confidence > 0 && settings.confidence < 1))
    throw std::invalid_argument("confidence must be in (0, 1)");
  if (settings.launches_per_round < 0)
    throw std::invalid_argument("launches_per_round must be 0 (sized) or more");
  if (!(settings.batch_target_ms > 0) || !std::isfinite(settings.batch_target_ms))
    throw std::invalid_argument("batch_target_ms must be above 0");
  if (settings.max_launches_per_round < 1)
    throw std::invalid_argument("max_launches_per_round must be at least 1");
  if (!(settings.warmup_ms >= 0) || !std::isfinite(settings.warmup_ms))
    throw std::invalid_argument("warmup_ms must be 0 or more");
  if (settings.min_warmup_launches < 1)
    throw std::invalid_argument("min_warmup_launches must be at least 1 (it gives the estimate)");
  if (settings.max_warmup_launches < settings.min_warmup_launches)
    throw std::invalid_argument("max_warmup_launches must be at least min_warmup_launches");
  if (settings.warmup_rounds < 0) throw std::invalid_argument("warmup_rounds must be 0 or more");
  if (!(settings.gap_us >= 0) || !std::isfinite(settings.gap_us))
    throw std::invalid_argument("gap_us must be 0 or more");
  if (settings.gap_us > 0 && settings.pattern != LaunchPattern::gapped)
    throw std::invalid_argument("gap_us applies to the gapped pattern only (pattern is " +
                                std::string(launch_pattern_name(settings.pattern)) + ")");
}

std::string interleaved_summary(const InterleavedSettings& settings) {
  const StoppingRule& rule = settings.stopping;
  const std::string batch = settings.launches_per_round > 0
                                ? std::to_string(settings.launches_per_round) + "-launch batches"
                                : shortest(settings.batch_target_ms) + " ms batches";
  std::string pattern(launch_pattern_name(settings.pattern));
  if (settings.pattern == LaunchPattern::gapped)
    pattern += " (" + shortest(settings.gap_us) + " us gaps)";
  return "interleaved rounds of " + batch + ", " + pattern + " pattern, stop at " +
         shortest(rule.target_relative_width * 100) + " % CI width, " +
         std::to_string(rule.min_rounds) + ".." + std::to_string(rule.max_rounds) + " rounds, " +
         shortest(rule.max_seconds) + " s cap";
}

std::vector<std::size_t> round_order(std::size_t contenders, int round) {
  std::vector<std::size_t> order(contenders);
  if (contenders == 0) return order;
  const std::size_t start = static_cast<std::size_t>(round < 0 ? 0 : round) % contenders;
  for (std::size_t k = 0; k < contenders; ++k)
    order[k] = (start + k) % contenders;
  return order;
}

int launches_per_batch(const InterleavedSettings& settings, double estimate_ms) {
  if (settings.launches_per_round > 0) return settings.launches_per_round;
  if (!(estimate_ms > 0) || !std::isfinite(estimate_ms)) return settings.max_launches_per_round;
  const double wanted = std::ceil(settings.batch_target_ms / estimate_ms);
  return static_cast<int>(std::clamp(wanted, 1.0, double(settings.max_launches_per_round)));
}

int further_warmup_launches(const InterleavedSettings& settings, double first_ms) {
  const double wanted = first_ms > 0 && std::isfinite(first_ms)
                            ? std::ceil(settings.warmup_ms / first_ms)
                            : double(settings.max_warmup_launches);
  const double total = std::clamp(wanted, double(settings.min_warmup_launches),
                                  double(settings.max_warmup_launches));
  return static_cast<int>(total) - 1;
}

std::string InterleavedResult::summary() const {
  char seconds_text[32];
  std::snprintf(seconds_text, sizeof seconds_text, "%.2f", seconds);
  std::string text = std::to_string(rounds) + " rounds in " + seconds_text + " s (" +
                     std::string(stop_reason_name(stop_reason)) + "), " +
                     std::string(launch_pattern_name(pattern.pattern)) + " pattern";
  if (resized) text += ", batches resized after the warm-up round";
  if (!pattern.note.empty()) text += " (" + pattern.note + ")";
  return text;
}

InterleavedResult run_interleaved(BatchTimer& timer, const std::vector<RatioPair>& ratios,
                                  const InterleavedSettings& settings, const RoundHooks& hooks) {
  validate_interleaved_settings(settings);
  const std::size_t n = timer.contenders();
  if (n == 0) throw std::invalid_argument("run_interleaved: no contender");
  for (const RatioPair& pair : ratios)
    if (pair.kernel >= n || pair.baseline >= n || pair.kernel == pair.baseline)
      throw std::invalid_argument("run_interleaved: ratio pair (" + std::to_string(pair.kernel) +
                                  ", " + std::to_string(pair.baseline) +
                                  ") does not name two contenders of " + std::to_string(n));

  InterleavedResult result;
  result.contenders.resize(n);
  result.target_relative_width = settings.stopping.target_relative_width;

  // Warm-up, one contender after the other: the first launch pays for module loading and plan
  // building; the launches after it give the estimate that sizes the batch.
  std::vector<int> launches(n);
  for (std::size_t c = 0; c < n; ++c) {
    ContenderResult& contender = result.contenders[c];
    const double first_ms = timer.warm_up(c, 1);
    const int further = further_warmup_launches(settings, first_ms);
    contender.warmup_estimate_ms = further > 0 ? timer.warm_up(c, further) : first_ms;
    contender.warmup_launches = 1 + further;
    launches[c] = launches_per_batch(settings, contender.warmup_estimate_ms);
    contender.launches_per_round = launches[c];
  }
  result.pattern = timer.prepare(launches);

  // Per contender, its per-launch time in the last warm-up round.
  std::vector<double> warm_round_ms(n, 0.0);
  const auto warm_up_round = [&](int round) {
    const std::vector<std::size_t> order = round_order(n, round);
    for (const std::size_t c : order)
      timer.enqueue_batch(c);
    const std::vector<double> times = timer.finish_round();
    check_round(times, n, "warm-up round");
    for (std::size_t k = 0; k < n; ++k)
      warm_round_ms[order[k]] = times[k];
  };
  for (int round = 0; round < settings.warmup_rounds; ++round)
    warm_up_round(round);

  // Batches sized from a host-bound estimate are too short: size them again, once.
  if (settings.launches_per_round == 0 && settings.warmup_rounds > 0) {
    std::vector<int> resized = launches;
    for (std::size_t c = 0; c < n; ++c)
      if (launches[c] * warm_round_ms[c] < settings.batch_target_ms / 2)
        resized[c] = std::max(launches[c], launches_per_batch(settings, warm_round_ms[c]));
    if (resized != launches) {
      launches = resized;
      for (std::size_t c = 0; c < n; ++c)
        result.contenders[c].launches_per_round = launches[c];
      result.resized = true;
      result.pattern = timer.prepare(launches);
      warm_up_round(settings.warmup_rounds);
    }
  }

  {
    if (hooks.before_timed_rounds) hooks.before_timed_rounds();
    AfterHook after(hooks.after_timed_rounds);
    const double start = timer.seconds();
    std::vector<std::optional<double>> widths;
    for (;;) {
      const std::vector<std::size_t> order = round_order(n, result.rounds);
      for (const std::size_t c : order)
        timer.enqueue_batch(c);
      const std::vector<double> times = timer.finish_round();
      check_round(times, n, "round");
      for (std::size_t k = 0; k < n; ++k)
        result.contenders[order[k]].round_ms.push_back(times[k]);
      ++result.rounds;

      widths.clear();
      for (const ContenderResult& contender : result.contenders)
        widths.push_back(estimate_median(contender.round_ms, settings.confidence).relative_width());
      if (settings.stop_on_ratios)
        for (const RatioPair& pair : ratios)
          widths.push_back(estimate_ratio_pct(result.contenders[pair.baseline].round_ms,
                                              result.contenders[pair.kernel].round_ms,
                                              settings.confidence)
                               .relative_width());
      result.seconds = timer.seconds() - start;
      result.stop_reason =
          stopping_decision(settings.stopping, result.rounds, result.seconds, widths);
      if (result.stop_reason != StopReason::keep_going) break;
    }
    after.run();
  }

  const double target = settings.stopping.target_relative_width;
  for (ContenderResult& contender : result.contenders) {
    contender.time = estimate_median(contender.round_ms, settings.confidence);
    const auto width = contender.time.relative_width();
    contender.within_target = width && *width <= target;
  }
  for (const RatioPair& pair : ratios) {
    RatioResult ratio;
    ratio.pair = pair;
    ratio.round_pct = round_ratios_pct(result.contenders[pair.baseline].round_ms,
                                       result.contenders[pair.kernel].round_ms);
    ratio.pct = estimate_median(ratio.round_pct, settings.confidence);
    const auto width = ratio.pct.relative_width();
    ratio.within_target = width && *width <= target;
    result.ratios.push_back(std::move(ratio));
  }
  return result;
}

}  // namespace flashscope::measurement
