#include "explorer/report/results_report.hpp"

#include "kernels/common/problem_axes.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "configs/config_sets.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/ceilings.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/roofline.hpp"
#include "explorer/model/steps.hpp"
#include "explorer/model/compare.hpp"
#include "profiling/results/baseline_drift.hpp"

namespace flashscope::explorer {

namespace {

// The seed's published percentages of FA2 (spec §1.5): A100 and RTX 3090, at N = 4096 and as
// the harmonic mean over N = 512…16384.
struct SeedResult {
  double a100_4096, a100_harmonic, rtx3090_4096, rtx3090_harmonic;
};
constexpr SeedResult kSeedResults[] = {
    {15.8, 16.6, 49.5, 49.8},    {72.6, 72.4, 98.3, 98.6},   {77.6, 79.9, 99.4, 100.0},
    {77.6, 80.0, 100.0, 100.4},  {76.8, 79.1, 99.7, 100.3},  {78.1, 80.4, 99.9, 100.4},
    {80.3, 82.3, 101.5, 101.8},  {87.8, 88.9, 101.7, 101.2}, {95.3, 96.3, 97.5, 97.4},
    {93.9, 95.0, 102.9, 102.3},  {95.2, 96.7, 102.8, 102.3}, {95.3, 97.0, 102.8, 102.3},
    {97.6, 98.8, 101.5, 101.2},  {97.7, 99.1, 101.5, 101.2}, {97.9, 99.5, 101.5, 101.3},
    {99.2, 100.4, 100.9, 100.7},
};

// A step's title, or what the row is where this build has no such step: a result file may hold
// rows of a reverted experiment or of another build's newer step, and the blocks that list the
// steps a run measured (the tensor-pipe and roofline tables) take their numbers from the rows.
std::string title_or_unknown(int step) {
  const std::string_view title = step_title(step);
  return title.empty() ? "(not a step of this build)" : std::string(title);
}

std::string fixed(std::optional<double> value, int decimals, const char* suffix = "") {
  if (!value) return "–";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", decimals, *value, suffix);
  return text;
}

std::string signed_percent(std::optional<double> change) {
  if (!change) return "–";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * *change);
  return text;
}

std::vector<std::string> dtypes_of(const RowSet& set) {
  std::vector<std::string> out;
  for (const char* dtype : {"fp16", "bf16"})
    if (std::find(set.dtypes().begin(), set.dtypes().end(), dtype) != set.dtypes().end())
      out.push_back(dtype);
  return out;
}

// A config in a markdown table: "`(FP16, 128, ...): ...`", or "–" for a row without one.
std::string config_cell(const ResultRow& row) {
  return row.config ? "`" + to_short_form(*row.config) + "`" : std::string("–");
}

// The rows of one run (run_key).
std::vector<const ResultRow*> rows_of_run(const RowSet& set, const std::string& run) {
  std::vector<const ResultRow*> rows;
  for (const ResultRow* row : set.rows())
    if (run_key(*row) == run) rows.push_back(row);
  return rows;
}

// The run with the most usable rows matching `wanted`, counted by distinct (step, config, dtype,
// N); ties go to the first run key. Empty when no row matches.
template <typename Wanted>
std::string busiest_run(const RowSet& set, Wanted wanted) {
  std::map<std::string,
           std::set<std::tuple<RowSubject, std::optional<KernelConfig>, std::optional<DType>, int>>>
      items;
  for (const ResultRow* row : set.rows())
    if (is_usable(*row) && wanted(*row))
      items[run_key(*row)].insert(
          {row->subject, row->config, row_dtype(*row), row->problem.seq_len});
  std::string best;
  std::size_t most = 0;
  for (const auto& [run, measured] : items)
    if (measured.size() > most) {
      best = run;
      most = measured.size();
    }
  return best;
}

// The run that measured the most (step or reference, dtype) pairs among the wanted rows: the one
// that covers the most steps, however many configs each. The ceilings block reads every step
// from one run, so a run of the whole progression wins over a tune sweep of a few steps.
template <typename Wanted>
std::string widest_run(const RowSet& set, Wanted wanted) {
  std::map<std::string, std::set<std::pair<RowSubject, std::optional<DType>>>> covered;
  for (const ResultRow* row : set.rows())
    if (is_usable(*row) && wanted(*row))
      covered[run_key(*row)].insert({row->subject, row_dtype(*row)});
  std::string best;
  std::size_t most = 0;
  for (const auto& [run, pairs] : covered)
    if (pairs.size() > most) {
      best = run;
      most = pairs.size();
    }
  return best;
}

// The run that measured the most (step, dtype, N) of numbered steps from `first_step` on.
// Tables built from it compare steps measured on one host, by one build, in one sweep; rows of
// other runs (a tune sweep on another host) have tables of their own.
std::string widest_kernel_run(const RowSet& set, int first_step) {
  std::map<std::string, std::set<std::tuple<int, std::optional<DType>, int>>> covered;
  for (const ResultRow* row : set.rows())
    if (const auto step = row->step_number(); step && *step >= first_step && is_usable(*row))
      covered[run_key(*row)].insert({*step, row_dtype(*row), row->problem.seq_len});
  std::string best;
  std::size_t most = 0;
  for (const auto& [run, cells] : covered)
    if (cells.size() > most) {
      best = run;
      most = cells.size();
    }
  return best;
}

// The progression's run: the widest over every numbered step.
std::string progression_run(const RowSet& set) {
  return widest_kernel_run(set, 1);
}

// The Hopper track's run: the widest over steps 17+.
std::string hopper_run(const RowSet& set) {
  return widest_kernel_run(set, kFirstHopperStep);
}

// The widest Hopper run among those that measured `step`: a step's own blocks come from a run
// that has it, even when a later run of other steps is wider (step 22's d_head 64 rows stay on
// its page after steps 24-25 were swept at 64 in a run of their own).
std::string hopper_run_with_step(const RowSet& set, int step) {
  std::set<std::string> runs_with_step;
  for (const ResultRow* row : set.rows())
    if (row->step_number() == step && is_usable(*row)) runs_with_step.insert(run_key(*row));
  std::vector<const ResultRow*> rows;
  for (const ResultRow* row : set.rows())
    if (runs_with_step.contains(run_key(*row))) rows.push_back(row);
  return widest_kernel_run(RowSet(rows), kFirstHopperStep);
}

std::string percent_text(std::optional<double> value) {
  return fixed(value, 1, " %");
}

// % of a baseline by time at one N, with the row's 95 % interval when it was measured in
// interleaved rounds ("99.1 % [98.9, 99.3]"); rows from before then have none.
std::string percent_at_n_text(const StepValue* value, Baseline baseline) {
  if (value == nullptr) return percent_text(std::nullopt);
  std::string text = percent_text(value->percent_by(PercentBasis::time));
  if (value->rows.size() != 1 || !value->percent) return text;
  const ResultRow& row = *value->rows.front();
  const auto& [low, high] = baseline == Baseline::fa2
                                ? std::pair{row.pct_fa2_low, row.pct_fa2_high}
                                : std::pair{row.pct_cudnn_low, row.pct_cudnn_high};
  if (low && high) text += " [" + fixed(*low, 1) + ", " + fixed(*high, 1) + "]";
  return text;
}

std::string progression_block(const RowSet& all) {
  const RowSet set(rows_of_run(all, progression_run(all)));
  const std::vector<std::string> dtypes = dtypes_of(set);
  std::string out = "| # | step |";
  std::string rule = "| ---: | --- |";
  const std::string n = std::to_string(kHeadlineSeqLen);
  for (const std::string& dtype : dtypes) {
    out += " " + dtype + " % FA2 @" + n + " by time | by cycles | " + dtype +
           " % FA2 harm. by time | by cycles | " + dtype + " TFLOP/s @" + n + " |";
    rule += " ---: | ---: | ---: | ---: | ---: |";
  }
  out += " seed A100 @4096 | seed A100 harm. | seed 3090 @4096 | seed 3090 harm. |\n";
  rule += " ---: | ---: | ---: | ---: |\n";
  out += rule;

  std::map<std::string, Progression> at_headline, harmonic;
  for (const std::string& dtype : dtypes) {
    at_headline[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
    harmonic[dtype] = build_progression(set, {dtype, std::nullopt, Baseline::fa2});
  }
  const auto percent_of = [](const StepValue* value, PercentBasis basis) {
    return value ? value->percent_by(basis) : std::nullopt;
  };
  // The seed's sixteen steps; the Hopper track has its own table (hopper_block).
  for (int step = configs::kFirstStep; step < kFirstHopperStep; ++step) {
    out += "| " + std::to_string(step) + " | " + std::string(configs::step_info(step).title) + " |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = at_headline[dtype].find_step(step);
      const StepValue* mean = harmonic[dtype].find_step(step);
      out += " " + percent_text(percent_of(now, PercentBasis::time)) + " | " +
             percent_text(percent_of(now, PercentBasis::cycles)) + " | " +
             percent_text(percent_of(mean, PercentBasis::time)) + " | " +
             percent_text(percent_of(mean, PercentBasis::cycles)) + " | " +
             fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " |";
    }
    // The seed published steps 1-16 only.
    if (step - 1 < static_cast<int>(std::size(kSeedResults))) {
      const SeedResult& seed = kSeedResults[step - 1];
      out += " " + fixed(seed.a100_4096, 1, " %") + " | " + fixed(seed.a100_harmonic, 1, " %") +
             " | " + fixed(seed.rtx3090_4096, 1, " %") + " | " +
             fixed(seed.rtx3090_harmonic, 1, " %") + " |\n";
    } else {
      out += " – | – | – | – |\n";
    }
  }
  for (const Baseline baseline : kBaselines) {
    out += "| | " + std::string(baseline_label(baseline)) + " (TFLOP/s) |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = at_headline[dtype].find_baseline(baseline);
      const StepValue* mean = harmonic[dtype].find_baseline(baseline);
      out += " " + fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " | | " +
             fixed(mean ? std::optional<double>(mean->tflops) : std::nullopt, 1) + " | | |";
    }
    out += " | | | |\n";
  }
  return out;
}

