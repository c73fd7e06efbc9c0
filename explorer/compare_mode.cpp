#include "explorer/compare_mode.hpp"

#include "kernels/common/problem_axes.hpp"

#include <cstdio>
#include <iostream>
#include <set>
#include <tuple>
#include <vector>

#include "explorer/model/compare.hpp"
#include "explorer/model/devices.hpp"
#include "explorer/model/result_files.hpp"
#include "explorer/model/row_set.hpp"
#include "explorer/usage.hpp"

namespace flashscope::cli {

namespace {

using explorer::ComparedRow;
using explorer::DeviceUnit;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string describe(const ComparedRow& row) {
  const ResultRow& a = *row.a;
  return a.subject.text() + (a.config ? " " + config_text(a) : "") + " " +
         problem_label(a.problem) + " (A " + format("%.1f", a.tflops) + ", B " +
         format("%.1f", row.b->tflops) + " TFLOP/s)";
}

// "step 16 (FP16, ...) <problem label>: 2 copies, 252.1 and 999.0 TFLOP/s".
std::string describe_copies(const std::vector<const ResultRow*>& copies) {
  const ResultRow& first = *copies.front();
  std::string text =
      first.subject.text() + (first.config ? " " + config_text(first) : "") + " " +
      problem_label(first.problem) +
      (first.reference_pass ? " pass " + std::to_string(*first.reference_pass) : "") + ": " +
      std::to_string(copies.size()) + " copies, ";
  for (std::size_t i = 0; i < copies.size(); ++i)
    text += (i == 0 ? "" : (i + 1 == copies.size() ? " and " : ", ")) +
            (explorer::is_usable(*copies[i])
                 ? format("%.1f", copies[i]->tflops)
                 : std::string(copies[i]->status.is_fault() ? "fault" : "skipped"));
  return text + " TFLOP/s";
}

std::string spread_text(const explorer::RatioSpread& spread) {
  return std::to_string(spread.pairs) + " pairs, |B / A - 1| median " +
         format("%.2f", spread.median_percent) + " %, p95 " + format("%.2f", spread.p95_percent) +
         " %, max " + format("%.2f", spread.max_percent) + " %";
}

std::string devices_of(const std::vector<const ResultRow*>& rows) {
  std::string text;
  for (const DeviceUnit& unit : explorer::device_units(rows))
    text +=
        (text.empty() ? "" : "; ") + unit.label(true) + " (" + std::to_string(unit.rows) + " rows)";
  return text;
}

}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareCli& cli) {
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Pair the rows of two result CSVs by what was measured (step, config, dtype, shape) and "
      "report TFLOP/s B / A: rows found in only one file, the geometric mean, and the spread "
      "|B / A - 1| (median, 95th percentile, max), overall and per GPU of B; and in how many "
      "pairs B is faster or slower beyond both rows' 95 % intervals, and in how many the "
      "difference is within them (not significant). A file holding one "
      "measurement twice is refused, its copies listed. Exit code 0, 1 when a limit given is "
      "exceeded, 2 when an argument is invalid, a file cannot be read or holds a measurement "
      "twice.");
  compare->add_option("a", cli.a_path, "File A (the baseline)")->required();
  compare->add_option("b", cli.b_path, "File B")->required();
  compare->add_option("--max-median-diff", cli.max_median_percent,
                      "Fail (exit 1) when the median |B / A - 1| exceeds this many percent (0 or "
                      "more)");
  compare->add_flag("--same-rows", cli.same_rows,
                    "Fail (exit 1) when a measurement is in only one of the files");
  return compare;
}

