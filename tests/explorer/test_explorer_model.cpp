// The explorer's view model, headless: references and percentages, harmonic means, per-N
// bests, sorting and filtering, compare ratios, config changes, file loading and step pages.
#include <doctest/doctest.h>

#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>

#include "configs/config_sets.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/compare.hpp"
#include "explorer/model/devices.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/markdown.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/result_files.hpp"
#include "explorer/model/row_set.hpp"
#include "explorer/model/step_pages.hpp"
#include "explorer/model/steps.hpp"
#include "explorer/model/sweep_series.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

constexpr const char* kConfig64 = "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles";
constexpr const char* kConfig128 = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles";

// Rows live in a deque so the pointers RowSet keeps stay valid while tests add rows.
struct Rows {
  std::deque<ResultRow> storage;

  ResultRow& add(std::string step, std::string config, int seq_len, double tflops,
                 std::string dtype = "fp16") {
    ResultRow row;
    row.subject = *RowSubject::from_text(step);
    if (!config.empty()) row.config = parse_short_form(config);
    row.problem.dtype = dtype_from_string(dtype).value_or(DType::FP16);
    if (row.subject.is_ceiling()) row.subject.set_element_type(dtype_from_string(dtype));
    row.problem.batch = 16;
    row.problem.heads = 16;
    row.problem.heads_kv = row.problem.heads;
    row.problem.seq_len = seq_len;
    row.tflops = tflops;
    row.runs = 30;
    row.median_ms = 1000.0 / tflops;  // time is inversely proportional: same shape
    row.min_ms = row.median_ms * 0.99;
    row.max_ms = row.median_ms * 1.01;
    row.verdict = Verdict::pass;
    row.device = "test device";
    row.cache_mode = "warm";
    storage.push_back(row);
    return storage.back();
  }

  RowSet set() const {
    std::vector<const ResultRow*> pointers;
    for (const ResultRow& row : storage)
      pointers.push_back(&row);
    return RowSet(pointers);
  }
};

}  // namespace

TEST_CASE("step order puts numbered steps first, numerically, then the references") {
  const auto subject = [](const char* text) { return *RowSubject::from_text(text); };
  CHECK(subject("2") < subject("10"));
  CHECK(subject("16") < subject("fa2"));
  CHECK(subject("fa2") < subject("cudnn"));
  CHECK_FALSE(subject("cudnn") < subject("fa2"));
  CHECK(subject("cudnn") < subject("peak:wgmma"));
  CHECK(subject("7").label() == "step 7");
  CHECK(subject("cudnn").label() == "cuDNN");
}

TEST_CASE("usable rows ran ok and did not fail the check") {
  Rows rows;
  ResultRow& row = rows.add("1", kConfig64, 4096, 100);
  CHECK(is_usable(row));
  row.verdict = Verdict::fail;
  CHECK_FALSE(is_usable(row));
  row.verdict = Verdict::unchecked;
  CHECK(is_usable(row));
  row.status = RowStatus::fault("illegal address");
  CHECK_FALSE(is_usable(row));
}

TEST_CASE("harmonic mean") {
  CHECK(*harmonic_mean({100, 300}) == doctest::Approx(150));
  CHECK(*harmonic_mean({42}) == doctest::Approx(42));
  CHECK_FALSE(harmonic_mean({}).has_value());
  CHECK_FALSE(harmonic_mean({100, 0}).has_value());
}

TEST_CASE("percent of a reference: stored column first, else the matching reference row") {
  Rows rows;
  rows.add("fa2", "", 4096, 200);
  rows.add("fa2", "", 4096, 180);  // slower duplicate: the fastest reference is used
  rows.add("cudnn", "", 4096, 400);
  ResultRow& kernel = rows.add("1", kConfig64, 4096, 100);
  ResultRow& other_shape = rows.add("1", kConfig64, 8192, 100);
  other_shape.problem.batch = 8;
  const RowSet set = rows.set();

  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2) == doctest::Approx(50));
  CHECK(*set.percent_of_baseline(kernel, Baseline::cudnn) == doctest::Approx(25));
  CHECK_FALSE(set.percent_of_baseline(other_shape, Baseline::fa2).has_value());

  kernel.pct_fa2 = 61.5;  // written by the sweep at measurement time
  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2) == doctest::Approx(61.5));
}

TEST_CASE("percent by cycles: stored column first, else the reference row's cycles") {
  Rows rows;
  ResultRow& fa2 = rows.add("fa2", "", 4096, 200);
  fa2.cycles = 10e6;
  ResultRow& kernel = rows.add("16", kConfig128, 4096, 205);  // 2.5 % faster by time...
  kernel.cycles = 10.1e6;                                     // ...1 % more cycles
  ResultRow& no_counters = rows.add("16", kConfig64, 4096, 150);
  const RowSet set = rows.set();
  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2) == doctest::Approx(102.5));
  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2, PercentBasis::cycles) ==
        doctest::Approx(100.0 / 1.01));
  CHECK_FALSE(set.percent_of_baseline(no_counters, Baseline::fa2, PercentBasis::cycles));
  CHECK(*numeric_field(set, kernel, Field::pct_fa2_cycles) == doctest::Approx(100.0 / 1.01));
  CHECK(percent_field(Baseline::cudnn, PercentBasis::cycles) == Field::pct_cudnn_cycles);
  CHECK(field_label(Field::pct_fa2_cycles) == "% of FA2 by cycles");

  kernel.pct_fa2_cycles = 97.25;  // written by the sweep at measurement time
  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2, PercentBasis::cycles) ==
        doctest::Approx(97.25));

  const Progression progression = build_progression(set, {"fp16", 4096, Baseline::fa2});
  const StepValue* step16 = progression.find_step(16);
  REQUIRE(step16 != nullptr);
  CHECK(step16->config_text() == kConfig128);
  CHECK(*step16->percent_by(PercentBasis::time) == doctest::Approx(102.5));
  CHECK(*step16->percent_by(PercentBasis::cycles) == doctest::Approx(97.25));
}

TEST_CASE("a reference of another run is never the baseline; the first pass is") {
  Rows rows;
  ResultRow& fa2_host_a = rows.add("fa2", "", 4096, 200);
  fa2_host_a.host = "host-a";
  ResultRow& fa2_host_b = rows.add("fa2", "", 4096, 250);  // faster, but another host
  fa2_host_b.host = "host-b";
  ResultRow& kernel = rows.add("9", kConfig128, 4096, 220);
  kernel.host = "host-a";
  ResultRow& orphan = rows.add("9", kConfig128, 4096, 220);
  orphan.host = "host-c";  // no reference measured on its host
  RowSet set = rows.set();
  CHECK(set.baseline_for(kernel, Baseline::fa2) == &fa2_host_a);
  CHECK(*set.percent_of_baseline(kernel, Baseline::fa2) == doctest::Approx(110));
  CHECK_FALSE(set.percent_of_baseline(orphan, Baseline::fa2).has_value());
  CHECK(set.run_labels() ==
        std::vector<std::string>{"host-a, no commit", "host-b, no commit", "host-c, no commit"});

  // The repeat after the kernels is faster here, but kernel rows pair with the first pass.
  fa2_host_a.reference_pass = 1;
  ResultRow& repeat = rows.add("fa2", "", 4096, 210);
  repeat.host = "host-a";
  repeat.reference_pass = 2;
  set = rows.set();
  CHECK(set.baseline_for(kernel, Baseline::fa2) == &fa2_host_a);

  // The run filter keeps one run's rows.
  ResultFile file;
  for (const ResultRow& row : rows.storage)
    file.rows.push_back(row);
  const std::vector<ResultFile> files = {file};
  const std::vector<RunChoice> runs = distinct_runs(files);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].label == "host-a, no commit");
  CHECK(runs[0].rows == 3);
  RowFilter filter;
  filter.run = runs[1].key;
  const std::vector<const ResultRow*> host_b = select_rows(files, filter);
  REQUIRE(host_b.size() == 1);
  CHECK(host_b[0]->host == "host-b");
}

