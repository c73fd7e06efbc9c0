// Fuzz target: the explorer's results model (explorer/model, explorer/gui/explorer_state) fed
// with whatever rows the CSV reader accepts from arbitrary bytes, the way the GUI's run panel
// streams a sweep's rows into a live file and every view then aggregates them.
//
// Input: CSV bytes, optionally followed by a NUL byte and a table filter query (the text typed
// into a view's filter box). Rows read before a format error are kept, as a streaming sweep
// keeps them.
//
// Properties, besides no crash, sanitizer report or hang:
//  * every view's model builds (progression at every N and as a harmonic mean, step changes,
//    sweep series, autotune per step, compare of two halves), for every dtype and reference;
//  * the progression lists steps in step order, each with at least one row;
//  * sorting a table by any column, either way, and filtering it keep only rows it was given;
//  * every chart axis the views fit to those values (flashscope::plot, as the views call it)
//    gets a bounded number of ticks, also after zooming and panning.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/gui/explorer_state.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/compare.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/sweep_series.hpp"
#include "explorer/plot/scale.hpp"
#include "profiling/results/results.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace explorer = flashscope::explorer;
using explorer::Field;
using flashscope::ResultRow;

namespace {

constexpr Field kFields[] = {
    Field::step,       Field::config,      Field::dtype,      Field::seq_len,   Field::batch,
    Field::tflops,     Field::pct_fa2,     Field::pct_cudnn,  Field::median_ms, Field::registers,
    Field::smem_bytes, Field::local_bytes, Field::l2_hit_pct, Field::cycles,    Field::max_error,
    Field::verdict,    Field::status};

constexpr explorer::CompareColumn kCompareColumns[] = {
    explorer::CompareColumn::step,     explorer::CompareColumn::config,
    explorer::CompareColumn::dtype,    explorer::CompareColumn::seq_len,
    explorer::CompareColumn::a_tflops, explorer::CompareColumn::b_tflops,
    explorer::CompareColumn::ratio};

// What a view's chart does with a column of values: fit an axis to them (the views' padding and
// zero anchoring), tick it at the tick counts a window offers, then zoom and pan it.
void exercise_axis(const std::vector<double>& values, flashscope::plot::AxisScale scale,
                   double padding, bool include_zero) {
  namespace plot = flashscope::plot;
  const plot::Range fit = plot::fit_range(values, scale, padding, include_zero);
  for (const plot::Range& range :
       {fit, plot::zoom_range(fit, fit.min, 0.5, scale), plot::zoom_range(fit, fit.max, 64, scale),
        plot::pan_range(fit, 0.37, scale), plot::pan_range(fit, -1e6, scale)}) {
    for (const int max_ticks : {2, 8, 40}) {
      const std::vector<plot::Tick> ticks = plot::axis_ticks(range, scale, max_ticks);
      FUZZ_CHECK(ticks.size() <= static_cast<std::size_t>(2 * max_ticks + 2),
                 std::to_string(ticks.size()) + " ticks for at most " + std::to_string(max_ticks) +
                     " on [" + std::to_string(range.min) + ", " + std::to_string(range.max) + "]");
    }
  }
}

// The charts of the progression (bars from zero), sweep (log 2 N against values from zero),
// autotune (any numeric column against any, N on log 2) and compare (ratios) views.
void exercise_charts(const explorer::RowSet& set) {
  namespace plot = flashscope::plot;
  for (const Field field : kFields) {
    if (!explorer::is_numeric_field(field)) continue;
    std::vector<double> values;
    for (const ResultRow* row : set.rows())
      if (const auto value = explorer::numeric_field(set, *row, field)) values.push_back(*value);
    const plot::AxisScale scale =
        field == Field::seq_len ? plot::AxisScale::log2 : plot::AxisScale::linear;
    exercise_axis(values, scale, 0.06, false);
    exercise_axis(values, plot::AxisScale::linear, 0.12, true);
    exercise_axis(values, plot::AxisScale::log2, 0.05, false);
  }
}

// Rows up to the first format error.
std::vector<ResultRow> read_rows(std::string_view csv) {
  flashscope::ResultsCsvParser parser("fuzz.csv");
  std::vector<ResultRow> rows;
  try {
    for (ResultRow& row : parser.feed(csv))
      rows.push_back(std::move(row));
    for (ResultRow& row : parser.finish())
      rows.push_back(std::move(row));
  } catch (const flashscope::ResultsFormatError&) {
    // A streaming sweep keeps the rows that arrived before the bad one; so does this target.
  }
  return rows;
}

void check_subset(const std::vector<const ResultRow*>& result,
                  const std::vector<const ResultRow*>& given, const char* what) {
  const std::multiset<const ResultRow*> have(given.begin(), given.end());
  std::multiset<const ResultRow*> seen;
  for (const ResultRow* row : result) {
    seen.insert(row);
    FUZZ_CHECK(seen.count(row) <= have.count(row),
               std::string(what) + " returned a row it was not given, or one row twice");
  }
}

void exercise_progression(const explorer::RowSet& set, const std::string& dtype) {
  std::vector<std::optional<int>> seq_lens = {std::nullopt};
  for (const int n : set.seq_lens(dtype))
    seq_lens.push_back(n);
  for (const flashscope::Baseline baseline : flashscope::kBaselines) {
    for (const std::optional<int>& seq_len : seq_lens) {
      const explorer::Progression progression =
          explorer::build_progression(set, {dtype, seq_len, baseline});
      for (std::size_t i = 0; i < progression.steps.size(); ++i) {
        const explorer::StepValue& value = progression.steps[i];
        const std::string name = value.subject.text();
        FUZZ_CHECK(!value.rows.empty(), "step " + name + " has a value but no rows");
        if (i > 0)
          FUZZ_CHECK(progression.steps[i - 1].subject < value.subject,
                     "progression steps out of order: " + progression.steps[i - 1].subject.text() +
                         " before " + name);
        FUZZ_CHECK(value.subject.is_kernel(), "step " + name + " of the progression is no kernel");
        const int step = *value.subject.step();
        const explorer::StepChange change =
            explorer::change_from_previous_step(progression, step, set, baseline);
        FUZZ_CHECK(change.current == &value,
                   "the change of step " + name + " is not about that step's value");
        for (const explorer::MetricChange& metric : change.changes)
          (void)metric.relative_change();
      }
      (void)progression.find_baseline(baseline);
    }
  }
}

void exercise_tables(const explorer::RowSet& set, std::string_view query) {
  const std::vector<const ResultRow*>& rows = set.rows();
  for (const Field field : kFields) {
    for (const bool descending : {false, true}) {
      std::vector<const ResultRow*> sorted = rows;
      const explorer::SortKey keys[] = {{field, descending}, {Field::tflops, !descending}};
      explorer::sort_rows(sorted, keys, set);
      FUZZ_CHECK(sorted.size() == rows.size(), "sorting changed the number of rows");
      check_subset(sorted, rows, "sort_rows");
    }
  }
  for (const ResultRow* row : rows)
    for (const Field field : kFields) {
      (void)explorer::format_field(set, *row, field);
      (void)explorer::numeric_field(set, *row, field);
    }
  const explorer::RowTextFilter filter(query);
  check_subset(explorer::filter_rows(rows, filter), rows, "filter_rows");
}

void exercise_compare(const std::vector<const ResultRow*>& rows) {
  std::vector<const ResultRow*> a, b;
  for (std::size_t i = 0; i < rows.size(); ++i)
    (i % 2 == 0 ? a : b).push_back(rows[i]);
  // Each half against the other, and all rows against themselves (every row paired).
  for (const auto& [left, right] : {std::pair{a, b}, std::pair{rows, rows}}) {
    explorer::Comparison comparison = explorer::compare_results(left, right);
    FUZZ_CHECK(static_cast<std::size_t>(comparison.paired + comparison.only_a +
                                        comparison.only_b) == comparison.rows.size(),
               "paired + only_a + only_b is not the number of compared rows");
    for (const explorer::CompareColumn column : kCompareColumns)
      for (const bool descending : {false, true}) {
        const explorer::CompareSortKey keys[] = {{column, descending}};
        explorer::sort_compared_rows(comparison.rows, keys);
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view csv = input.substr(0, nul);
  const std::string_view query = nul == std::string_view::npos ? "" : input.substr(nul + 1);

  std::vector<ResultRow> rows = read_rows(csv);
  if (rows.empty()) return 0;

  explorer::ExplorerState state;
  state.start_live_sweep(rows.front().device);
  state.append_live_rows(std::move(rows));
  // The live filter (the first row's device and cache mode), then every row.
  for (const bool all : {false, true}) {
    if (all) state.set_filter({});
    (void)state.devices();
    (void)state.cache_modes();
    const explorer::RowSet& set = state.rows();
    for (const std::string& dtype : set.dtypes())
      exercise_progression(set, dtype);
    exercise_progression(set, state.selection.dtype);

    explorer::SweepQuery sweep;
    sweep.steps = explorer::available_series_steps(set);
    sweep.dtypes = set.dtypes();
    for (const explorer::ValueMode mode :
         {explorer::ValueMode::tflops, explorer::ValueMode::percent_of_baseline}) {
      sweep.mode = mode;
      for (const explorer::SweepSeries& series : explorer::build_sweep_series(set, sweep))
        for (std::size_t i = 1; i < series.points.size(); ++i)
          FUZZ_CHECK(series.points[i - 1].seq_len < series.points[i].seq_len,
                     "sweep series " + series.label + " is not in ascending N");
    }

    for (const int step : set.steps()) {
      const explorer::AutotuneModel model = explorer::build_autotune_model(set, {step, "", {}});
      for (const explorer::AutotunePoint& point : model.points)
        FUZZ_CHECK(model.shape_index(point.shape) <= model.shapes.size(),
                   "a block shape index past the legend");
    }

    exercise_tables(set, query);
    exercise_compare(set.rows());
    exercise_charts(set);
  }
  return 0;
}