int run_compare_mode(const CompareCli& cli) {
  // One validation pass: every problem at once.
  UsageProblems problems;
  for (const auto& [name, path] : {std::pair{"a", cli.a_path}, std::pair{"b", cli.b_path}})
    if (const auto problem = input_file_problem(std::string("file ") + name, path))
      problems.add(*problem);
  if (cli.max_median_percent && !(*cli.max_median_percent >= 0))
    problems.add("--max-median-diff: " + format("%g", *cli.max_median_percent) +
                 " is not a percentage of 0 or more");
  if (!problems.empty()) return problems.report(std::cerr, "explorer compare");

  std::vector<ResultRow> a_rows, b_rows;
  std::vector<std::string> unreadable;
  for (const auto& [path, rows] :
       {std::pair{&cli.a_path, &a_rows}, std::pair{&cli.b_path, &b_rows}}) {
    try {
      *rows = read_results_file(*path);
    } catch (const ResultsFormatError& error) {
      unreadable.push_back(error.what());
    }
  }
  if (!unreadable.empty()) {
    for (const std::string& error : unreadable)
      std::cerr << "explorer compare: " << error << "\n";
    return 2;
  }
  const auto pointers = [](const std::vector<ResultRow>& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows)
      out.push_back(&row);
    return out;
  };
  const std::vector<const ResultRow*> a = pointers(a_rows), b = pointers(b_rows);
  const explorer::Comparison comparison = explorer::compare_results(a, b);
  // A measurement twice in one file: which copy to pair is no choice to make silently (a stray
  // 999 TFLOP/s copy would be the one kept).
  if (!comparison.duplicates_a.empty() || !comparison.duplicates_b.empty()) {
    for (const auto& [side, path, duplicates] :
         {std::tuple{"A", &cli.a_path, &comparison.duplicates_a},
          std::tuple{"B", &cli.b_path, &comparison.duplicates_b}}) {
      if (duplicates->empty()) continue;
      std::cerr << "explorer compare: " << side << " (" << *path << ") holds " << duplicates->size()
                << " measurement" << (duplicates->size() == 1 ? "" : "s") << " more than once:\n";
      constexpr std::size_t kListed = 10;
      for (std::size_t i = 0; i < duplicates->size() && i < kListed; ++i)
        std::cerr << "  " << describe_copies((*duplicates)[i]) << "\n";
      if (duplicates->size() > kListed)
        std::cerr << "  ... and " << duplicates->size() - kListed << " more\n";
    }
    std::cerr << "explorer compare: a comparison pairs one row per measurement (step, config, "
                 "dtype, shape, mask, reference pass); keep one copy of each (two runs in one "
                 "file: compare them as two files; explorer merge refuses such files too)\n";
    return 2;
  }
  std::cout << "A: " << cli.a_path << ": " << a_rows.size() << " rows on " << devices_of(a) << "\n"
            << "B: " << cli.b_path << ": " << b_rows.size() << " rows on " << devices_of(b) << "\n"
            << "paired " << comparison.paired << ", only in A " << comparison.only_a
            << ", only in B " << comparison.only_b << "\n";
  if (const auto mismatch = explorer::reference_version_mismatch(a, b))
    std::cout << "note: " << *mismatch << "\n";
  int status = 0;
  if (cli.same_rows && (comparison.only_a > 0 || comparison.only_b > 0)) {
    std::cout << "FAIL: the files do not hold the same measurements\n";
    status = 1;
  }
  const std::optional<explorer::RatioSpread> spread = explorer::ratio_spread(comparison.rows);
  if (!spread) {
    std::cout << "no pair with usable TFLOP/s on both sides\n";
    return cli.max_median_percent ? 1 : status;
  }
  std::cout << "TFLOP/s B / A: geometric mean " << format("%.4f", *comparison.geometric_mean_ratio)
            << "; " << spread_text(*spread) << "; worst: " << describe(*spread->worst) << " ("
            << explorer::significance_name(spread->worst->significance) << ")\n";
  // A difference is real only where the two rows' 95 % intervals are disjoint
  // (docs/profiling.md, "Significance"); rows from before the interleaved engine have none.
  const explorer::SignificanceCounts& counts = comparison.significance;
  std::cout << "time, by the rows' 95 % intervals: B faster in " << counts.b_faster
            << ", B slower in " << counts.b_slower << ", within the intervals in "
            << counts.within_noise << ", no interval (files from before the interleaved timing) in "
            << counts.no_interval << "\n";
  const std::vector<DeviceUnit> b_units = explorer::device_units(b);
  if (b_units.size() > 1)
    for (const DeviceUnit& unit : b_units) {
      const std::string selector = unit.selector();
      const auto on_unit = [&](const ResultRow& row) {
        return row.device == unit.name && explorer::gpu_matches(row, selector);
      };
      if (const auto per_gpu = explorer::ratio_spread(comparison.rows, on_unit))
        std::cout << "  B on " << unit.label(true) << ": " << spread_text(*per_gpu) << "\n";
    }
  if (cli.max_median_percent && spread->median_percent > *cli.max_median_percent) {
    std::cout << "FAIL: median |B / A - 1| " << format("%.2f", spread->median_percent)
              << " % exceeds " << format("%.2f", *cli.max_median_percent) << " %\n";
    status = 1;
  }
  return status;
}

}  // namespace flashscope::cli