TEST_CASE("views default to one run: the newest of those covering the most steps") {
  Rows rows;
  // host-a: steps 8 and 9, started 10:00; host-b: step 9 only, newer; host-c: steps 8 and 9,
  // started 11:00 (the newest full run); host-d: steps 8 and 9 but another workload.
  const auto add = [&](const char* step, const char* host, const char* start) -> ResultRow& {
    ResultRow& row = rows.add(step, kConfig128, 4096, 200);
    row.host = host;
    row.run_id = std::string(host) + " " + start;
    return row;
  };
  add("8", "host-a", "2026-11-25T10:00:00Z");
  add("9", "host-a", "2026-11-25T10:00:00Z");
  add("fa2", "host-b", "2026-11-25T12:00:00Z").config.reset();
  add("9", "host-b", "2026-11-25T12:00:00Z");
  add("8", "host-c", "2026-11-25T11:00:00Z");
  add("9", "host-c", "2026-11-25T11:00:00Z");
  add("8", "host-d", "2026-11-25T13:00:00Z").problem.causal = true;
  add("9", "host-d", "2026-11-25T13:00:00Z").problem.causal = true;
  ResultFile file;
  for (const ResultRow& row : rows.storage)
    file.rows.push_back(row);
  const std::vector<ResultFile> files = {file};

  RowFilter filter;
  filter.workload[Axis::causal] = 0;
  filter.run = "ignored: the default is chosen among every run";
  const std::string run = default_run(files, filter);
  CHECK(run == run_key(rows.storage[4]));  // host-c
  filter.workload[Axis::causal] = 1;
  CHECK(default_run(files, filter) == run_key(rows.storage[6]));  // host-d, the causal one

  // A failing row does not count as covering its step.
  ResultFile failing = file;
  failing.rows[4].verdict = Verdict::fail;
  filter.workload[Axis::causal] = 0;
  CHECK(default_run({failing}, filter) == run_key(rows.storage[0]));  // host-a now
  // Nothing measured on that device: no run.
  filter.device = "another device";
  CHECK(default_run(files, filter).empty());
}

TEST_CASE("a reference's level is its first pass, not a faster repeat") {
  Rows rows;
  ResultRow& first = rows.add("fa2", "", 4096, 200);
  first.reference_pass = 1;
  ResultRow& repeat = rows.add("fa2", "", 4096, 210);
  repeat.reference_pass = 2;
  rows.add("9", kConfig128, 4096, 214);
  const RowSet set = rows.set();
  const Progression progression = build_progression(set, {"fp16", 4096, Baseline::fa2});
  REQUIRE(progression.find_baseline(Baseline::fa2) != nullptr);
  CHECK(progression.find_baseline(Baseline::fa2)->tflops == doctest::Approx(200));
  CHECK(*progression.find_step(9)->percent == doctest::Approx(107));
  const std::vector<SweepSeries> series =
      build_sweep_series(set, {{RowSubject::baseline(Baseline::fa2)}, {"fp16"}});
  REQUIRE(series.size() == 1);
  CHECK(series[0].points[0].value == doctest::Approx(200));
  CHECK(stands_before(first, repeat));
  CHECK_FALSE(stands_before(repeat, first));
}

TEST_CASE("a flagged L2 hit rate is marked wherever it is shown") {
  Rows rows;
  ResultRow& row = rows.add("1", kConfig64, 16384, 50);
  row.l2_hit_pct = 101.024;
  row.warnings = join_warnings(sanity_warnings(row));
  const RowSet set = rows.set();
  CHECK(format_field(set, row, Field::l2_hit_pct) == "101.0 (!)");
  row.l2_hit_pct = 99.5;
  row.warnings.clear();
  CHECK(format_field(set, row, Field::l2_hit_pct) == "99.5");
}

TEST_CASE("progression at one N takes each step's fastest usable config") {
  Rows rows;
  rows.add("fa2", "", 4096, 200);
  rows.add("1", kConfig64, 4096, 50);
  rows.add("1", kConfig128, 4096, 80);
  rows.add("1", kConfig128, 2048, 95);  // other N: ignored
  ResultRow& faulted = rows.add("2", kConfig64, 4096, 500);
  faulted.status = RowStatus::fault("launch failed");
  rows.add("2", kConfig128, 4096, 120);
  rows.add("1", kConfig64, 4096, 70, "bf16");  // other dtype: ignored

  const Progression progression = build_progression(rows.set(), {"fp16", 4096, Baseline::fa2});
  REQUIRE(progression.steps.size() == 2);
  CHECK(progression.steps[0].subject.text() == "1");
  CHECK(progression.steps[0].tflops == doctest::Approx(80));
  CHECK(progression.steps[0].config_text() == kConfig128);
  CHECK(*progression.steps[0].percent == doctest::Approx(40));
  CHECK(progression.steps[1].tflops == doctest::Approx(120));  // the faulted row is skipped
  REQUIRE(progression.find_baseline(Baseline::fa2) != nullptr);
  CHECK(progression.find_baseline(Baseline::fa2)->tflops == doctest::Approx(200));
  CHECK(progression.find_baseline(Baseline::cudnn) == nullptr);
  CHECK(progression.seq_lens == std::vector<int>{4096});
}

TEST_CASE("harmonic-mean progression uses one config per step, over the N it was measured at") {
  Rows rows;
  for (int n : {1024, 2048, 4096})
    rows.add("fa2", "", n, 200);
  // kConfig64 is measured at every N; kConfig128 is faster but only at one N.
  rows.add("3", kConfig64, 1024, 100);
  rows.add("3", kConfig64, 2048, 100);
  rows.add("3", kConfig64, 4096, 400);
  rows.add("3", kConfig128, 4096, 900);

  const Progression progression =
      build_progression(rows.set(), {"fp16", std::nullopt, Baseline::fa2});
  CHECK(progression.seq_lens == std::vector<int>{1024, 2048, 4096});
  REQUIRE(progression.steps.size() == 1);
  const StepValue& step = progression.steps.front();
  CHECK(step.config_text() == kConfig64);
  CHECK(step.rows.size() == 3);
  CHECK(step.tflops == doctest::Approx(3.0 / (1 / 100.0 + 1 / 100.0 + 1 / 400.0)));
  // Harmonic mean of the per-N percentages 50, 50, 200.
  CHECK(*step.percent == doctest::Approx(3.0 / (1 / 50.0 + 1 / 50.0 + 1 / 200.0)));
  CHECK(progression.find_baseline(Baseline::fa2)->tflops == doctest::Approx(200));
}

TEST_CASE("a harmonic mean of percentages needs every N's reference") {
  Rows rows;
  rows.add("fa2", "", 1024, 200);
  rows.add("5", kConfig64, 1024, 100);
  rows.add("5", kConfig64, 2048, 100);  // no reference at 2048
  const Progression progression =
      build_progression(rows.set(), {"fp16", std::nullopt, Baseline::fa2});
  REQUIRE(progression.steps.size() == 1);
  CHECK(progression.steps[0].tflops == doctest::Approx(100));
  CHECK_FALSE(progression.steps[0].percent.has_value());
}

TEST_CASE("change from the previous step with data") {
  Rows rows;
  ResultRow& first = rows.add("1", kConfig64, 4096, 50);
  first.registers = 128;
  first.l2_hit_pct = 80;
  ResultRow& third = rows.add("3", kConfig128, 4096, 75);
  third.registers = 160;
  const RowSet set = rows.set();
  const Progression progression = build_progression(set, {"fp16", 4096, Baseline::fa2});

  const StepChange change = change_from_previous_step(progression, 3, set, Baseline::fa2);
  REQUIRE(change.previous != nullptr);
  CHECK(change.previous->subject.step() == 1);  // step 2 has no data
  const MetricChange& tflops = change.changes.front();
  CHECK(tflops.field == Field::tflops);
  CHECK(*tflops.relative_change() == doctest::Approx(0.5));
  for (const MetricChange& metric : change.changes) {
    if (metric.field == Field::registers) {
      CHECK(*metric.previous == 128);
      CHECK(*metric.current == 160);
    }
    if (metric.field == Field::l2_hit_pct) CHECK_FALSE(metric.current.has_value());
  }
  CHECK(change_from_previous_step(progression, 1, set, Baseline::fa2).previous == nullptr);
  CHECK(change_from_previous_step(progression, 2, set, Baseline::fa2).current == nullptr);
}