// The Hopper track (steps 17–21) from step 16, against both references: TFLOP/s, % FA2 and
// % cuDNN at the headline N by time and by cycles, and % cuDNN as the harmonic mean over every
// measured N, per dtype. Steps and references come from the one run that measured the track.
std::string hopper_block(const RowSet& all) {
  const RowSet set(rows_of_run(all, hopper_run(all)));
  const std::vector<std::string> dtypes = dtypes_of(set);
  std::string out = "| # | step |";
  std::string rule = "| ---: | --- |";
  const std::string n = std::to_string(kHeadlineSeqLen);
  for (const std::string& dtype : dtypes) {
    out +=
        " " + dtype + " TFLOP/s @" + n + " | % FA2 | % cuDNN by time | by cycles | % cuDNN harm. |";
    rule += " ---: | ---: | ---: | ---: | ---: |";
  }
  out += "\n" + rule + "\n";
  const auto percent_of = [](const StepValue* value, PercentBasis basis) {
    return value ? value->percent_by(basis) : std::nullopt;
  };
  std::map<std::string, Progression> fa2_now, cudnn_now, cudnn_mean;
  for (const std::string& dtype : dtypes) {
    fa2_now[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
    cudnn_now[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::cudnn});
    cudnn_mean[dtype] = build_progression(set, {dtype, std::nullopt, Baseline::cudnn});
  }
  for (int step = kFirstHopperStep - 1; step <= configs::kLastStep; ++step) {
    out += "| " + std::to_string(step) + " | " + std::string(configs::step_info(step).title) + " |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = fa2_now[dtype].find_step(step);
      const StepValue* versus_cudnn = cudnn_now[dtype].find_step(step);
      const StepValue* mean = cudnn_mean[dtype].find_step(step);
      out += " " + fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " | " +
             percent_text(percent_of(now, PercentBasis::time)) + " | " +
             percent_text(percent_of(versus_cudnn, PercentBasis::time)) + " | " +
             percent_text(percent_of(versus_cudnn, PercentBasis::cycles)) + " | " +
             percent_text(percent_of(mean, PercentBasis::time)) + " |";
    }
    out += "\n";
  }
  return out;
}

// A Hopper step at every N of the widest run that has it: the fastest config there, its TFLOP/s and
// % FA2 and % cuDNN by time (with the 95 % interval of rows measured in interleaved rounds) and by
// cycles — where a harmonic mean hides a weak N, this shows it.
std::string per_n_block(const RowSet& all, int step) {
  const RowSet set(rows_of_run(all, hopper_run_with_step(all, step)));
  std::string out =
      "| dtype | N | fastest config | TFLOP/s | % FA2 | % cuDNN by time | % cuDNN by cycles |\n"
      "| --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
  bool any = false;
  for (const std::string& dtype : dtypes_of(set))
    for (const int seq_len : set.seq_lens(dtype)) {
      const Progression fa2 = build_progression(set, {dtype, seq_len, Baseline::fa2});
      const Progression cudnn = build_progression(set, {dtype, seq_len, Baseline::cudnn});
      const StepValue* versus_fa2 = fa2.find_step(step);
      const StepValue* versus_cudnn = cudnn.find_step(step);
      if (!versus_fa2 || versus_fa2->rows.empty()) continue;
      any = true;
      out += "| " + dtype + " | " + std::to_string(seq_len) + " | `" + versus_fa2->config_text() +
             "` | " + fixed(versus_fa2->tflops, 1) + " | " +
             percent_at_n_text(versus_fa2, Baseline::fa2) + " | " +
             percent_at_n_text(versus_cudnn, Baseline::cudnn) + " | " +
             percent_text(versus_cudnn ? versus_cudnn->percent_by(PercentBasis::cycles)
                                       : std::nullopt) +
             " |\n";
    }
  return any ? out : "";
}

// Every head dimension side by side: at each (d_head, dtype, N) the fastest numbered step of the
// Hopper track's run at that d_head (its own rows only: references and kernels of one d_head),
// with % FA2 and % cuDNN by time and by cycles. Empty when the rows hold one d_head only.
std::string d_heads_block(const std::vector<const ResultRow*>& rows) {
  std::map<int, std::vector<const ResultRow*>> by_d_head;
  for (const ResultRow* row : rows)
    if (!row->is_ceiling()) by_d_head[row->problem.d_head].push_back(row);
  if (by_d_head.size() < 2) return "";
  std::string out =
      "| d_head | dtype | N | fastest step | config | TFLOP/s | % FA2 | % cuDNN by time | % cuDNN "
      "by cycles |\n"
      "| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [d_head, head_rows] : by_d_head) {
    const RowSet all(head_rows);
    const std::string run = hopper_run(all);
    if (run.empty()) continue;
    const RowSet set(rows_of_run(all, run));
    for (const std::string& dtype : dtypes_of(set))
      for (const int seq_len : set.seq_lens(dtype)) {
        const Progression fa2 = build_progression(set, {dtype, seq_len, Baseline::fa2});
        const Progression cudnn = build_progression(set, {dtype, seq_len, Baseline::cudnn});
        const StepValue* best = nullptr;
        for (const StepValue& value : fa2.steps)
          if (!value.rows.empty() && (!best || value.tflops > best->tflops)) best = &value;
        if (!best) continue;
        const StepValue* versus_cudnn = cudnn.find_step(*best->subject.step());
        out += "| " + std::to_string(d_head) + " | " + dtype + " | " + std::to_string(seq_len) +
               " | " + best->subject.text() + " | `" + best->config_text() + "` | " +
               fixed(best->tflops, 1) + " | " + percent_text(best->percent_by(PercentBasis::time)) +
               " | " +
               percent_text(versus_cudnn ? versus_cudnn->percent_by(PercentBasis::time)
                                         : std::nullopt) +
               " | " +
               percent_text(versus_cudnn ? versus_cudnn->percent_by(PercentBasis::cycles)
                                         : std::nullopt) +
               " |\n";
      }
  }
  return out;
}

