// Interleaved measurement of one workload cell (docs/profiling.md, "Interleaved measurement and
// intervals"). N contenders (kernels and baselines that compute the same problem) are timed in
// rounds: in every round each contender runs one batch of launches, and the order of the
// contenders rotates by one each round (round r starts with contender r mod N), so clock and
// power drift and any effect of running first or after a given neighbour fall on all of them
// alike. Each batch gives one sample, the per-launch time of that round; a contender's time is
// the median of its rounds with the order-statistic interval of statistics.hpp, and a ratio of
// two contenders (pct of a baseline) is computed round by round with its own interval. The number
// of rounds adapts: rounds continue until every tracked interval is narrow enough, the cell's
// time cap is reached or the round cap (StoppingRule), never fewer than the minimum.
//
// The scheduling (warm-up, batch sizes, rotation, stopping) is device-free and talks to the GPU
// through BatchTimer, so tests drive it with a fake timer; CudaBatchTimer is the real one, and
// measure_interleaved() puts the two together.
//
// Launch patterns (LaunchPattern), the way a batch is launched and timed:
//   stream  the batch's launches back to back on one stream, one pair of CUDA events around the
//           batch; per-launch time = batch time / launches. The host must enqueue faster than the
//           GPU drains, or the gaps between launches are counted: see docs/profiling.md.
//   graph   the batch captured once into a CUDA graph (after the warm-up) and replayed once per
//           round between a pair of events: no host launch cost inside the timed region. A
//           contender whose launch cannot be captured (a library that synchronises or allocates)
//           makes the whole cell fall back to `stream`, and the result says so.
//   gapped  each launch between its own pair of events, the device idle for `gap_us` before each
//           (a one-thread spin kernel on the same stream, outside the events), like a model that
//           does other work between attention calls; gap_us = 0 is today's time_launches
//           (an event pair per launch, back to back). The `between_launches` hook (e.g. an L2
//           flush for cold-cache timing) runs at the same place and also makes a batch `gapped`.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/measurement/statistics.hpp"

namespace flashscope::measurement {

enum class LaunchPattern { stream, graph, gapped };
std::string_view launch_pattern_name(LaunchPattern pattern);  // "stream", "graph", "gapped"
std::optional<LaunchPattern> launch_pattern_from_string(std::string_view text);

struct InterleavedSettings {
  // When to stop: every tracked relative interval width <= 1 % (the times of all contenders and,
  // with stop_on_ratios, every ratio), at least 10 rounds, at most 400 rounds or 2 s of rounds.
  StoppingRule stopping;
  double confidence = kDefaultConfidence;
  bool stop_on_ratios = true;  // the ratios' widths count in the stopping rule too

  // Batch size: launches per round of each contender. 0: sized per contender so that a batch
  // covers about batch_target_ms of GPU time (at least 1, at most max_launches_per_round), from
  // the warm-up's estimate. A fixed value applies to every contender.
  int launches_per_round = 0;
  double batch_target_ms = 2.0;
  int max_launches_per_round = 200;

  // Warm-up, per contender before any round: one launch (timed, the first estimate), then
  // launches covering warmup_ms (at least min_warmup_launches in all, at most
  // max_warmup_launches), timed together for the estimate that sizes the batch. Then
  // warmup_rounds untimed rounds of the real pattern (which also uploads a graph). Launched
  // back to back from the host, a short kernel's warm-up estimate can be the host's launch cost
  // rather than the kernel's time; when the last warm-up round (in the real pattern) says a
  // batch covers less than half of batch_target_ms, the batches are sized again from it, the
  // pattern prepared again and one more warm-up round run (once; sized batches only).
  double warmup_ms = 25.0;
  int min_warmup_launches = 2;
  int max_warmup_launches = 100;
  int warmup_rounds = 1;