TEST_CASE("sweep series: fastest row per N, in the query's order") {
  Rows rows;
  rows.add("7", kConfig64, 1024, 100);
  rows.add("7", kConfig128, 1024, 120);
  rows.add("7", kConfig64, 4096, 150);
  rows.add("fa2", "", 1024, 240);
  rows.add("fa2", "", 4096, 300);
  const RowSet set = rows.set();

  CHECK(available_series_steps(set) ==
        std::vector<RowSubject>{RowSubject::kernel(7), RowSubject::baseline(Baseline::fa2)});
  SweepQuery query{
      {RowSubject::baseline(Baseline::fa2), RowSubject::kernel(7), RowSubject::kernel(9)},
      {"fp16"},
      ValueMode::tflops,
      Baseline::fa2};
  const auto series = build_sweep_series(set, query);
  REQUIRE(series.size() == 2);  // step 9 has no rows
  CHECK(series[0].label == "FA2 fp16");
  CHECK(series[1].points.size() == 2);
  CHECK(series[1].points[0].value == doctest::Approx(120));
  CHECK(series[1].points[1].seq_len == 4096);

  query.mode = ValueMode::percent_of_baseline;
  const auto percent = build_sweep_series(set, query);
  CHECK(percent[1].points[0].value == doctest::Approx(50));
  CHECK(percent[1].points[1].value == doctest::Approx(50));
}

TEST_CASE("autotune model: shapes from the config and the fastest config at each N") {
  Rows rows;
  rows.add("7", kConfig64, 1024, 100);
  rows.add("7", kConfig128, 1024, 120);
  rows.add("7", kConfig64, 2048, 140);
  rows.add("7", kConfig128, 2048, 130);
  rows.add("7", kConfig64, 2048, 10).config.reset();  // no config: drawn as "other"
  ResultRow& failing = rows.add("7", kConfig128, 1024, 999);
  failing.verdict = Verdict::fail;
  rows.add("8", kConfig128, 1024, 500);  // other step

  const AutotuneModel model = build_autotune_model(rows.set(), {7, "fp16", std::nullopt});
  CHECK(model.points.size() == 6);
  REQUIRE(model.shapes.size() == 2);
  CHECK(block_shape_label(model.shapes[0]) == "64x64");
  CHECK(block_shape_label(model.shapes[1]) == "128x64");
  CHECK(model.shape_index(std::nullopt) == 2);
  REQUIRE(model.fastest.size() == 2);
  CHECK(model.fastest[0]->tflops == doctest::Approx(120));  // the failing 999 does not count
  CHECK(model.fastest[1]->tflops == doctest::Approx(140));
  int highlighted = 0;
  for (const AutotunePoint& point : model.points)
    highlighted += point.fastest_at_seq_len;
  CHECK(highlighted == 2);

  const AutotuneModel at_2048 = build_autotune_model(rows.set(), {7, "", 2048});
  CHECK(at_2048.points.size() == 3);
}

TEST_CASE("table sort: several keys, missing values last in both directions") {
  Rows rows;
  ResultRow& a = rows.add("2", kConfig64, 4096, 100);
  a.registers = 200;
  ResultRow& b = rows.add("10", kConfig64, 4096, 300);
  ResultRow& c = rows.add("2", kConfig128, 1024, 200);
  c.registers = 100;
  const RowSet set = rows.set();
  std::vector<const ResultRow*> table{&a, &b, &c};

  const SortKey by_registers[] = {{Field::registers, false}};
  sort_rows(table, by_registers, set);
  CHECK(table == std::vector<const ResultRow*>{&c, &a, &b});
  const SortKey by_registers_descending[] = {{Field::registers, true}};
  sort_rows(table, by_registers_descending, set);
  CHECK(table == std::vector<const ResultRow*>{&a, &c, &b});

  const SortKey by_step_then_tflops[] = {{Field::step, true}, {Field::tflops, false}};
  sort_rows(table, by_step_then_tflops, set);
  CHECK(table == std::vector<const ResultRow*>{&b, &a, &c});  // 10 after 2 numerically
}

TEST_CASE("table filter: all terms match, '-' excludes, quotes group, step= and n= are exact") {
  Rows rows;
  ResultRow& a = rows.add("7", kConfig64, 4096, 100);
  ResultRow& b = rows.add("17", kConfig128, 1024, 100, "bf16");
  b.status = RowStatus::skipped("not built");

  CHECK(RowTextFilter("").matches(a));
  CHECK(RowTextFilter("LOAD_0_2_2").matches(a));
  CHECK_FALSE(RowTextFilter("load_0_2_2").matches(b));
  CHECK(RowTextFilter("eager bf16").matches(b));
  CHECK_FALSE(RowTextFilter("eager -bf16").matches(b));
  CHECK(RowTextFilter("\"128, 128, 64\"").matches(b));
  CHECK_FALSE(RowTextFilter("\"128, 128, 64\"").matches(a));
  CHECK(RowTextFilter("step=7").matches(a));
  CHECK_FALSE(RowTextFilter("step=7").matches(b));
  CHECK(RowTextFilter("n=1024").matches(b));
  CHECK_FALSE(RowTextFilter("n=102").matches(b));
  CHECK(RowTextFilter("skipped").matches(b));
  CHECK(filter_rows({&a, &b}, RowTextFilter("-skipped")) == std::vector<const ResultRow*>{&a});
}

TEST_CASE("field formatting") {
  Rows rows;
  ResultRow& row = rows.add("3", kConfig64, 2048, 123.456);
  row.l2_hit_pct = 97.26;
  const RowSet set = rows.set();
  CHECK(format_field(set, row, Field::tflops) == "123.5");
  CHECK(format_field(set, row, Field::registers) == "-");
  CHECK(format_field(set, row, Field::l2_hit_pct) == "97.3");
  CHECK(format_field(set, row, Field::seq_len) == "2048");
  CHECK(format_field(set, row, Field::config) == kConfig64);
  CHECK_FALSE(numeric_field(set, row, Field::pct_fa2).has_value());
}

TEST_CASE("what held a row's clock down, and its GPU state in one line") {
  Rows rows;
  ResultRow& row = rows.add("25", kConfig64, 4096, 600);
  row.sm_clock_mhz = 0;
  CHECK(clock_held_by(row).empty());
  CHECK(clock_summary(row) == "clock not recorded");
  row.sm_clock_mhz = 1545;
  row.sm_clock_min_mhz = 1530;
  row.sm_clock_max_mhz = 1560;
  row.power_mean_w = 691.4;
  row.power_limit_w = 700;
  row.temperature_max_c = 58;
  CHECK(clock_summary(row) ==
        "1545 MHz median (1530..1560), 691 W mean of a 700 W limit, 58 C max");
  row.clock_reasons = "power cap + SW thermal";
  CHECK(clock_held_by(row) == std::vector<std::string>{"power cap", "SW thermal"});
  CHECK(clock_summary(row) ==
        "1545 MHz median (1530..1560), 691 W mean of a 700 W limit, 58 C "
        "max, held by power cap, SW thermal");
  row.clock_reasons = "power cap";
  CHECK(clock_held_by(row) == std::vector<std::string>{"power cap"});
}

