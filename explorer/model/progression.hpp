// The progression: one value per step for a dtype at one sequence length, or the harmonic mean
// over all measured sequence lengths, with the FA2 and cuDNN levels for the same selection.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "explorer/model/fields.hpp"
#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

struct ProgressionQuery {
  std::string dtype = "fp16";
  std::optional<int> seq_len;  // nullopt: harmonic mean over every N of the dtype
  Baseline baseline = Baseline::fa2;
  bool operator==(const ProgressionQuery&) const = default;
};

// A step's (or a reference's) value for the query.
//
// At one N the step's value is its fastest usable config there: a CSV may hold every auto-tune
// config of a step, and the progression asks what the step can do. For the harmonic mean one
// config must stand for the step (the seed fixed one config per step): the config measured at
// the most N, ties broken by the highest harmonic mean of TFLOP/s.
struct StepValue {
  RowSubject subject;                  // a step's kernel or a baseline
  std::optional<KernelConfig> config;  // none for baselines
  std::string config_text() const { return config ? to_short_form(*config) : std::string(); }
  double tflops = 0;              // at N, or the harmonic mean over `rows`
  std::optional<double> percent;  // of the query's reference by time (harmonic mean of per-N %)
  std::optional<double> percent_cycles;  // the same by cycles (PercentBasis::cycles)
  std::optional<double> percent_by(PercentBasis basis) const {
    return basis == PercentBasis::time ? percent : percent_cycles;
  }
  std::vector<const ResultRow*> rows;  // the row at N, or one per N in ascending N
};

struct Progression {
  std::vector<StepValue> steps;      // numbered steps with data, ascending
  std::vector<StepValue> baselines;  // FA2 / cuDNN levels that have data
  std::vector<int> seq_lens;         // the N the harmonic mean runs over (or the single N)

  const StepValue* find_step(int step) const;
  const StepValue* find_baseline(Baseline baseline) const;
};

Progression build_progression(const RowSet& set, const ProgressionQuery& query);

// What a step changed relative to the step before it that has data (normally step - 1).
struct MetricChange {
  Field field;
  std::optional<double> previous;
  std::optional<double> current;
  std::optional<double> relative_change() const;  // (current - previous) / previous
};

struct StepChange {
  const StepValue* previous = nullptr;  // nullptr for the first step with data
  const StepValue* current = nullptr;   // nullptr when the step has no data
  std::vector<MetricChange> changes;
};

// TFLOP/s and % (by time and by cycles) come from the StepValues; per-row metrics (registers, L2
// hit, cycles, ...) are the row's at one N, or their mean over the StepValue's rows for the
// harmonic mean.
StepChange change_from_previous_step(const Progression& progression, int step, const RowSet& set,
                                     Baseline baseline);

}  // namespace flashscope::explorer