// The share of a launch's cycles the SMs had work, on average: SM-active cycles (an extra CUPTI
// metric, present when the sweep asked for it) over the elapsed cycles of the slowest SM. A tail
// of idle SMs (a partial last wave, or CTAs that finish at different times) lowers it.
constexpr std::string_view kSmActiveMetric = "sm__cycles_active.avg";

std::optional<double> sm_active_percent(const ResultRow& row) {
  const auto active = row.extra_metrics.find(std::string(kSmActiveMetric));
  if (active == row.extra_metrics.end() || !row.cycles || *row.cycles <= 0) return std::nullopt;
  return 100.0 * active->second / *row.cycles;
}

// How evenly the SMs were busy: the mean SM-active cycles over the busiest SM's
// (sm__cycles_active.avg / .max, both extra metrics). 100 % when every SM worked equally long;
// CTAs of unequal work (the causal triangle under a round robin) lower it.
constexpr std::string_view kSmActiveMaxMetric = "sm__cycles_active.max";

std::optional<double> sm_balance_percent(const ResultRow& row) {
  const auto mean = row.extra_metrics.find(std::string(kSmActiveMetric));
  const auto most = row.extra_metrics.find(std::string(kSmActiveMaxMetric));
  if (mean == row.extra_metrics.end() || most == row.extra_metrics.end() || most->second <= 0)
    return std::nullopt;
  return 100.0 * mean->second / most->second;
}

std::optional<double> tensor_pipe_percent(const ResultRow& row) {
  const auto pipe = row.extra_metrics.find(std::string(kTensorPipeMetric));
  if (pipe == row.extra_metrics.end()) return std::nullopt;
  return pipe->second;
}

// Whether two rows' times differ beyond both 95 % intervals of the median (docs/profiling.md,
// "Significance"): "yes", "no" (they overlap: the difference is noise) or "–" (a row from
// before the interleaved timing has no interval).
std::string significance_text(const ResultRow& before, const ResultRow& after) {
  const Significance significance = significance_of(before, after);
  if (significance == Significance::no_interval) return "–";
  return significance == Significance::within_noise ? "no" : "yes";
}

// A step against the step before it at every N, from the run that measured the Hopper track:
// each one's fastest config, its TFLOP/s, the ratio, where the time went (tensor-pipe activity,
// SM-active share), and whether the difference is beyond both rows' intervals. Empty when the run
// lacks either step.
std::string versus_previous_block(const RowSet& all, int step) {
  const RowSet set(rows_of_run(all, hopper_run_with_step(all, step)));
  const auto optional_percent = [](std::optional<double> value) {
    return value ? fixed(*value, 1, " %") : std::string("–");
  };
  // The SM balance column appears when the run measured the busiest SM's active cycles.
  bool with_balance = false;
  for (const ResultRow* row : set.rows())
    with_balance = with_balance || row->extra_metrics.contains(std::string(kSmActiveMaxMetric));
  std::string out = "| dtype | N | step " + std::to_string(step - 1) + " TFLOP/s | step " +
                    std::to_string(step) + " TFLOP/s | step " + std::to_string(step) + " / step " +
                    std::to_string(step - 1) + " | tensor pipe active | SM-active share | " +
                    (with_balance ? "SM balance | " : "") + "beyond the intervals | step " +
                    std::to_string(step) +
                    " config |\n| --- | ---: | ---: | ---: | ---: | ---: | " + "---: | " +
                    (with_balance ? "---: | " : "") + "--- | --- |\n";
  bool any = false;
  for (const std::string& dtype : dtypes_of(set))
    for (const int seq_len : set.seq_lens(dtype)) {
      const Progression progression = build_progression(set, {dtype, seq_len, Baseline::fa2});
      const StepValue* previous = progression.find_step(step - 1);
      const StepValue* current = progression.find_step(step);
      if (!previous || !current || previous->rows.empty() || current->rows.empty()) continue;
      any = true;
      const ResultRow& before = *previous->rows.front();
      const ResultRow& after = *current->rows.front();
      out += "| " + dtype + " | " + std::to_string(seq_len) + " | " + fixed(previous->tflops, 1) +
             " | " + fixed(current->tflops, 1) + " | " +
             fixed(100.0 * current->tflops / previous->tflops, 1, " %") + " | " +
             optional_percent(tensor_pipe_percent(before)) + " → " +
             optional_percent(tensor_pipe_percent(after)) + " | " +
             optional_percent(sm_active_percent(before)) + " → " +
             optional_percent(sm_active_percent(after)) + " | " +
             (with_balance ? optional_percent(sm_balance_percent(before)) + " → " +
                                 optional_percent(sm_balance_percent(after)) + " | "
                           : std::string()) +
             significance_text(before, after) + " | `" + current->config_text() + "` |\n";
    }
  return any ? out : "";
}

// What the Hopper track's fastest configs at the headline N do with the tensor cores, from the
// run that measured the track: tensor-pipe activity (an extra CUPTI metric, present when the sweep
// asked for it), SM clock and cycles, beside FA2 and cuDNN. Empty when the run has no
// tensor-pipe column.
std::string tensor_pipe_block(const RowSet& all) {
  const RowSet set(rows_of_run(all, hopper_run(all)));
  bool any = false;
  std::string out =
      "| # | step or reference | dtype | config | TFLOP/s | tensor pipe active | SM clock "
      "(MHz) | cycles (M) |\n| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const std::string& dtype : dtypes_of(set)) {
    const Progression progression = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
    const auto line = [&](const StepValue& value, const std::string& number,
                          const std::string& name) {
      if (value.rows.empty()) return;
      const ResultRow& row = *value.rows.front();
      const auto pipe = row.extra_metrics.find(std::string(kTensorPipeMetric));
      if (pipe == row.extra_metrics.end()) return;
      any = true;
      out +=
          "| " + number + " | " + name + " | " + dtype + " | " + config_cell(row) + " | " +
          fixed(row.tflops, 1) + " | " + fixed(pipe->second, 1, " %") + " | " +
          fixed(row.sm_clock_mhz > 0 ? std::optional<double>(row.sm_clock_mhz) : std::nullopt, 0) +
          " | " + fixed(row.cycles ? std::optional<double>(*row.cycles / 1e6) : std::nullopt, 2) +
          " |\n";
    };
    for (const StepValue& value : progression.steps) {
      const int step = *value.subject.step();
      if (step >= kFirstHopperStep - 1) line(value, value.subject.text(), title_or_unknown(step));
    }
    for (const StepValue& value : progression.baselines)
      line(value, "", value.subject.label());
  }
  return any ? out : "";
}