TEST_CASE("the FP8 error columns read as three significant digits, '-' where a row has none") {
  Rows rows;
  ResultRow& row = rows.add("28", kConfig64, 4096, 500);
  const RowSet set = rows.set();
  CHECK(format_field(set, row, Field::max_error_fp64) == "-");
  CHECK(format_field(set, row, Field::rms_error_fp64) == "-");
  row.max_error_fp64 = 0.0123456;
  row.rms_error_fp64 = 0.000987654;
  CHECK(format_field(set, row, Field::max_error_fp64) == "0.0123");
  CHECK(format_field(set, row, Field::rms_error_fp64) == "0.000988");
  CHECK(numeric_field(set, row, Field::rms_error_fp64) == doctest::Approx(0.000987654));
  CHECK(field_label(Field::max_error_fp64) == "max error vs fp64");
  CHECK(is_numeric_field(Field::rms_error_fp64));
}

TEST_CASE("compare pairs rows by measurement and reports B/A") {
  Rows a_rows, b_rows;
  a_rows.add("7", kConfig64, 4096, 100);
  a_rows.add("7", kConfig64, 4096, 90);  // duplicate: the faster copy is used
  a_rows.add("8", kConfig128, 4096, 200);
  a_rows.add("9", kConfig128, 4096, 150);  // only in A
  b_rows.add("7", kConfig64, 4096, 110);
  ResultRow& faulted = b_rows.add("8", kConfig128, 4096, 0);
  faulted.status = RowStatus::fault("timeout");
  b_rows.add("16", kConfig128, 4096, 300);  // only in B
  auto pointers = [](const Rows& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows.storage)
      out.push_back(&row);
    return out;
  };

  const Comparison comparison = compare_results(pointers(a_rows), pointers(b_rows));
  CHECK(comparison.paired == 2);
  CHECK(comparison.only_a == 1);
  CHECK(comparison.only_b == 1);
  REQUIRE(comparison.rows.size() == 4);
  CHECK(*comparison.rows[0].ratio == doctest::Approx(1.1));
  CHECK_FALSE(comparison.rows[1].ratio.has_value());  // B faulted
  CHECK(comparison.rows[3].a == nullptr);
  CHECK(*comparison.geometric_mean_ratio == doctest::Approx(1.1));
  REQUIRE(comparison.per_step.size() == 1);
  CHECK(comparison.per_step[0].subject.text() == "7");

  std::vector<ComparedRow> sorted = comparison.rows;
  const CompareSortKey by_ratio[] = {{CompareColumn::ratio, true}};
  sort_compared_rows(sorted, by_ratio);
  CHECK(sorted[0].ratio.has_value());
  const CompareSortKey by_step[] = {{CompareColumn::step, true}};
  sort_compared_rows(sorted, by_step);
  CHECK(sorted[0].b->step_number() == 16);
}

TEST_CASE("compare says when the two sides were measured against different references") {
  Rows a_rows, b_rows, old_rows;
  a_rows.add("30", kConfig64, 4096, 500);
  a_rows.add("cudnn", "", 4096, 420).reference_version = "cuDNN 9.19.0";
  a_rows.add("fa2", "", 4096, 300).reference_version = "PyTorch 2.11.0";
  b_rows.add("30", kConfig64, 4096, 505);
  b_rows.add("cudnn", "", 4096, 480).reference_version = "cuDNN 9.14.0";
  old_rows.add("cudnn", "", 4096, 400);  // a file from before the column
  const auto pointers = [](const Rows& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows.storage)
      out.push_back(&row);
    return out;
  };
  CHECK(reference_versions(pointers(a_rows)) ==
        std::vector<std::string>{"PyTorch 2.11.0", "cuDNN 9.19.0"});
  const std::optional<std::string> mismatch =
      reference_version_mismatch(pointers(a_rows), pointers(b_rows));
  REQUIRE(mismatch.has_value());
  CHECK(mismatch->find("A was measured against PyTorch 2.11.0, cuDNN 9.19.0, B against cuDNN "
                       "9.14.0") != std::string::npos);
  CHECK_FALSE(reference_version_mismatch(pointers(a_rows), pointers(a_rows)).has_value());
  CHECK_FALSE(reference_version_mismatch(pointers(a_rows), pointers(old_rows)).has_value());
}

TEST_CASE("compare calls a difference real only where the rows' intervals are disjoint") {
  Rows a_rows, b_rows;
  const auto with_interval = [](ResultRow& row, double low, double high) {
    row.ci_low_ms = low;
    row.ci_high_ms = high;
  };
  with_interval(a_rows.add("7", kConfig64, 1024, 100), 1.00, 1.02);
  with_interval(b_rows.add("7", kConfig64, 1024, 104), 0.96, 0.98);  // faster beyond both
  with_interval(a_rows.add("7", kConfig64, 2048, 100), 1.00, 1.02);
  with_interval(b_rows.add("7", kConfig64, 2048, 99), 1.01, 1.03);  // overlapping: noise
  with_interval(a_rows.add("7", kConfig64, 4096, 100), 1.00, 1.02);
  with_interval(b_rows.add("7", kConfig64, 4096, 95), 1.03, 1.05);  // slower beyond both
  a_rows.add("7", kConfig64, 8192, 100);                            // an older file: none
  with_interval(b_rows.add("7", kConfig64, 8192, 90), 1.10, 1.12);
  const auto pointers = [](const Rows& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows.storage)
      out.push_back(&row);
    return out;
  };
  const Comparison comparison = compare_results(pointers(a_rows), pointers(b_rows));
  REQUIRE(comparison.rows.size() == 4);
  CHECK(comparison.rows[0].significance == Significance::b_faster);
  CHECK(comparison.rows[1].significance == Significance::within_noise);
  CHECK(comparison.rows[2].significance == Significance::b_slower);
  CHECK(comparison.rows[3].significance == Significance::no_interval);
  CHECK(comparison.significance.b_faster == 1);
  CHECK(comparison.significance.b_slower == 1);
  CHECK(comparison.significance.within_noise == 1);
  CHECK(comparison.significance.no_interval == 1);
  CHECK(significance_name(Significance::within_noise) == "within the intervals");
}

TEST_CASE("config change between neighbouring steps") {
  const ConfigChange swizzle = describe_config_change(
      parse_short_form("(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles"),
      parse_short_form("(FP16, 128, 64, 64, 4): async+swizzled+load_0_0_0_tiles"));
  CHECK(swizzle.added_features == std::vector<std::string>{"swizzled"});
  CHECK(swizzle.removed_features.empty());
  CHECK(swizzle.previous_shape.empty());

  const ConfigChange shape =
      describe_config_change(parse_short_form(kConfig64), parse_short_form(kConfig128));
  CHECK(shape.previous_shape == "(FP16, 128, 64, 64, 4)");
  CHECK(shape.current_shape == "(FP16, 128, 128, 64, 4)");
  CHECK(shape.added_features == std::vector<std::string>{"load_2_2_2_tiles"});
  CHECK(shape.removed_features == std::vector<std::string>{"load_0_2_2_tiles"});
  CHECK(
      describe_config_change(parse_short_form(kConfig64), parse_short_form(kConfig64)).identical());
}

TEST_CASE("step titles") {
  CHECK(step_title(1) == "Base implementation");
  CHECK(step_title(16) == "Static GMEM stride");
  CHECK(step_title(17) == "Warpgroup MMA (wgmma)");
  CHECK(step_title(21) == "Intra-warpgroup overlap of GEMM and softmax");
  CHECK(step_title(0).empty());
  CHECK(step_title(configs::kLastStep + 1).empty());
}

