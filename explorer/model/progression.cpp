#include "explorer/model/progression.hpp"

#include <algorithm>
#include <map>

namespace flashscope::explorer {

namespace {

// Rows of one step (or reference) and dtype that may be aggregated, grouped by config then N;
// each (config, N) keeps one row (stands_before: a reference's first pass, else the fastest).
using RowsByConfigAndN = std::map<std::optional<KernelConfig>, std::map<int, const ResultRow*>>;

std::map<RowSubject, RowsByConfigAndN> group_usable_rows(const RowSet& set,
                                                         const std::string& dtype) {
  std::map<RowSubject, RowsByConfigAndN> by_step;
  for (const ResultRow* row : set.rows()) {
    if (dtype_text(*row) != dtype || !is_usable(*row)) continue;
    const ResultRow*& slot = by_step[row->subject][row->config][row->problem.seq_len];
    if (slot == nullptr || stands_before(*row, *slot)) slot = row;
  }
  return by_step;
}

std::optional<double> percent_harmonic_mean(const RowSet& set,
                                            const std::vector<const ResultRow*>& rows,
                                            Baseline baseline, PercentBasis basis) {
  std::vector<double> percents;
  for (const ResultRow* row : rows) {
    const auto percent = set.percent_of_baseline(*row, baseline, basis);
    if (!percent) return std::nullopt;  // a partial mean would not be comparable
    percents.push_back(*percent);
  }
  return harmonic_mean(percents);
}

std::optional<StepValue> value_at_seq_len(const RowSubject& step, const RowsByConfigAndN& configs,
                                          int seq_len, const RowSet& set, Baseline baseline) {
  const ResultRow* fastest = nullptr;
  for (const auto& [config, by_n] : configs) {
    const auto found = by_n.find(seq_len);
    if (found != by_n.end() && (fastest == nullptr || found->second->tflops > fastest->tflops))
      fastest = found->second;
  }
  if (fastest == nullptr) return std::nullopt;
  return StepValue{step,
                   fastest->config,
                   fastest->tflops,
                   set.percent_of_baseline(*fastest, baseline, PercentBasis::time),
                   set.percent_of_baseline(*fastest, baseline, PercentBasis::cycles),
                   {fastest}};
}

std::optional<StepValue> harmonic_mean_value(const RowSubject& step,
                                             const RowsByConfigAndN& configs, const RowSet& set,
                                             Baseline baseline) {
  std::optional<StepValue> best;
  for (const auto& [config, by_n] : configs) {
    StepValue candidate{step, config, 0, std::nullopt, std::nullopt, {}};
    std::vector<double> tflops;
    for (const auto& [seq_len, row] : by_n) {
      candidate.rows.push_back(row);
      tflops.push_back(row->tflops);
    }
    const auto mean = harmonic_mean(tflops);
    if (!mean) continue;
    candidate.tflops = *mean;
    const bool better = !best || candidate.rows.size() > best->rows.size() ||
                        (candidate.rows.size() == best->rows.size() && *mean > best->tflops);
    if (better) best = std::move(candidate);
  }
  if (best) {
    best->percent = percent_harmonic_mean(set, best->rows, baseline, PercentBasis::time);
    best->percent_cycles = percent_harmonic_mean(set, best->rows, baseline, PercentBasis::cycles);
  }
  return best;
}

std::optional<double> mean_metric(const RowSet& set, const std::vector<const ResultRow*>& rows,
                                  Field field) {
  double sum = 0;
  int count = 0;
  for (const ResultRow* row : rows) {
    if (const auto value = numeric_field(set, *row, field)) {
      sum += *value;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

}  // namespace

const StepValue* Progression::find_step(int step) const {
  for (const StepValue& value : steps)
    if (value.subject.step() == step) return &value;
  return nullptr;
}

const StepValue* Progression::find_baseline(Baseline baseline) const {
  for (const StepValue& value : baselines)
    if (value.subject.which_baseline() == baseline) return &value;
  return nullptr;
}

Progression build_progression(const RowSet& set, const ProgressionQuery& query) {
  Progression progression;
  const auto by_step = group_usable_rows(set, query.dtype);

  if (query.seq_len) {
    progression.seq_lens = {*query.seq_len};
  } else {
    std::vector<int> seq_lens;
    for (const ResultRow* row : set.rows())
      if (dtype_text(*row) == query.dtype && is_usable(*row))
        seq_lens.push_back(row->problem.seq_len);
    std::sort(seq_lens.begin(), seq_lens.end());
    seq_lens.erase(std::unique(seq_lens.begin(), seq_lens.end()), seq_lens.end());
    progression.seq_lens = std::move(seq_lens);
  }

  for (const auto& [step, configs] : by_step) {
    const std::optional<StepValue> value =
        query.seq_len ? value_at_seq_len(step, configs, *query.seq_len, set, query.baseline)
                      : harmonic_mean_value(step, configs, set, query.baseline);
    if (!value) continue;
    // by_step is ordered as the step column: steps ascending, then FA2, cuDNN.
    if (step.is_baseline())
      progression.baselines.push_back(*value);
    else if (step.is_kernel())
      progression.steps.push_back(*value);
  }
  return progression;
}

std::optional<double> MetricChange::relative_change() const {
  if (!previous || !current || *previous == 0) return std::nullopt;
  return (*current - *previous) / *previous;
}

StepChange change_from_previous_step(const Progression& progression, int step, const RowSet& set,
                                     Baseline baseline) {
  StepChange change;
  change.current = progression.find_step(step);
  for (const StepValue& value : progression.steps)
    if (value.subject.step() < step) change.previous = &value;

  auto tflops = [](const StepValue* value) -> std::optional<double> {
    if (!value) return std::nullopt;
    return value->tflops;
  };
  change.changes.push_back({Field::tflops, tflops(change.previous), tflops(change.current)});
  for (const PercentBasis basis : kPercentBases) {
    auto percent = [basis](const StepValue* value) -> std::optional<double> {
      return value ? value->percent_by(basis) : std::nullopt;
    };
    change.changes.push_back(
        {percent_field(baseline, basis), percent(change.previous), percent(change.current)});
  }
  for (Field field :
       {Field::median_ms, Field::registers, Field::smem_bytes, Field::local_bytes,
        Field::l2_hit_pct, Field::cycles, Field::sm_clock_mhz, Field::tensor_pipe_pct}) {
    auto metric = [&](const StepValue* value) -> std::optional<double> {
      return value ? mean_metric(set, value->rows, field) : std::nullopt;
    };
    change.changes.push_back({field, metric(change.previous), metric(change.current)});
  }
  return change;
}

}  // namespace flashscope::explorer