// One run's roofline numbers at the headline N (ceilings_block): `steps` of `set` (the rows of
// that run) and its references, each against the ceiling of its instruction family.
std::string roofline_table(const Ceilings& ceilings, const RowSet& set,
                           const std::vector<int>& steps) {
  std::string out;
  const std::vector<std::string> dtypes = dtypes_of(set);
  const std::string n = std::to_string(kHeadlineSeqLen);
  // The softmax's share of the MUFU ceiling, where `explorer peak` measured it on this device.
  const bool with_ex2 = ceilings.find_rate(set.rows().front()->device, "ex2.f32") != nullptr;
  // The shared-memory data stage's share of the smem.read ceiling, where the run counted its
  // wavefronts (smem_share_percent).
  bool with_smem = false;
  for (const ResultRow* row : set.rows())
    with_smem = with_smem || smem_share_percent(ceilings, *row).has_value();
  out += "At N = " + n + " (run " + run_label(*set.rows().front()) +
         "; FLOP per DRAM byte = 4·B·H·N²·d / (DRAM bytes read + written)):\n\n| # | step |";
  std::string rule = "| ---: | --- |";
  for (const std::string& dtype : dtypes) {
    out += " " + dtype + " TFLOP/s | % of ceiling |" + (with_ex2 ? " % of ex2 |" : "") +
           (with_smem ? " % of SMEM |" : "") + " FLOP/byte |";
    rule += std::string(" ---: | ---: |") + (with_ex2 ? " ---: |" : "") +
            (with_smem ? " ---: |" : "") + " ---: |";
  }
  out += "\n" + rule + "\n";
  std::map<std::string, Progression> progressions;
  for (const std::string& dtype : dtypes)
    progressions[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
  const auto cells = [&](const StepValue* value, std::optional<InstructionFamily> family) {
    if (value == nullptr || value->rows.empty())
      return std::string(" – | – |") + (with_ex2 ? " – |" : "") + (with_smem ? " – |" : "") +
             " – |";
    const ResultRow& row = *value->rows.front();
    const auto share = share_of_ceiling(ceilings, row, family);
    const std::string ex2 =
        with_ex2 ? " " + fixed(ex2_share_percent(ceilings, row, row.tflops), 1, " %") + " |" : "";
    const std::string smem =
        with_smem ? " " + fixed(smem_share_percent(ceilings, row), 1, " %") + " |" : "";
    return " " + fixed(row.tflops, 1) + " | " +
           (share
                ? fixed(share->percent, 1, " % ") + std::string(family_name(share->ceiling->family))
                : std::string("–")) +
           " |" + ex2 + smem + " " + fixed(arithmetic_intensity(row), 0) + " |";
  };
  for (const int step : steps) {
    const InstructionFamily family =
        step >= kFirstHopperStep ? InstructionFamily::wgmma : InstructionFamily::mma_sync;
    out += "| " + std::to_string(step) + " | " + title_or_unknown(step) + " |";
    for (const std::string& dtype : dtypes)
      out += cells(progressions[dtype].find_step(step), family);
    out += "\n";
  }
  for (const Baseline baseline : kBaselines) {
    out += "| | " + std::string(baseline_label(baseline)) + " |";
    for (const std::string& dtype : dtypes)
      out += cells(progressions[dtype].find_baseline(baseline), std::nullopt);
    out += "\n";
  }
  return out;
}

// The device's ceilings (`explorer peak` rows), then the roofline's numbers at the headline N:
// every step's and reference's TFLOP/s as a share of the ceiling of its instruction family and
// its arithmetic intensity, from the runs that measured DRAM bytes there (one table per run: the
// widest first, then one for the steps it lacks). Steps 1-16 issue
// mma.sync and steps 17+ wgmma (results/<gpu>/sass shows HMMA.16816 and HGMMA); FA2 counts
// against mma.sync and cuDNN against the highest ceiling, as in the progression view
// (share_of_ceiling). Where the device's ex2.f32 ceiling was measured, each row's softmax share
// of it too (ex2_share_percent). Empty without ceiling rows.
std::string ceilings_block(const RowSet& all) {
  const Ceilings ceilings(all.ceiling_rows());
  if (ceilings.empty()) return "";
  std::string out =
      "| ceiling | dtype | measured | SM clock (MHz) | run |\n| --- | --- | ---: | ---: | --- |\n";
  for (const ComputeCeiling& ceiling : ceilings.compute())
    out += "| " + std::string(family_name(ceiling.family)) + " | " + ceiling.dtype + " | " +
           fixed(ceiling.tflops, 1, " TFLOP/s") + " | " + fixed(ceiling.row->sm_clock_mhz, 0) +
           " | " + run_label(*ceiling.row) + " |\n";
  for (const MemoryCeiling& ceiling : ceilings.memory())
    out += "| " + ceiling.name + " | – | " + fixed(ceiling.gbytes_per_s, 0, " GB/s") + " | " +
           fixed(ceiling.row->sm_clock_mhz, 0) + " | " + run_label(*ceiling.row) + " |\n";
  for (const RateCeiling& ceiling : ceilings.rates())
    out += "| " + ceiling.name + " | – | " + fixed(ceiling.tera_per_s * 1000, 0, " G/s") + " | " +
           fixed(ceiling.row->sm_clock_mhz, 0) + " | " + run_label(*ceiling.row) + " |\n";

  // The widest run with DRAM counts at the headline N first; then, for the steps it lacks (a
  // step added after it was measured), the widest run among the others that has them, in a
  // table of its own: every table reads one run, as the views never mix runs in one table.
  std::set<int> shown;
  const auto placed_new_step = [&](const ResultRow& row) {
    const auto step = row.step_number();
    return row.problem.seq_len == kHeadlineSeqLen && arithmetic_intensity(row).has_value() &&
           step && !shown.contains(*step);
  };
  for (std::string run = widest_run(all, placed_new_step); !run.empty();
       run = widest_run(all, placed_new_step)) {
    const RowSet set(rows_of_run(all, run));
    std::vector<int> steps;
    for (const int step : set.steps())
      if (!shown.contains(step)) steps.push_back(step);
    out += std::string(shown.empty() ? "\n" : "\nSteps the runs above lack, from another run. ") +
           roofline_table(ceilings, set, steps);
    shown.insert(steps.begin(), steps.end());
  }
  return out;
}

// Per run and N, each reference's TFLOP/s (its first pass, as kernel rows are paired with it) and
// cuDNN against FA2 by time and by cycles.
std::string references_block(const RowSet& set) {
  const std::vector<std::string> dtypes = dtypes_of(set);
  std::string out = "| run | N | batch |";
  std::string rule = "| --- | ---: | ---: |";
  for (const std::string& dtype : dtypes) {
    for (const Baseline baseline : kBaselines)
      out += " " + std::string(baseline_label(baseline)) + " " + dtype + " |";
    out += " cuDNN ÷ FA2 " + dtype + ", time / cycles |";
    rule += " ---: | ---: | ---: |";
  }
  out += "\n" + rule + "\n";
  std::map<std::string, std::map<int, std::map<std::pair<std::string, Baseline>, const ResultRow*>>>
      by_run;  // run label -> N -> (dtype, reference) -> row
  for (const ResultRow* row : set.rows()) {
    const auto baseline = row->subject.which_baseline();
    if (!baseline || !is_usable(*row)) continue;
    // The block's columns are the 16-bit dtypes: a run that measured references in e4m3 only
    // (cuDNN's FP8 attention) has no cell here, and no line of dashes.
    if (std::find(dtypes.begin(), dtypes.end(), dtype_text(*row)) == dtypes.end()) continue;
    const ResultRow* paired = set.baseline_for(*row, *baseline);
    if (paired == row)
      by_run[run_label(*row)][row->problem.seq_len][{dtype_text(*row), *baseline}] = row;
  }
  const auto ratio = [](std::optional<double> value) {
    if (!value) return std::string("–");
    char text[32];
    std::snprintf(text, sizeof text, "%.2f×", *value);
    return std::string(text);
  };
  for (const auto& [run, by_n] : by_run)
    for (const auto& [seq_len, cells] : by_n) {
      std::optional<int> batch;
      std::string line;
      for (const std::string& dtype : dtypes) {
        const auto row_of = [&](Baseline baseline) -> const ResultRow* {
          const auto found = cells.find({dtype, baseline});
          return found == cells.end() ? nullptr : found->second;
        };
        for (const Baseline baseline : kBaselines) {
          const ResultRow* row = row_of(baseline);
          if (row) batch = row->problem.batch;
          line += " " + fixed(row ? std::optional<double>(row->tflops) : std::nullopt, 1) + " |";
        }
        const ResultRow* fa2 = row_of(Baseline::fa2);
        const ResultRow* cudnn = row_of(Baseline::cudnn);
        std::optional<double> by_time, by_cycles;
        if (fa2 && cudnn) {
          by_time = fa2->median_ms / cudnn->median_ms;
          if (fa2->cycles && cudnn->cycles && *cudnn->cycles > 0)
            by_cycles = *fa2->cycles / *cudnn->cycles;
        }
        line += " " + ratio(by_time) + " / " + ratio(by_cycles) + " |";
      }
      out += "| " + run + " | " + std::to_string(seq_len) + " | " +
             (batch ? std::to_string(*batch) : "–") + " |" + line + "\n";
    }
  return out;
}

// "1694-1739 (median 1710)" over the rows' SM clocks, or "–".
std::string clock_range(std::vector<int> clocks) {
  clocks.erase(std::remove(clocks.begin(), clocks.end(), 0), clocks.end());
  if (clocks.empty()) return "–";
  std::sort(clocks.begin(), clocks.end());
  const std::size_t n = clocks.size();
  const int median = n % 2 ? clocks[n / 2] : (clocks[n / 2 - 1] + clocks[n / 2]) / 2;
  return std::to_string(clocks.front()) + "–" + std::to_string(clocks.back()) + " (median " +
         std::to_string(median) + ")";
}

std::string clock_control(const std::vector<const ResultRow*>& rows) {
  std::set<int> locked;
  bool as_found = false;
  for (const ResultRow* row : rows) {
    if (row->locked_sm_clock_mhz)
      locked.insert(*row->locked_sm_clock_mhz);
    else
      as_found = true;
  }
  std::string text = as_found ? "as found (not locked)" : "";
  for (const int mhz : locked)
    text += (text.empty() ? "" : ", ") + std::string("locked at ") + std::to_string(mhz) + " MHz";
  return text;
}

// Per run: the SM clock each kind of row ran at (measured under its own load).
std::string clocks_block(const RowSet& set) {
  std::map<std::string, std::vector<const ResultRow*>> by_run;
  for (const ResultRow* row : set.rows())
    if (is_usable(*row)) by_run[run_label(*row)].push_back(row);
  std::string out =
      "| run | kernel rows (MHz) | FA2 rows (MHz) | cuDNN rows (MHz) | SM clock |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const auto& [run, rows] : by_run) {
    std::vector<int> kernels, fa2, cudnn;
    for (const ResultRow* row : rows)
      (row->subject.which_baseline() == Baseline::fa2     ? fa2
       : row->subject.which_baseline() == Baseline::cudnn ? cudnn
                                                          : kernels)
          .push_back(row->sm_clock_mhz);
    out += "| " + run + " | " + clock_range(kernels) + " | " + clock_range(fa2) + " | " +
           clock_range(cudnn) + " | " + clock_control(rows) + " |\n";
  }
  return out;
}