TEST_CASE("every step has an embedded page entry") {
  // embed_step_pages.cmake embeds one page per step descriptor, with the descriptor's folder.
  REQUIRE(embedded_step_pages().size() == configs::steps().size());
  for (const configs::StepInfo& info : configs::steps()) {
    const StepPage* page = embedded_step_page(info.step);
    REQUIRE(page != nullptr);
    CHECK(page->step == info.step);
    CHECK(page->source_folder == "kernels/versions/" + std::string(info.source_folder));
    CHECK_FALSE(page->diff_summary.empty());
  }
  CHECK(embedded_step_page(3)->source_folder == "kernels/versions/v01_07");
  CHECK(embedded_step_page(9)->source_folder == "kernels/versions/v09");
  CHECK(embedded_step_page(12)->doc_path == "docs/versions/12.md");
  CHECK(embedded_step_page(18)->source_folder == "kernels/versions/v18");
  // The backward steps: their own pages, B2 diffed against B1 and B1 against nothing.
  const StepPage* b1 = embedded_step_page(kFirstBackwardStep);
  REQUIRE(b1 != nullptr);
  CHECK(b1->doc_path == "docs/versions/B1.md");
  CHECK(b1->source_diff.empty());
  const StepPage* b2 = embedded_step_page(kFirstBackwardStep + 1);
  REQUIRE(b2 != nullptr);
  CHECK(b2->doc_path == "docs/versions/B2.md");
  CHECK(b2->source_folder == "kernels/versions/b02");
  CHECK(std::string(b2->diff_summary).find("kernels/versions/b01 kernels/versions/b02") !=
        std::string::npos);
  CHECK(embedded_step_page(0) == nullptr);
  CHECK(embedded_step_page(configs::kLastStep + 1) == nullptr);
}

TEST_CASE("loading: bad files become problems naming the file; good files still load") {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / "flashscope_explorer_model_test";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder / "h100");
  {
    std::ofstream good(folder / "h100" / "good.csv");
    ResultsCsvWriter writer(good);
    Rows rows;
    writer.write(rows.add("1", kConfig64, 4096, 100));
  }
  { std::ofstream(folder / "foreign.csv") << "name,value\nfoo,1\n"; }
  { std::ofstream(folder / "notes.txt") << "not a csv\n"; }

  const auto paths = find_result_csvs(folder);
  REQUIRE(paths.size() == 2);
  CHECK(std::filesystem::path(paths[0]).filename() == "foreign.csv");
  CHECK(find_result_csvs(folder / "missing").empty());

  std::vector<std::string> to_load = paths;
  to_load.push_back((folder / "absent.csv").string());
  const LoadOutcome outcome = load_result_files(to_load);
  INFO("problems: ", outcome.problems.size() > 0 ? outcome.problems[0] : "");
  REQUIRE(outcome.files.size() == 1);
  CHECK(outcome.files[0].label == "h100/good.csv");
  CHECK(outcome.files[0].rows.size() == 1);
  REQUIRE(outcome.problems.size() == 2);
  CHECK(outcome.problems[0].find("foreign.csv") != std::string::npos);
  CHECK(outcome.problems[1].find("absent.csv") != std::string::npos);
  std::filesystem::remove_all(folder);
}

TEST_CASE("row selection filters shown files by device and cache mode") {
  std::vector<ResultFile> files(2);
  Rows rows;
  files[0].rows.push_back(rows.add("1", kConfig64, 4096, 100));
  files[0].rows.push_back(rows.add("2", kConfig64, 4096, 100));
  files[0].rows[1].device = "other device";
  files[1].rows.push_back(rows.add("3", kConfig64, 4096, 100));
  files[1].rows[0].cache_mode = "cold";

  CHECK(select_rows(files, {}).size() == 3);
  CHECK(select_rows(files, {"test device", ""}).size() == 2);
  CHECK(select_rows(files, {"test device", "warm"}).size() == 1);
  files[0].shown = false;
  CHECK(select_rows(files, {}).size() == 1);
  CHECK(distinct_devices(files) == std::vector<std::string>{"other device", "test device"});
  CHECK(distinct_cache_modes(files) == std::vector<std::string>{"cold", "warm"});
}

TEST_CASE("row selection keeps one head dimension: views never mix rows of different d_head") {
  std::vector<ResultFile> files(2);
  Rows rows;
  files[0].rows.push_back(rows.add("22", "", 4096, 600));
  files[0].rows.push_back(rows.add("22", "", 4096, 500));
  files[0].rows[1].problem.d_head = 64;
  files[0].rows.push_back(rows.add("cudnn", "", 4096, 550));
  files[0].rows[2].problem.d_head = 64;
  files[1].rows.push_back(rows.add("22", "", 4096, 650));
  files[1].rows[0].problem.d_head = 256;

  CHECK(workload_axis_values(distinct_workloads(files), {}, Axis::d_head) ==
        std::vector<int>{64, 128, 256});
  // The plain value (128) first when present, else the smallest.
  CHECK(repaired_workload(distinct_workloads(files), {}).at(Axis::d_head) == 128);
  CHECK(repaired_workload({multi_head_problem(DType::FP16, 0, 0, 16, 64),
                           multi_head_problem(DType::FP16, 0, 0, 16, 256)},
                          {})
            .at(Axis::d_head) == 64);
  CHECK(repaired_workload({}, {}).empty());
  RowFilter filter;
  CHECK(select_rows(files, filter).size() == 4);  // no axis selected: every d_head
  filter.workload[Axis::d_head] = 64;
  const std::vector<const ResultRow*> at_64 = select_rows(files, filter);
  REQUIRE(at_64.size() == 2);
  for (const ResultRow* row : at_64)
    CHECK(row->problem.d_head == 64);
  // The progression at d_head 64 compares step 22 with the reference at 64 only.
  const RowSet set(at_64);
  const Progression progression = build_progression(set, {"fp16", 4096, Baseline::cudnn});
  const StepValue* step_22 = progression.find_step(22);
  REQUIRE(step_22 != nullptr);
  CHECK(step_22->tflops == doctest::Approx(500));
  REQUIRE(step_22->percent_by(PercentBasis::time).has_value());
  CHECK(*step_22->percent_by(PercentBasis::time) == doctest::Approx(500.0 / 550.0 * 100.0));
  filter.workload[Axis::d_head] = 256;
  CHECK(select_rows(files, filter).size() == 1);
  files[1].shown = false;  // hidden files' head dimensions are not offered
  CHECK(workload_axis_values(distinct_workloads(files), {}, Axis::d_head) ==
        std::vector<int>{64, 128});
}

TEST_CASE("a backward row pairs with the backward references only, never a forward row") {
  std::vector<ResultFile> files(1);
  Rows rows;
  // The forward and the backward of one shape in one run: step 26 and its cuDNN forward, step B2
  // (102) and cuDNN's backward.
  const std::string b2 = "(FP16, 128, 64, 128, 8): async+eager+swizzled+load_0_0_0_tiles+buffer";
  files[0].rows.push_back(
      rows.add("26", "(FP16, 128, 128, 128, 12): stages_2+regs_240", 4096, 600));
  files[0].rows.push_back(rows.add("cudnn", "", 4096, 550));
  files[0].rows.push_back(rows.add("B2", b2, 4096, 300));
  files[0].rows.back().problem.pass = Pass::backward;
  files[0].rows.push_back(rows.add("cudnn", "", 4096, 400));
  files[0].rows.back().problem.pass = Pass::backward;
  const RowSet both(select_rows(files, RowFilter{}));
  const ResultRow& forward_26 = files[0].rows[0];
  const ResultRow& backward_b2 = files[0].rows[2];
  CHECK(backward_b2.subject.step() == std::optional<int>(102));
  CHECK(both.baseline_for(backward_b2, Baseline::cudnn) == &files[0].rows[3]);
  CHECK(both.baseline_for(forward_26, Baseline::cudnn) == &files[0].rows[1]);
  CHECK(*both.percent_of_baseline(backward_b2, Baseline::cudnn) == doctest::Approx(75));
  // No FA2 backward row: no pairing, rather than FA2's forward.
  CHECK(both.baseline_for(backward_b2, Baseline::fa2) == nullptr);
  // A view selects one pass at a time.
  RowFilter backward_only;
  backward_only.workload[Axis::pass] = static_cast<int>(Pass::backward);
  const std::vector<const ResultRow*> backward = select_rows(files, backward_only);
  REQUIRE(backward.size() == 2);
  for (const ResultRow* row : backward)
    CHECK(row->problem.pass == Pass::backward);
}