  // graph by default: the only pattern whose timed region holds no host launch cost, which for
  // short kernels (step 25 at N = 512 runs for tens of microseconds, a host launch of it costs
  // about 0.15 ms) would otherwise be most of what is timed. A cell with a contender that cannot
  // be captured falls back to stream for every contender (PatternChoice says so).
  LaunchPattern pattern = LaunchPattern::graph;
  double gap_us = 0;  // gapped: device idle time before each launch, microseconds
};

// Throws std::invalid_argument naming the setting at fault.
void validate_interleaved_settings(const InterleavedSettings& settings);

// "rounds of 2 ms batches, stream pattern, stop at 1 % CI width, 10..400 rounds, 2 s cap".
std::string interleaved_summary(const InterleavedSettings& settings);

// The contender order of round `round` (0-based): round-robin start, round r begins with
// contender r mod n and continues in index order, wrapping.
std::vector<std::size_t> round_order(std::size_t contenders, int round);

// Launches per batch for a contender of `estimate_ms` per launch (see InterleavedSettings).
int launches_per_batch(const InterleavedSettings& settings, double estimate_ms);

// Warm-up launches after the first one, which gave `first_ms`: enough to cover warmup_ms,
// within [min_warmup_launches, max_warmup_launches] in all, so this returns that count - 1.
int further_warmup_launches(const InterleavedSettings& settings, double first_ms);

// A ratio to track: pct = baseline time / kernel time * 100, round by round.
struct RatioPair {
  std::size_t kernel = 0;
  std::size_t baseline = 0;
};

// The pattern a cell was actually timed with.
struct PatternChoice {
  LaunchPattern pattern = LaunchPattern::stream;
  std::string note;  // why it differs from the one asked for; empty when it does not
};

// The device side of an interleaved measurement. Implementations: CudaBatchTimer (below) and the
// tests' fake. Calls come in this order: warm_up (any number), prepare, then rounds of
// enqueue_batch (once per contender per round) each closed by finish_round; prepare may come
// again between rounds with larger batches (after the warm-up round, see run_interleaved).
class BatchTimer {
 public:
  virtual ~BatchTimer() = default;
  virtual std::size_t contenders() const = 0;
  // Runs `launches` launches of `contender` back to back, untimed as far as the result is
  // concerned, waits for them and returns their mean time per launch in ms (one event pair
  // around all of them).
  virtual double warm_up(std::size_t contender, int launches) = 0;
  // Fixes every contender's launches per batch (one entry per contender) and prepares the
  // pattern (a graph capture; again when called again). Returns the pattern used: once a capture
  // failed, every later call returns the same fallback.
  virtual PatternChoice prepare(const std::vector<int>& launches_per_batch) = 0;
  // Enqueues one timed batch of `contender`; does not wait.
  virtual void enqueue_batch(std::size_t contender) = 0;
  // Waits for the batches enqueued since the last call and returns their per-launch times in ms,
  // in the order they were enqueued.
  virtual std::vector<double> finish_round() = 0;
  // A monotonic clock in seconds, for the time cap.
  virtual double seconds() = 0;
};

struct ContenderResult {
  std::vector<double> round_ms;   // per-launch time of each round, in round order
  int launches_per_round = 0;     // in the timed rounds (after any resizing)
  int warmup_launches = 0;        // before the rounds, the first one included
  double warmup_estimate_ms = 0;  // the estimate that sized the batch
  MedianEstimate time;            // median and interval of round_ms
  bool within_target = false;     // its relative width <= the target
};

struct RatioResult {
  RatioPair pair;
  std::vector<double> round_pct;  // baseline_r / kernel_r * 100, in round order
  MedianEstimate pct;
  bool within_target = false;
};

struct InterleavedResult {
  std::vector<ContenderResult> contenders;
  std::vector<RatioResult> ratios;  // in the order of the pairs asked for
  int rounds = 0;                   // timed rounds (every contender has this many samples)
  bool resized = false;             // batches were sized again after the warm-up round
  StopReason stop_reason = StopReason::keep_going;
  double seconds = 0;  // wall time of the timed rounds
  PatternChoice pattern;
  double target_relative_width = 0;

  // "40 rounds in 1.21 s (target width), stream pattern".
  std::string summary() const;
};

// Called around the timed rounds (after warm-up and warm-up rounds): e.g. an NvmlSampler's start
// and stop, so its samples cover exactly the timed launches.
struct RoundHooks {
  std::function<void()> before_timed_rounds;
  std::function<void()> after_timed_rounds;
};

// Runs the warm-up, the warm-up rounds and the timed rounds on `timer` and summarises them.
// `ratios` name contenders of `timer`. Throws std::invalid_argument for bad settings or pairs,
// std::runtime_error when the timer returns a round of the wrong size or a time that is not
// positive; the timer's own exceptions pass through (after the after_timed_rounds hook when the
// rounds had begun).
InterleavedResult run_interleaved(BatchTimer& timer, const std::vector<RatioPair>& ratios,
                                  const InterleavedSettings& settings,
                                  const RoundHooks& hooks = {});

// ---- The GPU side ------------------------------------------------------------------------------

// Enqueues exactly one forward pass (one kernel or one baseline call) on the stream; throws if the
// launch fails.
using ContenderLaunch = std::function<void(cudaStream_t)>;

struct Contender {
  std::string name;  // for messages: "step 25 (FP16, ...)", "cudnn"
  ContenderLaunch launch;
};

// BatchTimer on a CUDA stream (a created stream, not the legacy default one: graph capture needs
// it). `between_launches`, when set, runs before every launch outside the timed region (an L2
// flush) and makes the pattern gapped.
class CudaBatchTimer final : public BatchTimer {
 public:
  CudaBatchTimer(std::vector<Contender> contenders, cudaStream_t stream, LaunchPattern pattern,
                 double gap_us = 0, std::function<void(cudaStream_t)> between_launches = {});
  ~CudaBatchTimer() override;
  CudaBatchTimer(const CudaBatchTimer&) = delete;
  CudaBatchTimer& operator=(const CudaBatchTimer&) = delete;

  std::size_t contenders() const override;
  double warm_up(std::size_t contender, int launches) override;
  PatternChoice prepare(const std::vector<int>& launches_per_batch) override;
  void enqueue_batch(std::size_t contender) override;
  std::vector<double> finish_round() override;
  double seconds() override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// CudaBatchTimer + run_interleaved: the cell's contenders timed on `stream` with
// settings.pattern.
InterleavedResult measure_interleaved(std::vector<Contender> contenders,
                                      const std::vector<RatioPair>& ratios,
                                      const InterleavedSettings& settings, cudaStream_t stream,
                                      const RoundHooks& hooks = {},
                                      std::function<void(cudaStream_t)> between_launches = {});

// Enqueues a one-thread kernel that spins for `microseconds` of %globaltimer on `stream`: the
// gapped pattern's idle gap (the SMs stay idle but for one thread).
cudaError_t enqueue_idle_gap(double microseconds, cudaStream_t stream);

}  // namespace flashscope::measurement