// A step's configs against FA2 at N = 4096 in the progression run, three ways: event medians
// (each at the clock its own back-to-back launches ran at), cycles (clock-free), and the profiled
// launches' CUPTI durations.
std::string versus_fa2_block(const RowSet& all, int step) {
  const RowSet set(rows_of_run(all, progression_run(all)));
  std::vector<const ResultRow*> rows;
  for (const ResultRow* row : set.rows())
    if (row->step_number() == step && row->problem.seq_len == kHeadlineSeqLen && is_usable(*row))
      rows.push_back(row);
  if (rows.empty()) return "";
  std::sort(rows.begin(), rows.end(), [&](const ResultRow* a, const ResultRow* b) {
    if (row_dtype(*a) != row_dtype(*b)) return row_dtype(*a) < row_dtype(*b);  // fp16 first
    return a->median_ms < b->median_ms;
  });
  std::string out =
      "| dtype | config | time (ms) | % FA2 by time | % FA2 by cycles | % FA2 by CUPTI duration | "
      "SM clock (MHz) | FA2's SM clock (MHz) |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const ResultRow* row : rows) {
    const ResultRow* fa2 = set.baseline_for(*row, Baseline::fa2);
    std::optional<double> by_duration;
    if (fa2 && fa2->cupti_duration_ms && row->cupti_duration_ms && *row->cupti_duration_ms > 0)
      by_duration = *fa2->cupti_duration_ms / *row->cupti_duration_ms * 100.0;
    out += "| " + dtype_text(*row) + " | " + config_cell(*row) + " | " + fixed(row->median_ms, 3) +
           " | " + percent_text(set.percent_of_baseline(*row, Baseline::fa2, PercentBasis::time)) +
           " | " +
           percent_text(set.percent_of_baseline(*row, Baseline::fa2, PercentBasis::cycles)) +
           " | " + percent_text(by_duration) + " | " +
           (row->sm_clock_mhz > 0 ? std::to_string(row->sm_clock_mhz) : "–") + " | " +
           (fa2 && fa2->sm_clock_mhz > 0 ? std::to_string(fa2->sm_clock_mhz) : "–") + " |\n";
  }
  return out;
}

// How far the references moved between their first pass and the repeat after the kernels.
std::string drift_block(const RowSet& set) {
  const std::vector<BaselineDrift> drifts = baseline_drift(set.rows());
  if (drifts.empty())
    return "No run in the data measured its references twice (the `reference_pass` column, "
           "added after these sweeps), so the drift over a sweep is not known for it.\n";
  const auto percent = [](double change, int decimals) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.*f %%", decimals, 100.0 * change);
    return std::string(text);
  };
  std::string out =
      "| run | reference | dtype | N measured twice | time, repeat vs first | median | cycles, "
      "repeat vs first | SM clock first -> repeat (MHz) |\n"
      "| --- | --- | --- | ---: | --- | ---: | --- | --- |\n";
  for (const BaselineDrift& drift : drifts) {
    const auto range = [](int low, int high) {
      return low == high ? std::to_string(low) : std::to_string(low) + "–" + std::to_string(high);
    };
    out +=
        "| " + drift.run + " | " + std::string(baseline_key(drift.baseline)) + " | " +
        std::string(dtype_lower_name(drift.dtype)) + " | " + std::to_string(drift.points.size()) +
        " | " + percent(drift.time_min, 1) + " .. " + percent(drift.time_max, 1) + " | " +
        percent(drift.time_median, 1) + " | " +
        (drift.cycles_min ? percent(*drift.cycles_min, 2) + " .. " + percent(*drift.cycles_max, 2)
                          : std::string("–")) +
        " | " + range(drift.clock_first_min, drift.clock_first_max) + " -> " +
        range(drift.clock_last_min, drift.clock_last_max) + " |\n";
  }
  return out;
}

// Rows whose values fail a sanity check (profiling/results/results.hpp, sanity_warnings).
std::string warnings_block(const RowSet& set) {
  std::string out;
  for (const ResultRow* row : set.rows())
    if (!row->warnings.empty())
      out += "| " + run_label(*row) + " | " + row->subject.label() + " | " + config_cell(*row) +
             " | " + dtype_text(*row) + " | " + std::to_string(row->problem.seq_len) + " | " +
             row->warnings + " |\n";
  if (out.empty()) return "No row carries a warning.\n";
  return "| run | step | config | dtype | N | warning |\n| --- | --- | --- | --- | ---: | --- |\n" +
         out;
}

// The rows of the run that measured most of `step`'s rows: a tune sweep's configs must compete
// with each other, not with the same step's picks measured in another run (another host or
// clock, which moves every time by a percent or so).
std::vector<const ResultRow*> rows_of_main_campaign(const RowSet& set, int step) {
  const std::string run =
      busiest_run(set, [&](const ResultRow& row) { return row.step_number() == step; });
  if (run.empty()) return {};
  return rows_of_run(set, run);
}

std::string autotune_block(const RowSet& all, int step) {
  const RowSet set(rows_of_main_campaign(all, step));
  const AutotuneModel model = build_autotune_model(set, {step, "", std::nullopt});
  std::map<std::pair<std::optional<DType>, int>, int> configs_measured;
  for (const AutotunePoint& point : model.points)
    ++configs_measured[{row_dtype(*point.row), point.row->problem.seq_len}];
  std::string out =
      "| dtype | N | configs measured | fastest config | TFLOP/s | % FA2 by time | % FA2 by "
      "cycles | registers |\n"
      "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const ResultRow* row : model.fastest) {
    out +=
        "| " + dtype_text(*row) + " | " + std::to_string(row->problem.seq_len) + " | " +
        std::to_string(configs_measured[{row_dtype(*row), row->problem.seq_len}]) + " | " +
        config_cell(*row) + " | " + fixed(row->tflops, 1) + " | " +
        percent_text(set.percent_of_baseline(*row, Baseline::fa2, PercentBasis::time)) + " | " +
        percent_text(set.percent_of_baseline(*row, Baseline::fa2, PercentBasis::cycles)) + " | " +
        fixed(row->registers ? std::optional<double>(*row->registers) : std::nullopt, 0) + " |\n";
  }
  return out;
}