TEST_CASE("views keep one workload: selection, baseline pairing and autotune picks per mask") {
  std::vector<ResultFile> files(1);
  Rows rows;
  files[0].rows.push_back(rows.add("22", kConfig64, 4096, 600));
  files[0].rows.push_back(rows.add("cudnn", "", 4096, 550));
  // The causal rows of the same shape: half the FLOP, their own (causal) reference.
  files[0].rows.push_back(rows.add("22", kConfig64, 4096, 300));
  files[0].rows.back().problem.causal = true;
  files[0].rows.push_back(rows.add("cudnn", "", 4096, 200));
  files[0].rows.back().problem.causal = true;

  CHECK(workload_axis_values(distinct_workloads(files), {}, Axis::causal) ==
        std::vector<int>{0, 1});
  CHECK(workload_value_label(Axis::causal, 1, {}) == "causal");
  CHECK(workload_value_label(Axis::causal, 0, {}) == "non-causal");
  // The plain workload (no mask) is the one a view starts with.
  CHECK(repaired_workload(distinct_workloads(files), {}).at(Axis::causal) == 0);
  RowFilter filter;
  CHECK(select_rows(files, filter).size() == 4);  // no axis selected: both (the caller splits)
  filter.workload[Axis::causal] = 1;
  const std::vector<const ResultRow*> causal = select_rows(files, filter);
  REQUIRE(causal.size() == 2);
  for (const ResultRow* row : causal)
    CHECK(row->problem.causal);
  filter.workload[Axis::causal] = 0;
  CHECK(select_rows(files, filter).size() == 2);

  // Even in a set holding both, a kernel row pairs with the reference of its own workload.
  filter.workload.erase(Axis::causal);
  const RowSet both(select_rows(files, filter));
  const ResultRow& causal_22 = files[0].rows[2];
  const ResultRow& unmasked_22 = files[0].rows[0];
  CHECK(both.baseline_for(causal_22, Baseline::cudnn) == &files[0].rows[3]);
  CHECK(both.baseline_for(unmasked_22, Baseline::cudnn) == &files[0].rows[1]);
  CHECK(*both.percent_of_baseline(causal_22, Baseline::cudnn) == doctest::Approx(150));
  CHECK(*both.percent_of_baseline(unmasked_22, Baseline::cudnn) ==
        doctest::Approx(600.0 / 550.0 * 100.0));
  // The causal progression compares step 22 with the causal reference.
  const RowSet causal_set(causal);
  // The progression owns the step values: keep it alive while step_22 points into it.
  const Progression causal_progression =
      build_progression(causal_set, {"fp16", 4096, Baseline::cudnn});
  const StepValue* step_22 = causal_progression.find_step(22);
  REQUIRE(step_22 != nullptr);
  CHECK(step_22->tflops == doctest::Approx(300));
  CHECK(*step_22->percent_by(PercentBasis::time) == doctest::Approx(150));

  // Autotune: a fastest config per workload, the causal row never beaten by the unmasked one.
  const AutotuneModel model = build_autotune_model(both, {22, "fp16", 4096});
  REQUIRE(model.fastest.size() == 2);
  CHECK_FALSE(model.fastest[0]->problem.causal);
  CHECK(model.fastest[1]->problem.causal);
  AutotuneQuery causal_only{22, "fp16", 4096};
  causal_only.workload[Axis::causal] = 1;
  const AutotuneModel causal_model = build_autotune_model(both, causal_only);
  REQUIRE(causal_model.fastest.size() == 1);
  CHECK(causal_model.fastest[0]->tflops == doctest::Approx(300));

  files[0].rows[2].problem.causal = false;  // hidden or absent workloads are not offered
  files[0].rows[3].problem.causal = false;
  CHECK(workload_axis_values(distinct_workloads(files), {}, Axis::causal) == std::vector<int>{0});
}

TEST_CASE("views keep one head grouping: selectors per axis, values consistent with the others") {
  // Multi-head rows at 16 heads, and grouped rows at 32 heads with 8 K/V heads and at 64 with 8.
  std::vector<ResultFile> files(1);
  Rows rows;
  files[0].rows.push_back(rows.add("25", kConfig64, 4096, 600));
  for (const int heads : {32, 64}) {
    for (const char* step : {"26", "cudnn"}) {
      ResultRow& row = rows.add(step, std::string(step) == "26" ? kConfig64 : "", 4096, 500);
      row.problem.heads = heads;
      row.problem.heads_kv = 8;
      files[0].rows.push_back(row);
    }
  }
  const std::vector<Problem> workloads = distinct_workloads(files);
  REQUIRE(workloads.size() == 3);
  // The plain workload (16 heads, multi-head) first; a selector lists the values present with
  // the values chosen for the axes before it.
  WorkloadSelection selection = repaired_workload(workloads, {});
  CHECK(selection.at(Axis::heads) == 16);
  CHECK(selection.at(Axis::heads_kv) == 16);
  CHECK(workload_axis_values(workloads, selection, Axis::heads) == std::vector<int>{16, 32, 64});
  CHECK(workload_axis_values(workloads, selection, Axis::heads_kv) == std::vector<int>{16});
  // Choosing 64 heads moves heads_kv to the value present with it.
  selection[Axis::heads] = 64;
  selection = repaired_workload(workloads, selection);
  CHECK(selection.at(Axis::heads_kv) == 8);
  CHECK(workload_value_label(Axis::heads_kv, 8, selection) == "8 (groups of 8)");
  RowFilter filter;
  filter.workload = selection;
  const std::vector<const ResultRow*> grouped = select_rows(files, filter);
  REQUIRE(grouped.size() == 2);
  for (const ResultRow* row : grouped) {
    CHECK(row->problem.heads == 64);
    CHECK(row->problem.heads_kv == 8);
  }
  // A grouped kernel row pairs with the grouped reference of its own heads only.
  const RowSet set(grouped);
  CHECK(set.baseline_for(*grouped[0], Baseline::cudnn) == grouped[1]);
}

// Fuzz findings (docs/hardening.md): step column values a results CSV may hold.
TEST_CASE("fuzz finding: a long digit string in the step column is no step, no overflow") {
  // Summing every digit of "18446744073709551616" overflowed an int (UBSan) before the length
  // rule applied; the typed step column now refuses any text it would not write back.
  CHECK_FALSE(RowSubject::from_text("18446744073709551616"));
  CHECK_FALSE(RowSubject::from_text("2147483648"));
  CHECK_FALSE(RowSubject::from_text("0016"));
  CHECK_FALSE(RowSubject::from_text("016"));
  CHECK_FALSE(RowSubject::from_text("0"));
  CHECK_FALSE(RowSubject::from_text("+7"));
  CHECK_FALSE(RowSubject::from_text("peak:"));
  // Forward steps are numbered below the backward ones (101 on, spelt B1, B2, ...): a number
  // there is no forward step, and a backward one is read only as written.
  CHECK_FALSE(RowSubject::from_text("2147483647"));
  CHECK_FALSE(RowSubject::from_text("101"));
  CHECK(RowSubject::from_text("100")->step() == 100);
  CHECK(RowSubject::from_text("16")->step() == 16);
  CHECK(RowSubject::from_text("B1")->step() == kFirstBackwardStep);
  CHECK(RowSubject::from_text("B1")->text() == "B1");
  CHECK_FALSE(RowSubject::from_text("B0"));
  CHECK_FALSE(RowSubject::from_text("B01"));
  CHECK_FALSE(RowSubject::from_text("b1"));
  CHECK(RowSubject::from_text("peak:wgmma")->benchmark() == "wgmma");
}

