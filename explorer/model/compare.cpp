#include "explorer/model/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "explorer/model/row_set.hpp"
#include "profiling/measurement/statistics.hpp"

namespace flashscope::explorer {

namespace {

// A reference measured twice at a shape (before and after the kernels) is two measurements;
// a file from before the passes existed has pass 1 only.
// The problem is part of the key: a causal row is compared with the causal row of the other file
// only, a grouped one with the grouped one.
using MeasurementKey = std::tuple<RowSubject, std::optional<KernelConfig>, Problem, int>;

MeasurementKey key_of(const ResultRow& row) {
  const int pass = row.is_baseline_or_ceiling() ? row.reference_pass.value_or(1) : 0;
  return {row.subject, row.config, row.problem, pass};
}

int sign(std::partial_ordering order) {
  return order < 0 ? -1 : (order > 0 ? 1 : 0);
}

// Prefers usable rows, then the faster one.
bool better_copy(const ResultRow& candidate, const ResultRow& current) {
  if (is_usable(candidate) != is_usable(current)) return is_usable(candidate);
  return candidate.tflops > current.tflops;
}

// First-appearance order of keys, with the best copy of each; every copy of a key held more than
// once goes to `duplicates`.
std::vector<const ResultRow*> deduplicate(const std::vector<const ResultRow*>& rows,
                                          std::map<MeasurementKey, std::size_t>& index,
                                          std::vector<std::vector<const ResultRow*>>& duplicates) {
  std::vector<const ResultRow*> unique;
  std::vector<std::vector<const ResultRow*>> copies;  // per unique key
  for (const ResultRow* row : rows) {
    const auto [slot, inserted] = index.try_emplace(key_of(*row), unique.size());
    if (inserted) {
      unique.push_back(row);
      copies.push_back({row});
      continue;
    }
    copies[slot->second].push_back(row);
    if (better_copy(*row, *unique[slot->second])) unique[slot->second] = row;
  }
  for (std::vector<const ResultRow*>& same : copies)
    if (same.size() > 1) duplicates.push_back(std::move(same));
  return unique;
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double value : values)
    log_sum += std::log(value);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

}  // namespace

std::string_view significance_name(Significance significance) {
  switch (significance) {
    case Significance::no_interval:
      return "no interval";
    case Significance::within_noise:
      return "within the intervals";
    case Significance::b_faster:
      return "B faster";
    case Significance::b_slower:
      return "B slower";
  }
  return "?";
}

Significance significance_of(const ResultRow& a, const ResultRow& b) {
  if (!a.ci_low_ms || !a.ci_high_ms || !b.ci_low_ms || !b.ci_high_ms)
    return Significance::no_interval;
  using measurement::Separation;
  const measurement::Interval time_a{.lower = *a.ci_low_ms, .upper = *a.ci_high_ms};
  const measurement::Interval time_b{.lower = *b.ci_low_ms, .upper = *b.ci_high_ms};
  switch (measurement::separation(time_b, time_a)) {
    case Separation::first_lower:
      return Significance::b_faster;  // B takes less time
    case Separation::first_higher:
      return Significance::b_slower;
    case Separation::overlapping:
      return Significance::within_noise;
    case Separation::no_interval:
      return Significance::no_interval;
  }
  return Significance::no_interval;
}

Comparison compare_results(const std::vector<const ResultRow*>& a,
                           const std::vector<const ResultRow*>& b) {
  std::map<MeasurementKey, std::size_t> index_a, index_b;
  Comparison comparison;
  const std::vector<const ResultRow*> unique_a = deduplicate(a, index_a, comparison.duplicates_a);
  const std::vector<const ResultRow*> unique_b = deduplicate(b, index_b, comparison.duplicates_b);

  std::map<RowSubject, std::vector<double>> ratios_by_step;  // in step order
  std::vector<double> all_ratios;
  for (const ResultRow* row_a : unique_a) {
    ComparedRow compared{row_a, nullptr, std::nullopt};
    const auto found = index_b.find(key_of(*row_a));
    if (found != index_b.end()) {
      compared.b = unique_b[found->second];
      ++comparison.paired;
      if (is_usable(*row_a) && is_usable(*compared.b)) {
        compared.ratio = compared.b->tflops / row_a->tflops;
        compared.significance = significance_of(*row_a, *compared.b);
        SignificanceCounts& counts = comparison.significance;
        ++(compared.significance == Significance::b_faster       ? counts.b_faster
           : compared.significance == Significance::b_slower     ? counts.b_slower
           : compared.significance == Significance::within_noise ? counts.within_noise
                                                                 : counts.no_interval);
        ratios_by_step[row_a->subject].push_back(*compared.ratio);
        all_ratios.push_back(*compared.ratio);
      }
    } else {
      ++comparison.only_a;
    }
    comparison.rows.push_back(compared);
  }
  for (const ResultRow* row_b : unique_b) {
    if (index_a.count(key_of(*row_b)) == 0) {
      comparison.rows.push_back({nullptr, row_b, std::nullopt});
      ++comparison.only_b;
    }
  }
  comparison.geometric_mean_ratio = geometric_mean(all_ratios);
  for (const auto& [step, ratios] : ratios_by_step)
    comparison.per_step.push_back({step, *geometric_mean(ratios), static_cast<int>(ratios.size())});
  return comparison;
}

std::vector<std::string> reference_versions(const std::vector<const ResultRow*>& rows) {
  std::set<std::string> versions;
  for (const ResultRow* row : rows)
    if (!row->reference_version.empty()) versions.insert(row->reference_version);
  return {versions.begin(), versions.end()};
}

std::optional<std::string> reference_version_mismatch(const std::vector<const ResultRow*>& a,
                                                      const std::vector<const ResultRow*>& b) {
  const std::vector<std::string> in_a = reference_versions(a), in_b = reference_versions(b);
  if (in_a.empty() || in_b.empty() || in_a == in_b) return std::nullopt;
  const auto joined = [](const std::vector<std::string>& versions) {
    std::string text;
    for (const std::string& version : versions)
      text += (text.empty() ? "" : ", ") + version;
    return text;
  };
  return "the references differ: A was measured against " + joined(in_a) + ", B against " +
         joined(in_b) +
         "; a % of a reference compares across the two only where the library is "
         "the same";
}

std::optional<RatioSpread> ratio_spread(const std::vector<ComparedRow>& rows,
                                        const std::function<bool(const ResultRow& b)>& b_filter) {
  std::vector<double> percents;
  RatioSpread spread;
  for (const ComparedRow& row : rows) {
    if (!row.ratio || (b_filter && !b_filter(*row.b))) continue;
    const double percent = std::fabs(*row.ratio - 1.0) * 100.0;
    percents.push_back(percent);
    if (spread.worst == nullptr || percent > spread.max_percent) {
      spread.max_percent = percent;
      spread.worst = &row;
    }
  }
  if (percents.empty()) return std::nullopt;
  std::sort(percents.begin(), percents.end());
  const std::size_t n = percents.size();
  spread.pairs = static_cast<int>(n);
  spread.median_percent =
      n % 2 == 1 ? percents[n / 2] : (percents[n / 2 - 1] + percents[n / 2]) / 2.0;
  // Nearest rank: the smallest value with at least 95 % of the values at or below it.
  const std::size_t rank = (95 * n + 99) / 100;
  spread.p95_percent = percents[std::max<std::size_t>(rank, 1) - 1];
  return spread;
}

namespace {

const ResultRow& either(const ComparedRow& row) {
  return row.a ? *row.a : *row.b;
}

std::optional<double> numeric_column(const ComparedRow& row, CompareColumn column) {
  switch (column) {
    case CompareColumn::seq_len:
      return either(row).problem.seq_len;
    case CompareColumn::a_tflops:
      return row.a && is_usable(*row.a) ? std::optional<double>(row.a->tflops) : std::nullopt;
    case CompareColumn::b_tflops:
      return row.b && is_usable(*row.b) ? std::optional<double>(row.b->tflops) : std::nullopt;
    case CompareColumn::ratio:
      return row.ratio;
    default:
      return std::nullopt;
  }
}

int compare_column(const ComparedRow& x, const ComparedRow& y, CompareColumn column,
                   bool& missing_decides, bool& x_first) {
  switch (column) {
    case CompareColumn::step:
      return sign(either(x).subject <=> either(y).subject);
    case CompareColumn::config:
      return sign(either(x).config <=> either(y).config);
    case CompareColumn::dtype:
      return sign(row_dtype(either(x)) <=> row_dtype(either(y)));
    default:
      break;
  }
  const auto a = numeric_column(x, column), b = numeric_column(y, column);
  if (!a || !b) {
    if (a.has_value() != b.has_value()) {
      missing_decides = true;
      x_first = a.has_value();
    }
    return 0;
  }
  return *a < *b ? -1 : (*b < *a ? 1 : 0);
}

}  // namespace

void sort_compared_rows(std::vector<ComparedRow>& rows, std::span<const CompareSortKey> keys) {
  std::stable_sort(rows.begin(), rows.end(), [&](const ComparedRow& x, const ComparedRow& y) {
    for (const CompareSortKey& key : keys) {
      bool missing_decides = false, x_first = false;
      const int order = compare_column(x, y, key.column, missing_decides, x_first);
      if (missing_decides) return x_first;
      if (order != 0) return key.descending ? order > 0 : order < 0;
    }
    return false;
  });
}

std::string run_start(const ResultRow& row) {
  const std::size_t space = row.run_id.rfind(' ');
  const std::string_view stamp =
      std::string_view(row.run_id).substr(space == std::string::npos ? 0 : space + 1);
  // YYYY-MM-DDTHH:MM:SSZ: sorts as text in time order.
  const bool looks_like_utc = stamp.size() == 20 && stamp[4] == '-' && stamp[7] == '-' &&
                              stamp[10] == 'T' && stamp[19] == 'Z' &&
                              std::isdigit(static_cast<unsigned char>(stamp[0]));
  return looks_like_utc ? std::string(stamp) : std::string();
}

std::string default_run(const std::vector<ResultFile>& files, RowFilter filter) {
  filter.run.clear();
  struct Coverage {
    std::set<int> steps;
    std::string newest_start;
    std::size_t rows = 0;
  };
  std::map<std::string, Coverage> runs;
  for (const ResultRow* row : select_rows(files, filter)) {
    if (row->is_ceiling() || !is_usable(*row)) continue;
    const std::optional<int> step = row->subject.step();
    if (!step) continue;  // references are measured by every run
    Coverage& run = runs[run_key(*row)];
    run.steps.insert(*step);
    run.newest_start = std::max(run.newest_start, run_start(*row));
    ++run.rows;
  }
  const auto before = [](const Coverage& a, const Coverage& b) {
    return std::tuple(a.steps.size(), a.newest_start, a.rows) <
           std::tuple(b.steps.size(), b.newest_start, b.rows);
  };
  const auto best = std::max_element(runs.begin(), runs.end(), [&](const auto& a, const auto& b) {
    return before(a.second, b.second);
  });
  return best == runs.end() ? std::string() : best->first;
}

std::optional<ComparePair> default_compare_pair(const std::vector<ResultFile>& files,
                                                const std::string& device) {
  constexpr double kRerunOverlap = 0.5;
  std::set<std::string> devices;
  if (!device.empty()) {
    devices.insert(device);
  } else {
    for (const ResultFile& file : files)
      for (const ResultRow& row : file.rows)
        if (!row.is_ceiling()) devices.insert(row.device);
  }
  std::optional<ComparePair> best;
  // Re-runs (at least half the smaller file's measurements are in the other) first; among them
  // the newest, then the most shared; among the others the largest overlap, then the most shared.
  std::tuple<bool, std::string, std::string, double, std::size_t> best_rank;
  for (const std::string& candidate : devices) {
    // Each file's usable measurements on the device, and its newest run start.
    // The kernels' measurements apart: a re-run repeats kernels. Two sweeps that share only
    // reference rows (FA2 and cuDNN at the same N) are no re-run, however small one of them is.
    std::vector<std::set<MeasurementKey>> keys(files.size());
    std::vector<std::set<MeasurementKey>> kernel_keys(files.size());
    std::vector<std::string> newest(files.size());
    for (std::size_t i = 0; i < files.size(); ++i)
      for (const ResultRow& row : files[i].rows)
        if (row.device == candidate && !row.is_ceiling() && is_usable(row)) {
          keys[i].insert(key_of(row));
          if (row.subject.is_kernel()) kernel_keys[i].insert(key_of(row));
          newest[i] = std::max(newest[i], run_start(row));
        }
    for (std::size_t i = 0; i < files.size(); ++i)
      for (std::size_t j = i + 1; j < files.size(); ++j) {
        if (keys[i].empty() || keys[j].empty()) continue;
        std::size_t shared = 0;
        for (const MeasurementKey& key : keys[i])
          shared += keys[j].count(key);
        if (shared == 0) continue;
        const double overlap = static_cast<double>(shared) /
                               static_cast<double>(std::min(keys[i].size(), keys[j].size()));
        std::size_t shared_kernels = 0;
        for (const MeasurementKey& key : kernel_keys[i])
          shared_kernels += kernel_keys[j].count(key);
        const std::size_t fewer_kernels = std::min(kernel_keys[i].size(), kernel_keys[j].size());
        const bool rerun =
            shared_kernels > 0 && static_cast<double>(shared_kernels) >=
                                      kRerunOverlap * static_cast<double>(fewer_kernels);
        const auto rank = std::make_tuple(rerun, rerun ? std::min(newest[i], newest[j]) : "",
                                          rerun ? std::max(newest[i], newest[j]) : "",
                                          rerun ? 0.0 : overlap, shared);
        if (best && rank <= best_rank) continue;
        best_rank = rank;
        const bool i_older = newest[i] <= newest[j];
        best = ComparePair{i_older ? i : j, i_older ? j : i, shared, overlap, candidate};
      }
  }
  return best;
}

}  // namespace flashscope::explorer