std::string step_block(const RowSet& all, int step) {
  // The progression run when it measured this step, else the run that measured most of it.
  std::string run = progression_run(all);
  const RowSet main(rows_of_run(all, run));
  if (std::find(main.steps().begin(), main.steps().end(), step) == main.steps().end())
    run = busiest_run(all, [&](const ResultRow& row) { return row.step_number() == step; });
  const RowSet set(rows_of_run(all, run));
  std::string out =
      "| dtype | config (fastest at N = 4096) | time (ms) | TFLOP/s | % FA2 by time | % FA2 by "
      "cycles | registers | spill (local bytes) | L2 hit | cycles (M) | SM clock (MHz) | "
      "TFLOP/s vs previous step |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  bool any = false;
  for (const std::string& dtype : dtypes_of(set)) {
    const Progression progression = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
    const StepChange change = change_from_previous_step(progression, step, set, Baseline::fa2);
    if (!change.current || change.current->rows.empty()) continue;
    any = true;
    const ResultRow& row = *change.current->rows.front();
    std::optional<double> tflops_change;
    for (const MetricChange& metric : change.changes)
      if (metric.field == Field::tflops && step > 1) tflops_change = metric.relative_change();
    out += "| " + dtype + " | " + config_cell(row) + " | " + fixed(row.median_ms, 3) + " | " +
           fixed(row.tflops, 1) + " | " + percent_text(change.current->percent) + " | " +
           percent_text(change.current->percent_cycles) + " | " +
           fixed(row.registers ? std::optional<double>(*row.registers) : std::nullopt, 0) + " | " +
           fixed(row.local_bytes ? std::optional<double>(*row.local_bytes) : std::nullopt, 0) +
           " | " + fixed(row.l2_hit_pct, 1, " %") +
           (row.warnings.find("l2_hit_pct") != std::string::npos ? " (!)" : "") + " | " +
           fixed(row.cycles ? std::optional<double>(*row.cycles / 1e6) : std::nullopt, 2) + " | " +
           (row.sm_clock_mhz > 0 ? std::to_string(row.sm_clock_mhz) : "–") + " | " +
           signed_percent(tflops_change) + " |\n";
  }
  return any ? out : "";
}

// % of a baseline by time with the row's 95 % interval when the sweep paired them in interleaved
// rounds ("99.1 % [98.9, 99.3]"), else by medians.
std::string percent_of_baseline_text(const RowSet& set, const ResultRow& row, Baseline baseline) {
  std::string text = percent_text(set.percent_of_baseline(row, baseline));
  const auto& [low, high] = baseline == Baseline::fa2
                                ? std::pair{row.pct_fa2_low, row.pct_fa2_high}
                                : std::pair{row.pct_cudnn_low, row.pct_cudnn_high};
  if (low && high) text += " [" + fixed(*low, 1) + ", " + fixed(*high, 1) + "]";
  return text;
}

// The harmonic mean of percentages (the bars' "harmonic mean over N"), or none when any is missing.
std::optional<double> harmonic_mean(const std::vector<std::optional<double>>& values) {
  if (values.empty()) return std::nullopt;
  double reciprocal_sum = 0;
  for (const std::optional<double>& value : values) {
    if (!value || *value <= 0) return std::nullopt;
    reciprocal_sum += 1.0 / *value;
  }
  return static_cast<double>(values.size()) / reciprocal_sum;
}

// A backward step's block (docs/versions/B1.md, ...): at d_head 128, per dtype and mask, its
// fastest row at every N of the run that compared it with a baseline most (else of the run that
// measured it most), with % of FA2's and cuDNN's backward
// of that run (a backward row is paired with the backward baselines only), and the harmonic mean
// over those N where every N has the baseline. Until a sweep has measured the step, the block says
// so and how to measure it.
std::string backward_step_block(const RowSet& all, int step) {
  const auto wanted = [step](const ResultRow& row) {
    return row.step_number() == step && row.problem.pass == Pass::backward &&
           row.problem.d_head == 128;
  };
  // The run that compared the step with a baseline most, else the one that measured it most.
  std::string run = busiest_run(all, [&wanted](const ResultRow& row) {
    return wanted(row) && (row.pct_fa2 || row.pct_cudnn);
  });
  if (run.empty()) run = busiest_run(all, wanted);
  if (run.empty())
    return "No sweep rows of step " + step_name(step) + " in the shipped dataset yet: `explorer " +
           "--csv --pass backward --steps " + std::to_string(step) +
           "` measures it beside FA2's and cuDNN's backward (docs/profiling.md, \"The pass axis\")."
           "\n";
  const RowSet set(rows_of_run(all, run));
  // (dtype, causal) -> N -> the fastest usable row
  std::map<std::pair<std::string, bool>, std::map<int, const ResultRow*>> fastest;
  for (const ResultRow* row : set.rows()) {
    if (!is_usable(*row) || !wanted(*row)) continue;
    const ResultRow*& best = fastest[{std::string(dtype_lower_name(row->problem.dtype)),
                                      row->problem.causal}][row->problem.seq_len];
    if (best == nullptr || row->median_ms < best->median_ms) best = row;
  }
  std::string out =
      "| dtype | mask | N | config | time (ms) | TFLOP/s | % FA2 backward [95 % CI] | % cuDNN "
      "backward [95 % CI] |\n| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [workload, by_n] : fastest) {
    const auto& [dtype, causal] = workload;
    const std::string mask = causal ? "causal" : "none";
    std::vector<std::optional<double>> of_fa2, of_cudnn;
    for (const auto& [n, row] : by_n) {
      of_fa2.push_back(set.percent_of_baseline(*row, Baseline::fa2));
      of_cudnn.push_back(set.percent_of_baseline(*row, Baseline::cudnn));
      out += "| " + dtype + " | " + mask + " | " + std::to_string(n) + " | " + config_cell(*row) +
             " | " + fixed(row->median_ms, 3) + " | " + fixed(row->tflops, 1) + " | " +
             percent_of_baseline_text(set, *row, Baseline::fa2) + " | " +
             percent_of_baseline_text(set, *row, Baseline::cudnn) + " |\n";
    }
    if (by_n.size() > 1)
      out += "| " + dtype + " | " + mask + " | harmonic mean over N | | | | " +
             percent_text(harmonic_mean(of_fa2)) + " | " + percent_text(harmonic_mean(of_cudnn)) +
             " |\n";
  }
  return out;
}

std::string time_change_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * (ratio - 1));
  return text;
}