TEST_CASE("GPUs of one model stay separable: by index, by UUID prefix, in filters and tables") {
  Rows rows;
  ResultRow& gpu0 = rows.add("7", kConfig64, 4096, 100);
  gpu0.device_index = 0;
  gpu0.device_uuid = "GPU-8e5b7a0c-0000-4000-8000-000000000000";
  ResultRow& gpu1 = rows.add("7", kConfig64, 4096, 97);
  gpu1.device_index = 1;
  gpu1.device_uuid = "GPU-1f2e3d4c-0000-4000-8000-000000000001";
  ResultRow& old = rows.add("8", kConfig64, 4096, 90);         // a file from before the columns
  ResultRow& other_host = rows.add("9", kConfig64, 4096, 95);  // GPU 1 of another machine
  other_host.device_index = 1;
  other_host.device_uuid = "GPU-aaaaaaaa-0000-4000-8000-000000000002";

  CHECK(gpu_matches(gpu0, ""));
  CHECK(gpu_matches(gpu0, "0"));
  CHECK_FALSE(gpu_matches(gpu0, "1"));
  CHECK(gpu_matches(gpu0, "GPU-8E5B"));  // case does not matter
  CHECK(gpu_matches(gpu0, gpu0.device_uuid));
  CHECK_FALSE(gpu_matches(gpu1, "GPU-8e5b"));
  CHECK_FALSE(gpu_matches(old, "0"));  // no index: only "" matches
  CHECK_FALSE(gpu_matches(old, "GPU-"));
  CHECK(gpu_matches(old, ""));

  std::vector<const ResultRow*> pointers;
  for (const ResultRow& row : rows.storage)
    pointers.push_back(&row);
  const std::vector<DeviceUnit> units = device_units(pointers);
  REQUIRE(units.size() == 4);  // index 1 twice, on two machines: told apart by the UUID
  CHECK_FALSE(units[0].index.has_value());  // sorted: no index first
  CHECK(units[0].label() == "test device");
  CHECK(units[0].selector().empty());
  CHECK(*units[1].index == 0);
  CHECK(units[1].label() == "GPU 0 · GPU-8e5b7a0c");
  CHECK(units[1].label(true) == "test device · GPU 0 · GPU-8e5b7a0c");
  CHECK(units[1].selector() == gpu0.device_uuid);
  CHECK(units[2].uuid == gpu1.device_uuid);
  CHECK(units[3].uuid == other_host.device_uuid);
  for (const DeviceUnit& unit : units)
    CHECK(unit.rows == 1);

  CHECK(rows_on_gpu(pointers, "1").size() == 2);  // the index alone: both machines' GPU 1
  CHECK(rows_on_gpu(pointers, units[2].selector()).size() == 1);
  CHECK(rows_on_gpu(pointers, "").size() == 4);

  std::vector<ResultFile> files(1);
  for (const ResultRow& row : rows.storage)
    files[0].rows.push_back(row);
  RowFilter filter;
  filter.gpu = "GPU-1f2e";
  REQUIRE(select_rows(files, filter).size() == 1);
  CHECK(select_rows(files, filter)[0]->tflops == 97);
  filter.gpu = "0";
  CHECK(select_rows(files, filter).size() == 1);

  CHECK(RowTextFilter("gpu=1").matches(gpu1));
  CHECK_FALSE(RowTextFilter("gpu=1").matches(gpu0));
  CHECK(RowTextFilter("gpu=gpu-8e5b").matches(gpu0));
  CHECK(RowTextFilter("-gpu=0").matches(gpu1));
  CHECK_FALSE(RowTextFilter("gpu=0").matches(old));
}

TEST_CASE("two GPUs side by side: the comparison of their rows and the spread of B / A") {
  Rows a_rows, b_rows;
  for (int n : {512, 1024, 2048, 4096, 8192}) {
    a_rows.add("7", kConfig64, n, 100);
    ResultRow& b = b_rows.add("7", kConfig64, n, n == 8192 ? 110 : 102);  // +2 %, one +10 %
    b.device_index = n == 512 ? 0 : 1;
  }
  const auto pointers = [](const Rows& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows.storage)
      out.push_back(&row);
    return out;
  };
  const Comparison comparison = compare_results(pointers(a_rows), pointers(b_rows));
  const std::optional<RatioSpread> spread = ratio_spread(comparison.rows);
  REQUIRE(spread.has_value());
  CHECK(spread->pairs == 5);
  CHECK(spread->median_percent == doctest::Approx(2.0));
  CHECK(spread->max_percent == doctest::Approx(10.0));
  CHECK(spread->p95_percent == doctest::Approx(10.0));  // nearest rank of 5 values: the 5th
  REQUIRE(spread->worst != nullptr);
  CHECK(spread->worst->b->problem.seq_len == 8192);
  const auto on_gpu0 = [](const ResultRow& b) { return b.device_index == 0; };
  const std::optional<RatioSpread> gpu0 = ratio_spread(comparison.rows, on_gpu0);
  REQUIRE(gpu0.has_value());
  CHECK(gpu0->pairs == 1);
  CHECK(gpu0->median_percent == doctest::Approx(2.0));
  // An even count: the mean of the middle two (2, 2, 4, 6 %: 3 %).
  a_rows.storage.pop_front();
  b_rows.storage.pop_front();
  b_rows.storage[2].tflops = 106;
  b_rows.storage[3].tflops = 104;
  const Comparison even = compare_results(pointers(a_rows), pointers(b_rows));
  CHECK(ratio_spread(even.rows)->median_percent == doctest::Approx(3.0));
  CHECK_FALSE(ratio_spread({}).has_value());
}

TEST_CASE("compare pairs a reference's two passes each with its own") {
  Rows a_rows, b_rows;
  for (Rows* rows : {&a_rows, &b_rows}) {
    const double speed = rows == &a_rows ? 100 : 110;
    rows->add("fa2", "", 4096, speed).reference_pass = 1;
    rows->add("fa2", "", 4096, speed * 0.98).reference_pass = 2;
  }
  ResultRow& old = a_rows.add("cudnn", "", 4096, 200);  // a file from before the passes: pass 1
  b_rows.add("cudnn", "", 4096, 220).reference_pass = 1;
  (void)old;
  const auto pointers = [](const Rows& rows) {
    std::vector<const ResultRow*> out;
    for (const ResultRow& row : rows.storage)
      out.push_back(&row);
    return out;
  };
  const Comparison comparison = compare_results(pointers(a_rows), pointers(b_rows));
  CHECK(comparison.paired == 3);
  CHECK(comparison.only_a == 0);
  CHECK(comparison.only_b == 0);
  for (const ComparedRow& row : comparison.rows) {
    REQUIRE(row.ratio.has_value());
    CHECK(*row.ratio == doctest::Approx(1.1));  // pass 1 with pass 1, pass 2 with pass 2
  }
}

// ---- Step pages as the detail view renders them (explorer/model/markdown.hpp) -----------------