// The spread of one run's tune configs of a step, per dtype and N: how many lie within 1 % of
// the fastest, how far the slowest is, each block shape's best and the recorded picks, all as
// time relative to the fastest config (+3.0 % = 3 % slower).
std::string autotune_summary_block(const RowSet& all, int step) {
  const RowSet set(rows_of_main_campaign(all, step));
  const AutotuneModel model = build_autotune_model(set, {step, "", std::nullopt});
  if (model.fastest.empty()) return "";
  const configs::StepPicks picks = configs::step_picks(step);
  const std::optional<KernelConfig> seed_pick =
      picks.seed_a100 ? picks.seed_a100 : picks.progression;
  std::string out = "| dtype | N | configs | within 1 % of the fastest | slowest |";
  std::string rule = "| --- | ---: | ---: | ---: | ---: |";
  for (const BlockShape& shape : model.shapes) {
    out += " best " + block_shape_label(shape) + " |";
    rule += " ---: |";
  }
  out += " seed's pick | Hopper pick |\n" + rule + " ---: | ---: |\n";
  for (const ResultRow* fastest : model.fastest) {
    std::vector<const AutotunePoint*> points;
    for (const AutotunePoint& point : model.points)
      if (row_dtype(*point.row) == row_dtype(*fastest) &&
          point.row->problem.seq_len == fastest->problem.seq_len && is_usable(*point.row))
        points.push_back(&point);
    int within = 0;
    double slowest = 0;
    std::map<BlockShape, double> best_by_shape;  // median ms
    std::optional<double> seed_ms, hopper_ms;
    for (const AutotunePoint* point : points) {
      const double ms = point->row->median_ms;
      if (ms <= fastest->median_ms * 1.01) ++within;
      slowest = std::max(slowest, ms);
      if (point->shape) {
        auto [slot, inserted] = best_by_shape.try_emplace(*point->shape, ms);
        if (!inserted) slot->second = std::min(slot->second, ms);
      }
      const KernelConfig& config = *point->row->config;
      const auto is_pick = [&](const std::optional<KernelConfig>& pick) {
        return pick && configs::with_dtype(*pick, config.dtype) == config;
      };
      if (is_pick(seed_pick)) seed_ms = ms;
      if (is_pick(picks.hopper)) hopper_ms = ms;
    }
    const auto relative = [&](std::optional<double> ms) {
      return ms ? time_change_text(*ms / fastest->median_ms) : std::string("–");
    };
    out += "| " + dtype_text(*fastest) + " | " + std::to_string(fastest->problem.seq_len) + " | " +
           std::to_string(points.size()) + " | " + std::to_string(within) + " | " +
           relative(slowest) + " |";
    for (const BlockShape& shape : model.shapes) {
      const auto found = best_by_shape.find(shape);
      out += " " +
             relative(found == best_by_shape.end() ? std::nullopt
                                                   : std::optional<double>(found->second)) +
             " |";
    }
    out += " " + relative(seed_ms) + " | " + relative(hopper_ms) + " |\n";
  }
  return out;
}

// Rows two runs both measured (same step, config, dtype and shape): how much slower or faster
// the later run (by label) was. Two hosts of one model differ by a percent or so, which is why
// tables compare within one run.
std::string run_comparison_block(const RowSet& set) {
  using Item =
      std::tuple<RowSubject, std::optional<KernelConfig>, std::optional<DType>, int, int, int>;
  std::map<std::string, std::map<Item, const ResultRow*>> by_run;
  for (const ResultRow* row : set.rows()) {
    if (!is_usable(*row) || row->reference_pass.value_or(1) != 1) continue;
    const ResultRow*& slot =
        by_run[run_label(*row)][{row->subject, row->config, row_dtype(*row), row->problem.batch,
                                 row->problem.heads, row->problem.seq_len}];
    if (!slot || row->median_ms < slot->median_ms) slot = row;
  }
  std::string out;
  for (auto a = by_run.begin(); a != by_run.end(); ++a)
    for (auto b = std::next(a); b != by_run.end(); ++b) {
      std::vector<double> all, baselines;
      for (const auto& [item, row_a] : a->second) {
        const auto found = b->second.find(item);
        if (found == b->second.end()) continue;
        const double ratio = found->second->median_ms / row_a->median_ms;
        all.push_back(ratio);
        if (row_a->is_baseline_or_ceiling()) baselines.push_back(ratio);
      }
      if (all.empty()) continue;
      std::sort(all.begin(), all.end());
      std::sort(baselines.begin(), baselines.end());
      const std::size_t n = all.size();
      const double median = n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2;
      out += "| " + a->first + " | " + b->first + " | " + std::to_string(n) + " | " +
             time_change_text(median) + " | " + time_change_text(all.front()) + " .. " +
             time_change_text(all.back()) + " | " +
             (baselines.empty() ? std::string("–")
                                : time_change_text(baselines.front()) + " .. " +
                                      time_change_text(baselines.back())) +
             " |\n";
    }
  if (out.empty()) return "No two runs in the data measured the same item.\n";
  return "| run A | run B | items both measured | B's time vs A's, median | range | references' "
         "range |\n| --- | --- | ---: | ---: | --- | --- |\n" +
         out;
}

// Readable names of the counters scripts/gpu_host.sh's counters stage collects.
std::string counter_label(const std::string& metric) {
  static const std::map<std::string, std::string> kLabels = {
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "shared-load bank conflicts"},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared-load wavefronts"},
      {"smsp__inst_executed.sum", "instructions executed (warp level)"},
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
       "tensor pipe active (% of active cycles)"},
      {"smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
       "stalled on short scoreboard (% of active warp cycles)"},
      {"smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
       "stalled on long scoreboard (% of active warp cycles)"},
      {"smsp__warp_issue_stalled_wait_per_warp_active.pct",
       "stalled on a fixed wait (% of active warp cycles)"},
      {"l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "local-memory load bytes"},
      {"l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", "local-memory store bytes"},
      {"smsp__average_warp_latency_per_inst_issued.ratio", "warp cycles per issued instruction"},
  };
  const auto found = kLabels.find(metric);
  return found == kLabels.end() ? "`" + metric + "`" : found->second + " (`" + metric + "`)";
}

std::string counter_value(double value) {
  char text[48];
  if (std::fabs(value) >= 1000)
    std::snprintf(text, sizeof text, "%.3g", value);
  else
    std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// A step's extra hardware counters (metric:<name> columns) against the step before it, at
// N = 4096, from the run that collected the most rows with such counters (a counters sweep).
std::string counters_block(const RowSet& all, int step) {
  const std::string run = busiest_run(all, [](const ResultRow& row) {
    return !row.is_baseline_or_ceiling() && !row.extra_metrics.empty();
  });
  if (run.empty()) return "";
  const RowSet set(rows_of_run(all, run));
  std::string out;
  for (const std::string& dtype : dtypes_of(set)) {
    const Progression progression = build_progression(set, {dtype, kHeadlineSeqLen, Baseline::fa2});
    const StepChange change = change_from_previous_step(progression, step, set, Baseline::fa2);
    if (!change.current || change.current->rows.empty()) continue;
    const ResultRow& current = *change.current->rows.front();
    const ResultRow* previous =
        change.previous && !change.previous->rows.empty() ? change.previous->rows.front() : nullptr;
    for (const auto& [metric, value] : current.extra_metrics) {
      std::optional<double> before;
      if (previous)
        if (const auto found = previous->extra_metrics.find(metric);
            found != previous->extra_metrics.end())
          before = found->second;
      std::optional<double> relative;
      if (before && *before != 0) relative = value / *before - 1;
      out += "| " + dtype + " | " + counter_label(metric) + " | " +
             (before ? counter_value(*before) : std::string("–")) + " | " + counter_value(value) +
             " | " + signed_percent(relative) + " |\n";
    }
  }
  if (out.empty()) return "";
  return "| dtype | counter (fastest config at N = 4096) | previous step | step " +
         std::to_string(step) + " | change |\n| --- | --- | ---: | ---: | ---: |\n" + out;
}

std::string dataset_block(const RowSet& set) {
  // Keyed by run (host, device, commit), shown by label: one line per run and device.
  std::map<std::pair<std::string, std::string>, std::vector<const ResultRow*>> by_run;
  for (const ResultRow* row : set.rows())
    by_run[{run_label(*row), run_key(*row)}].push_back(row);
  std::string out =
      "| run (host, commit) | device | rows | SM clock |\n| --- | --- | ---: | --- |\n";
  for (const auto& [run_and_key, rows] : by_run) {
    const std::string& run = run_and_key.first;
    std::set<std::string> devices;
    for (const ResultRow* row : rows)
      devices.insert(row->device);
    std::string device_list;
    for (const std::string& device : devices)
      device_list += (device_list.empty() ? "" : ", ") + device;
    out += "| " + run + " | " + device_list + " | " + std::to_string(rows.size()) + " | " +
           clock_control(rows) + " |\n";
  }
  return out;
}

}  // namespace