TEST_CASE("markdown: code spans lose their backticks, generated-block markers disappear") {
  const std::string page =
      "# Step 9: reducing `MOV`\n"
      "\n"
      "Seed picks: A100 `(FP16, 128, 128, 64, 4): async+eager`, and **bold** text\n"
      "continued on a second line with a [link to `07.md`](07.md).\n"
      "\n"
      "* **K fragments** (`K_lane`, `load_K_fragments`). Lanes 0-7\n"
      "  address rows 0-7.\n"
      "  * nested\n"
      "\n"
      "<!-- flashscope:begin step-09 -->\n"
      "| dtype | config | time (ms) |\n"
      "| --- | --- | ---: |\n"
      "| fp16 | `(FP16, 128, 128, 64, 4): a|b` | 5.991 |\n"
      "<!-- flashscope:end step-09 -->\n"
      "```\n"
      "explorer sass --step 9\n"
      "```\n";
  const std::vector<MarkdownBlock> blocks = parse_markdown(page);
  REQUIRE(blocks.size() == 6);
  CHECK(blocks[0].kind == MarkdownBlockKind::heading);
  CHECK(blocks[0].level == 1);
  CHECK(blocks[0].text == MarkdownLine{{"Step 9: reducing ", false, false}, {"MOV", true, false}});
  CHECK(blocks[1].kind == MarkdownBlockKind::paragraph);
  CHECK(blocks[1].text ==
        MarkdownLine{{"Seed picks: A100 ", false, false},
                     {"(FP16, 128, 128, 64, 4): async+eager", true, false},
                     {", and ", false, false},
                     {"bold", false, true},
                     {" text continued on a second line with a link to ", false, false},
                     {"07.md", true, false},
                     {".", false, false}});
  CHECK(blocks[2].kind == MarkdownBlockKind::list_item);
  CHECK(blocks[2].level == 0);
  CHECK(blocks[2].text.back().text == "). Lanes 0-7 address rows 0-7.");
  CHECK(blocks[3].kind == MarkdownBlockKind::list_item);
  CHECK(blocks[3].level == 1);
  CHECK(blocks[4].kind == MarkdownBlockKind::table);
  REQUIRE(blocks[4].rows.size() == 2);  // header and one row; the separator is alignment
  CHECK(blocks[4].right_aligned == std::vector<bool>{false, false, true});
  CHECK(blocks[4].rows[1][1] == MarkdownLine{{"(FP16, 128, 128, 64, 4): a|b", true, false}});
  CHECK(blocks[4].rows[1][2] == MarkdownLine{{"5.991", false, false}});
  CHECK(blocks[5].kind == MarkdownBlockKind::code);
  CHECK(blocks[5].code_lines == std::vector<std::string>{"explorer sass --step 9"});
  for (const std::string& text : visible_texts(blocks)) {
    CHECK(text.find('`') == std::string::npos);
    CHECK(text.find("<!--") == std::string::npos);
    CHECK(text.find("flashscope:") == std::string::npos);
    CHECK(text.find("**") == std::string::npos);
  }
}

TEST_CASE("markdown: every embedded step page renders without raw markers or backticks") {
  int pages = 0;
  for (const StepPage& page : embedded_step_pages()) {
    if (page.doc_markdown.empty()) continue;
    ++pages;
    const std::vector<MarkdownBlock> blocks = parse_markdown(page.doc_markdown);
    CHECK(!blocks.empty());
    for (const MarkdownBlock& block : blocks) {
      std::vector<MarkdownBlock> one{block};
      if (block.kind == MarkdownBlockKind::code) continue;  // code blocks are shown verbatim
      for (const std::string& text : visible_texts(one)) {
        INFO(page.doc_path, ": ", text);
        CHECK(text.find('`') == std::string::npos);
        CHECK(text.find("<!--") == std::string::npos);
        CHECK(text.find("-->") == std::string::npos);
        CHECK(text.find("**") == std::string::npos);
      }
    }
  }
  CHECK(pages > 0);
}

// ---- The pair Compare opens on (issue 22) ------------------------------------------------------

namespace {

ResultFile file_of(std::string label, const std::vector<std::string>& steps, std::string device,
                   std::string run_id, int seq_len = 4096) {
  ResultFile file;
  file.label = std::move(label);
  for (const std::string& step : steps) {
    ResultRow row;
    row.subject = *RowSubject::from_text(step);
    if (step != "fa2") row.config = parse_short_form(kConfig64);
    row.problem.dtype = DType::FP16;
    row.problem.batch = 16;
    row.problem.heads = 16;
    row.problem.heads_kv = row.problem.heads;
    row.problem.seq_len = seq_len;
    row.tflops = 100;
    row.median_ms = 10;
    row.verdict = Verdict::pass;
    row.device = device;
    row.cache_mode = "warm";
    row.run_id = run_id;
    file.rows.push_back(row);
  }
  return file;
}

}  // namespace

TEST_CASE("Compare opens on the two newest runs of one device that share measurements") {
  std::vector<ResultFile> files;
  files.push_back(file_of("peak.csv", {"peak:hbm.read"}, "H200", "vm 2026-11-23T15:00:00Z"));
  files.push_back(file_of("old.csv", {"1", "2", "fa2"}, "H200", ""));  // no run start: oldest
  files.push_back(file_of("mid.csv", {"1", "2"}, "H200", "vm 2026-11-22T10:00:00Z"));
  files.push_back(file_of("new.csv", {"1", "2", "3"}, "H200", "vm 2026-11-23T14:56:21Z"));
  files.push_back(file_of("other_n.csv", {"1", "2"}, "H200", "vm 2026-11-24T09:00:00Z", 8192));
  files.push_back(file_of("h100.csv", {"1", "2"}, "H100", "vm 2026-11-25T09:00:00Z"));

  const auto pair = default_compare_pair(files, "H200");
  REQUIRE(pair.has_value());
  CHECK(pair->a == 2);  // the older of the two newest runs with shared cells...
  CHECK(pair->b == 3);  // ...and the newest; other_n.csv is newer but shares nothing
  CHECK(pair->shared == 2);
  CHECK(pair->device == "H200");
  // The rows of the chosen pair really pair.
  std::vector<const ResultRow*> a, b;
  for (const ResultRow& row : files[pair->a].rows)
    a.push_back(&row);
  for (const ResultRow& row : files[pair->b].rows)
    b.push_back(&row);
  CHECK(compare_results(a, b).paired == 2);

  // Without a device filter, any one device: the H100 file has no partner, so still H200.
  const auto any = default_compare_pair(files, "");
  REQUIRE(any.has_value());
  CHECK(any->device == "H200");

  // Nothing shared (the shipped case that opened on "0 paired"): no default, the view says so.
  const std::vector<ResultFile> unrelated{files[0], files[4], files[5]};
  CHECK_FALSE(default_compare_pair(unrelated, "H200").has_value());
  CHECK(run_start(files[3].rows[0]) == "2026-11-23T14:56:21Z");
  CHECK(run_start(files[1].rows[0]).empty());
}

TEST_CASE("Compare prefers a re-run to two newer sweeps that share a few reference rows") {
  // The shipped case that opened on h200/causal.csv against h200/d-heads-25.csv: two unrelated
  // new sweeps sharing their cuDNN rows, while an older file re-measured most of another's.
  std::vector<ResultFile> files;
  files.push_back(file_of("progression.csv", {"1", "2", "3", "4", "5", "6", "7", "8"}, "H200", ""));
  files.push_back(file_of("progression-4096.csv", {"2", "3", "4", "5", "9"}, "H200",
                          "vm 2026-11-23T14:56:21Z"));
  files.push_back(file_of("causal.csv", {"fa2", "22", "23", "24", "25"}, "H200",
                          "vm 2026-11-25T00:11:17Z", 8192));
  files.push_back(file_of("d-heads-25.csv", {"fa2", "11", "12", "13", "14", "15", "16"}, "H200",
                          "vm 2026-11-25T01:26:56Z", 8192));
  const auto pair = default_compare_pair(files, "H200");
  REQUIRE(pair.has_value());
  CHECK(files[pair->a].label == "progression.csv");  // no run start: the older side
  CHECK(files[pair->b].label == "progression-4096.csv");
  CHECK(pair->shared == 4);
  CHECK(pair->overlap == doctest::Approx(0.8));
  // Without any re-run, the largest overlap fraction wins over the newest.
  const std::vector<ResultFile> no_rerun{
      file_of("a.csv", {"fa2", "1", "2", "3"}, "H200", "vm 2026-11-25T00:00:00Z"),
      file_of("b.csv", {"fa2", "4", "5", "6"}, "H200", "vm 2026-11-26T00:00:00Z"),
      file_of("c.csv", {"fa2", "1", "7", "8", "9", "10"}, "H200", "vm 2026-11-20T00:00:00Z")};
  const auto fallback = default_compare_pair(no_rerun, "H200");
  REQUIRE(fallback.has_value());
  CHECK(fallback->shared == 2);  // a.csv and c.csv: 2 of 4; the newest pair shares 1 of 4
  CHECK(no_rerun[fallback->a].label == "c.csv");
  CHECK(no_rerun[fallback->b].label == "a.csv");
}