namespace {

// "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3": the suffix of a block measured on that device.
std::string device_slug(const std::string& device) {
  std::string slug;
  for (const char ch : device) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-')
    slug.pop_back();
  if (slug.rfind("nvidia-", 0) == 0) slug.erase(0, 7);
  return slug;
}

// The suffix of a workload's block names: a token per workload axis off its plain value, in table
// order ("-d64", "-h32-kv8", "-causal", "-backward"), so the plain workload (d_head 128, 16 heads,
// no grouping, no mask, forward) keeps the names the documents have always used. The dtype is not
// a workload of its own here: a block shows both. `skipped` leaves one axis out (the d-heads
// block compares head dimensions).
std::string workload_suffix(const Problem& workload, std::optional<Axis> skipped = std::nullopt) {
  std::string suffix;
  for (const AxisSpec& spec : problem_axes()) {
    if (!spec.workload || spec.axis == Axis::dtype || spec.axis == skipped) continue;
    std::string token;
    for (const char c : spec.fragment(workload))
      if (c != '=') token += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!token.empty()) suffix += "-" + token;
  }
  return suffix;
}

// The workload a row's blocks go with; a ceiling, which measures no problem, goes with the plain
// one.
Problem report_workload(const ResultRow& row) {
  Problem workload =
      row.is_ceiling() ? multi_head_problem(DType::FP16, 0, 0, 16, 128) : workload_of(row.problem);
  workload.dtype = DType::FP16;
  return workload;
}

// The blocks measured on one device.
std::map<std::string, std::string> device_blocks(const RowSet& set) {
  std::map<std::string, std::string> blocks;
  blocks["progression"] = progression_block(set);
  blocks["references"] = references_block(set);
  blocks["clocks"] = clocks_block(set);
  blocks["drift"] = drift_block(set);
  blocks["warnings"] = warnings_block(set);
  blocks["run-comparison"] = run_comparison_block(set);
  if (std::string block = ceilings_block(set); !block.empty()) blocks["ceilings"] = block;
  if (!hopper_run(set).empty()) {
    blocks["hopper"] = hopper_block(set);
    if (std::string block = tensor_pipe_block(set); !block.empty())
      blocks["hopper-tensor-pipe"] = block;
    for (int step = kFirstHopperStep; step <= configs::kLastStep; ++step) {
      if (std::string block = per_n_block(set, step); !block.empty())
        blocks["per-n-" + std::to_string(step)] = block;
      if (std::string block = versus_previous_block(set, step); !block.empty())
        blocks["vs-previous-" + std::to_string(step)] = block;
    }
  }
  for (const int step : set.steps()) {
    if (is_backward_step_number(step)) continue;  // report_blocks gives theirs
    // No page of this build cites a step it does not have (title_or_unknown says why rows of one
    // may be loaded); its picks and tune set, which these blocks read, are unknown too.
    if (step_title(step).empty()) continue;
    char name[16];
    std::snprintf(name, sizeof name, "step-%02d", step);
    if (std::string block = step_block(set, step); !block.empty()) blocks[name] = block;
    blocks["autotune-" + std::to_string(step)] = autotune_block(set, step);
    if (std::string block = autotune_summary_block(set, step); !block.empty())
      blocks["autotune-summary-" + std::to_string(step)] = block;
    if (std::string block = versus_fa2_block(set, step); !block.empty())
      blocks["vs-fa2-" + std::to_string(step)] = block;
    char counters[24];
    std::snprintf(counters, sizeof counters, "counters-%02d", step);
    if (std::string block = counters_block(set, step); !block.empty()) blocks[counters] = block;
  }
  return blocks;
}

}  // namespace

std::map<std::string, std::string> report_blocks(const RowSet& set) {
  // Every device's blocks carry its suffix ("hopper@h100-80gb-hbm3"); the device with the most
  // rows also gives the unsuffixed names the documents have used since the first dataset.
  std::map<std::string, std::vector<const ResultRow*>> rows_by_device;
  for (const ResultRow* row : set.rows())
    rows_by_device[row->device].push_back(row);
  // The ceilings go with their device's rows (the ceilings block); they never pick the primary.
  std::map<std::string, std::size_t> measured_rows;
  for (const auto& [device, rows] : rows_by_device)
    measured_rows[device] = rows.size();
  for (const ResultRow* row : set.ceiling_rows())
    rows_by_device[row->device].push_back(row);
  std::string primary;
  for (const auto& [device, rows] : rows_by_device)
    if (primary.empty() || measured_rows[device] > measured_rows[primary]) primary = device;
  std::map<std::string, std::string> blocks;
  for (const auto& [device, rows] : rows_by_device) {
    // Two workloads never share a block: the rows of each (the causal ones, a head grouping,
    // another d_head, …: half the FLOP or other references) give every block again with the
    // workload's suffix ("per-n-22-d64@h100-80gb-hbm3", "per-n-23-d64-causal",
    // "progression-h32-kv8-causal").
    std::map<Problem, std::vector<const ResultRow*>> by_workload;
    // The head dimensions side by side: one d-heads block per workload but for its d_head.
    std::map<std::string, std::vector<const ResultRow*>> across_d_heads;
    for (const ResultRow* row : rows) {
      const Problem workload = report_workload(*row);
      by_workload[workload].push_back(row);
      across_d_heads[workload_suffix(workload, Axis::d_head)].push_back(row);
    }
    for (const auto& [suffix, workload_rows] : across_d_heads)
      if (std::string block = d_heads_block(workload_rows); !block.empty()) {
        blocks["d-heads" + suffix + "@" + device_slug(device)] = block;
        if (device == primary) blocks["d-heads" + suffix] = block;
      }
    for (const auto& [workload, workload_rows] : by_workload) {
      const std::string suffix = workload_suffix(workload);
      for (const auto& [name, text] : device_blocks(RowSet(workload_rows))) {
        blocks[name + suffix + "@" + device_slug(device)] = text;
        if (device == primary) blocks[name + suffix] = text;
      }
    }
  }
  // The backward steps' pages: one block per step the descriptors declare, measured or not, each
  // reading its own workload (backward, d_head 128, no mask) from the run that measured it most,
  // and again per device.
  for (const StepDescriptor& step : configs::backward_step_descriptors()) {
    const std::string name = "step-" + step_name(step.number);
    blocks[name] = backward_step_block(set, step.number);
    for (const auto& [device, rows] : rows_by_device)
      blocks[name + "@" + device_slug(device)] = backward_step_block(RowSet(rows), step.number);
  }
  blocks["dataset"] = dataset_block(set);
  return blocks;
}

BlockUpdate update_blocks(const std::string& document,
                          const std::map<std::string, std::string>& blocks) {
  static const std::string kBegin = "<!-- flashscope:begin ";
  static const std::string kEnd = "<!-- flashscope:end ";
  BlockUpdate update;
  std::size_t position = 0;
  while (true) {
    const std::size_t begin = document.find(kBegin, position);
    if (begin == std::string::npos) break;
    const std::size_t name_end = document.find(" -->", begin);
    if (name_end == std::string::npos)
      throw std::invalid_argument("unterminated begin marker at offset " + std::to_string(begin));
    const std::string name =
        document.substr(begin + kBegin.size(), name_end - begin - kBegin.size());
    const std::size_t content_begin = name_end + 4 + (document[name_end + 4] == '\n' ? 1 : 0);
    const std::string end_marker = kEnd + name + " -->";
    const std::size_t end = document.find(end_marker, content_begin);
    if (end == std::string::npos)
      throw std::invalid_argument("block '" + name + "' has no " + end_marker);
    update.text += document.substr(position, content_begin - position);
    const std::string old_content = document.substr(content_begin, end - content_begin);
    ++update.blocks;
    const auto found = blocks.find(name);
    if (found == blocks.end()) {
      update.unknown.push_back(name);
      update.text += old_content;
    } else {
      if (found->second != old_content) update.changed.push_back(name);
      update.text += found->second;
    }
    position = end;
  }
  update.text += document.substr(position);
  return update;
}

}  // namespace flashscope::explorer
