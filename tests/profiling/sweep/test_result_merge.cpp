// Joining a sharded sweep's CSVs (`explorer merge`) and comparing two runs (`explorer compare`),
// without a GPU: schema and duplicate checks, coverage against the selection's plan, the exit
// codes, and that a refused merge writes nothing.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/registry.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/sweep/result_merge.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "tests/profiling/sweep/scratch_files.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;
};

ProcessResult run_explorer(const std::string& arguments) {
  const std::string command =
      "CUDA_VISIBLE_DEVICES=-1 '" FLASHSCOPE_EXPLORER_PATH "' " + arguments + " 2>&1";
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t count = 0;
  while ((count = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, count);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The measured row a sweep would write for `item` on GPU `device`.
ResultRow row_for(const MeasurementItem& item, int device, double tflops = 100) {
  ResultRow row;
  row.subject = item.subject;
  row.config = item.config;
  row.problem.dtype = item.problem.dtype;
  row.problem.d_head = item.problem.d_head;
  row.problem.batch = item.problem.batch;
  row.problem.heads = item.problem.heads;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = item.problem.seq_len;
  row.runs = 10;
  row.tflops = tflops;
  row.median_ms = 1000 / tflops;
  row.min_ms = row.median_ms;
  row.max_ms = row.median_ms;
  row.seed_attn_tflops = tflops * 1.01;
  row.verdict = Verdict::pass;
  row.device = "NVIDIA H200";
  row.device_index = device;
  row.device_uuid = "GPU-0000000" + std::to_string(device) + "-aaaa-bbbb-cccc-dddddddddddd";
  row.cache_mode = "warm";
  row.git_commit = "0123456789ab";
  row.input_seed = 42;
  if (item.is_baseline()) row.reference_pass = item.reference_pass;
  return row;
}

// The selection every test uses: the binary's first built step, fp16, four lengths, cuDNN only
// (a CI build has no fa2), as explorer options and as the plan they give.
const KernelEntry& first_fp16_kernel() {
  for (const KernelEntry* entry : built_kernels().entries())
    if (entry->config.dtype == DType::FP16) return *entry;
  throw std::logic_error("this build has no fp16 kernel");
}

std::string selection_arguments() {
  return "--steps " + std::to_string(first_fp16_kernel().step) +
         " --dtypes fp16 --seq-lens 512,1024,2048,4096 --reference cudnn --set built";
}

SweepOptions selection_options() {
  SweepOptions options;
  options.steps = {first_fp16_kernel().step};
  options.axes[Axis::dtype] = {static_cast<int>(DType::FP16)};
  options.axes[Axis::seq_len] = {512, 1024, 2048, 4096};
  options.baselines = {"cudnn"};
  options.set_key = "built";
  return options;
}

// Writes the rows of the shard `index` of `count` of the selection (all of it for count 1).
std::string write_shard(const std::string& dir, int index, int count,
                        const std::vector<std::string>& extra_metrics = {}) {
  SweepOptions options = selection_options();
  if (count > 1) options.shard = PlanShard{index, count};
  const SweepPlan plan = plan_sweep(options, built_kernels(), built_baselines());
  const std::string path = dir + "/shard" + std::to_string(index) + ".csv";
  std::ofstream out(path);
  ResultsCsvWriter writer(out, extra_metrics);
  for (const SweepUnit& unit : plan.units)
    for (const MeasurementItem& item : unit.items)
      if (item.recorded) writer.write(row_for(item, index % 2));
  return path;
}

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

ResultsFileContents contents_of(std::vector<ResultRow> rows, std::string path,
                                std::vector<std::string> extra_metrics = {}) {
  ResultsFileContents file;
  file.path = std::move(path);
  file.columns = result_columns();
  for (const std::string& metric : extra_metrics)
    file.columns.push_back("metric:" + metric);
  file.extra_metric_names = std::move(extra_metrics);
  file.rows = std::move(rows);
  return file;
}

}  // namespace

TEST_CASE("merge joins shards that fit and lists the plan cells none of them has") {
  const SweepPlan plan = plan_sweep(selection_options(), built_kernels(), built_baselines());
  std::vector<MeasurementItem> items;
  for (const SweepUnit& unit : plan.units)
    items.insert(items.end(), unit.items.begin(), unit.items.end());
  REQUIRE(items.size() >= 8);  // cudnn and at least one kernel, at four lengths

  // Two files, all cells but the last, which no file has.
  std::vector<ResultRow> first, second;
  for (std::size_t i = 0; i + 1 < items.size(); ++i)
    (i % 2 == 0 ? first : second).push_back(row_for(items[i], static_cast<int>(i % 2)));
  ResultRow outside = row_for(items[0], 0);
  outside.problem.seq_len = 777;  // a cell the selection does not have
  second.push_back(outside);
  const MergeOutcome outcome =
      merge_result_files({contents_of(first, "a.csv"), contents_of(second, "b.csv")}, &plan);
  CHECK(outcome.errors.empty());
  CHECK(outcome.rows.size() == items.size());  // every input row, the outside one included
  CHECK(outcome.coverage_checked);
  CHECK(outcome.plan_cells == items.size());
  REQUIRE(outcome.missing_cells.size() == 1);
  CHECK(outcome.missing_cells[0] == items.back().label());
  CHECK(outcome.rows_outside_plan == 1);

  const MergeOutcome unchecked =
      merge_result_files({contents_of(first, "a.csv"), contents_of(second, "b.csv")}, nullptr);
  CHECK_FALSE(unchecked.coverage_checked);
  CHECK(unchecked.missing_cells.empty());
}

TEST_CASE("merge refuses a measurement twice and columns that differ, naming the files") {
  const SweepPlan plan = plan_sweep(selection_options(), built_kernels(), built_baselines());
  const MeasurementItem& item = plan.units[0].items[1];
  const ResultRow row = row_for(item, 0);
  ResultRow same_cell_other_gpu = row_for(item, 1);  // same model: the same measurement
  same_cell_other_gpu.tflops = 120;
  MergeOutcome twice = merge_result_files(
      {contents_of({row}, "a.csv"),
       contents_of({row_for(plan.units[0].items[0], 0), same_cell_other_gpu}, "b.csv")},
      nullptr);
  REQUIRE(twice.errors.size() == 1);
  CHECK(twice.errors[0] == "measured twice: " + item.subject.text() + " " +
                               to_short_form(*item.config) +
                               " fp16 N=512 B=16 on NVIDIA H200 is in a.csv row 1 and in "
                               "b.csv row 2");
  // Another GPU model is another measurement.
  ResultRow other_model = row_for(item, 0);
  other_model.device = "NVIDIA H100 80GB HBM3";
  CHECK(merge_result_files({contents_of({row}, "a.csv"), contents_of({other_model}, "b.csv")},
                           nullptr)
            .errors.empty());

  // Many duplicates: the first few listed, the rest counted.
  std::vector<ResultRow> many(30, row);
  const MergeOutcome lots = merge_result_files({contents_of(many, "a.csv")}, nullptr, 5);
  REQUIRE(lots.errors.size() == 6);
  CHECK(lots.errors.back() == "... and 24 more measurements twice (29 in all)");

  // Different columns: an extra metric here, the device columns missing there (an old file).
  ResultsFileContents with_metric = contents_of({row}, "a.csv", {"dram__bytes_read.sum"});
  ResultsFileContents old = contents_of({row_for(plan.units[0].items[0], 0)}, "old.csv");
  std::erase_if(old.columns, [](const std::string& column) {
    return column == "device_index" || column == "device_uuid";
  });
  const MergeOutcome schema = merge_result_files({with_metric, old}, nullptr);
  REQUIRE(schema.errors.size() == 1);
  CHECK(schema.errors[0] ==
        "old.csv: its columns differ from a.csv's; it lacks device_index, device_uuid, "
        "metric:dram__bytes_read.sum (shards of one sweep are written by the same binary with "
        "the same --metrics)");
}

TEST_CASE("merge warns when shards ran different commits or runs, or did not share a seed") {
  const SweepPlan plan = plan_sweep(selection_options(), built_kernels(), built_baselines());
  ResultRow a = row_for(plan.units[0].items[0], 0);
  ResultRow b = row_for(plan.units[0].items[1], 1);
  b.git_commit = "fedcba987654";
  b.input_seed = 43;  // same shape as a, other inputs
  a.run_id = "gpu-1 2026-01-01T00:00:00Z";
  b.run_id = "gpu-2 2026-01-01T00:00:05Z";
  const MergeOutcome outcome =
      merge_result_files({contents_of({a}, "a.csv"), contents_of({b}, "b.csv")}, nullptr);
  CHECK(outcome.errors.empty());
  REQUIRE(outcome.warnings.size() == 3);
  CHECK(outcome.warnings[0] ==
        "the inputs carry 2 commits (git_commit): 0123456789ab (a.csv); fedcba987654 (b.csv)");
  CHECK(outcome.warnings[1] ==
        "the inputs carry 2 runs (run_id; give every shard the same --run-id to read them as "
        "one): gpu-1 2026-01-01T00:00:00Z (a.csv); gpu-2 2026-01-01T00:00:05Z (b.csv)");
  CHECK(outcome.warnings[2] ==
        "1 shapes were measured on different inputs (several input_seed values): the shards did "
        "not share one --seed");
}

TEST_CASE("explorer merge: shards in, one file out; refusals write nothing") {
  const std::string dir = testing::scratch_folder("flashscope_test_result_merge", "cli");
  const int count = 3;
  std::string inputs;
  std::size_t shard_rows = 0;
  std::string largest_shard;  // some shards of so small a plan may hold no cell at all
  std::size_t largest_rows = 0;
  for (int index = 0; index < count; ++index) {
    const std::string path = write_shard(dir, index, count);
    const std::size_t rows = read_results_file(path).size();
    shard_rows += rows;
    inputs += " " + quoted(path);
    if (rows > largest_rows) {
      largest_rows = rows;
      largest_shard = path;
    }
  }
  const std::string output = dir + "/all.csv";
  const ProcessResult merged =
      run_explorer("merge" + inputs + " --output " + quoted(output) + " " + selection_arguments());
  INFO(merged.output);
  CHECK(merged.exit_code == 0);
  const std::size_t plan_cells =
      plan_sweep(selection_options(), built_kernels(), built_baselines()).recorded_count();
  CHECK(shard_rows == plan_cells);
  CHECK(read_results_file(output).size() == plan_cells);
  CHECK(contains(merged.output, "every one of the " + std::to_string(plan_cells) +
                                    " plan cells of the selection has a row"));
  CHECK_FALSE(testing::path_exists(output + ".partial"));

  // Without a selection: merged, coverage not checked.
  const ProcessResult no_selection =
      run_explorer("merge" + inputs + " --output " + quoted(dir + "/plain.csv"));
  CHECK(no_selection.exit_code == 0);
  CHECK(contains(no_selection.output, "coverage not checked"));

  // A shard missing: written, the missing cells listed, exit 1 (0 with --allow-missing).
  std::string two_of_three;
  for (int index = 0; index < count; ++index) {
    const std::string path = dir + "/shard" + std::to_string(index) + ".csv";
    if (path != largest_shard) two_of_three += " " + quoted(path);
  }
  const std::size_t missing = largest_rows;
  REQUIRE(missing > 0);
  const ProcessResult incomplete =
      run_explorer("merge" + two_of_three + " --output " + quoted(dir + "/partial.csv") + " " +
                   selection_arguments());
  CHECK(incomplete.exit_code == 1);
  CHECK(contains(incomplete.output, std::to_string(missing) + " of " + std::to_string(plan_cells) +
                                        " plan cells of the selection have no row in any input"));
  CHECK(contains(incomplete.output, "  missing: "));
  CHECK(read_results_file(dir + "/partial.csv").size() == plan_cells - missing);
  CHECK(run_explorer("merge" + two_of_three + " --output " + quoted(dir + "/partial.csv") + " " +
                     selection_arguments() + " --allow-missing")
            .exit_code == 0);

  // The same shard twice: refused, nothing written.
  const std::string refused = dir + "/refused.csv";
  const ProcessResult twice = run_explorer("merge " + quoted(largest_shard) + " " +
                                           quoted(largest_shard) + " --output " + quoted(refused));
  CHECK(twice.exit_code == 2);
  CHECK(contains(twice.output, "explorer merge: measured twice: "));
  CHECK(contains(twice.output, "explorer merge: nothing written"));
  CHECK_FALSE(testing::path_exists(refused));

  // Different columns: refused.
  const std::string metric_dir = testing::scratch_folder("flashscope_test_result_merge", "metric");
  const std::string with_metric = write_shard(metric_dir, 0, 1, {"dram__bytes_read.sum"});
  const ProcessResult schema = run_explorer("merge " + quoted(largest_shard) + " " +
                                            quoted(with_metric) + " --output " + quoted(refused));
  CHECK(schema.exit_code == 2);
  CHECK(contains(schema.output, "its columns differ from"));
  CHECK_FALSE(testing::path_exists(refused));

  // Not a results file, a missing file, bad options.
  { std::ofstream(dir + "/foreign.csv") << "name,score\nalice,3\n"; }
  const ProcessResult foreign =
      run_explorer("merge " + quoted(dir + "/foreign.csv") + " --output " + quoted(refused));
  CHECK(foreign.exit_code == 2);
  CHECK(contains(foreign.output, "foreign.csv:1: unknown column 'name'"));
  CHECK(run_explorer("merge " + quoted(dir + "/absent.csv") + " --output " + quoted(refused))
            .exit_code != 0);
  const ProcessResult bad_set = run_explorer("merge " + quoted(largest_shard) + " --output " +
                                             quoted(refused) + " --set nothing");
  CHECK(bad_set.exit_code == 2);
  CHECK(contains(bad_set.output, "invalid kernels key \"nothing\""));
  CHECK_FALSE(testing::path_exists(refused));

  // Every problem of the arguments at once: a missing input, an output folder that does not
  // exist and a bad selection, nothing read or written.
  const ProcessResult several =
      run_explorer("merge " + quoted(largest_shard) + " " + quoted(dir + "/absent.csv") +
                   " --output " + quoted(dir + "/no_folder/all.csv") + " --steps 0");
  CHECK(several.exit_code == 2);
  CHECK(contains(several.output, "explorer merge: input: '" + dir + "/absent.csv' does not exist"));
  CHECK(contains(several.output, "explorer merge: --output: '" + dir + "/no_folder/all.csv'"));
  CHECK(contains(several.output, "explorer merge: --steps: invalid step list \"0\""));
  CHECK(contains(several.output, "3 problems with the arguments"));

  // A shard cut short inside its last row (issue 22: it merged with exit 0) is refused, naming
  // the file and the line; compare refuses it too.
  std::ifstream whole(largest_shard, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
  const std::string cut = dir + "/cut.csv";
  std::ofstream(cut, std::ios::binary) << text.substr(0, text.size() - 3);
  long lines = 0;
  for (const char c : text)
    lines += c == '\n';
  const ProcessResult truncated =
      run_explorer("merge " + quoted(cut) + " --output " + quoted(refused));
  CHECK(truncated.exit_code == 2);
  CHECK(contains(truncated.output, "explorer merge: " + cut + ":" + std::to_string(lines) +
                                       ": the file ends inside"));
  CHECK_FALSE(testing::path_exists(refused));
  const ProcessResult compared =
      run_explorer("compare " + quoted(largest_shard) + " " + quoted(cut));
  CHECK(compared.exit_code == 2);
  CHECK(contains(compared.output, cut + ":" + std::to_string(lines) + ": the file ends inside"));
}

TEST_CASE("explorer compare: pairs two runs row by row, per GPU of B, with limits") {
  const std::string dir = testing::scratch_folder("flashscope_test_result_merge", "compare");
  const SweepPlan plan = plan_sweep(selection_options(), built_kernels(), built_baselines());
  // A: everything on GPU 0. B: the same cells spread over GPUs 0 and 1, GPU 1 1 % faster and
  // GPU 0 3 % faster, one cell missing.
  std::vector<const MeasurementItem*> items;
  for (const SweepUnit& unit : plan.units)
    for (const MeasurementItem& item : unit.items)
      items.push_back(&item);
  REQUIRE(items.size() >= 4);
  {
    std::ofstream a(dir + "/a.csv");
    std::ofstream b(dir + "/b.csv");
    ResultsCsvWriter a_writer(a), b_writer(b);
    for (std::size_t i = 0; i < items.size(); ++i) {
      a_writer.write(row_for(*items[i], 0, 100));
      const int gpu = static_cast<int>(i % 2);
      if (i + 1 < items.size()) b_writer.write(row_for(*items[i], gpu, gpu == 0 ? 103 : 101));
    }
  }
  const std::string files = quoted(dir + "/a.csv") + " " + quoted(dir + "/b.csv");
  const ProcessResult plain = run_explorer("compare " + files);
  INFO(plain.output);
  CHECK(plain.exit_code == 0);
  CHECK(contains(plain.output,
                 "paired " + std::to_string(items.size() - 1) + ", only in A 1, only in B 0"));
  CHECK(contains(plain.output, "B on NVIDIA H200 · GPU 0 · GPU-00000000: "));
  CHECK(contains(plain.output, "|B / A - 1| median 3.00 %"));  // GPU 0's pairs
  CHECK(contains(plain.output, "B on NVIDIA H200 · GPU 1 · GPU-00000001: "));
  CHECK(contains(plain.output, "|B / A - 1| median 1.00 %"));  // GPU 1's pairs

  const ProcessResult same_rows = run_explorer("compare " + files + " --same-rows");
  CHECK(same_rows.exit_code == 1);
  CHECK(contains(same_rows.output, "FAIL: the files do not hold the same measurements"));
  const ProcessResult tight = run_explorer("compare " + files + " --max-median-diff 0.5");
  CHECK(tight.exit_code == 1);
  CHECK(contains(tight.output, "exceeds 0.50 %"));
  CHECK(run_explorer("compare " + files + " --max-median-diff 5").exit_code == 0);
  CHECK(run_explorer("compare " + quoted(dir + "/a.csv") + " " + quoted(dir + "/none.csv"))
            .exit_code == 2);

  // A measurement twice in B (a stray 999 TFLOP/s copy beside the real one) is refused, naming
  // it and its copies, instead of pairing the fastest copy without a word.
  {
    std::ofstream b(dir + "/b_twice.csv");
    ResultsCsvWriter b_writer(b);
    for (const MeasurementItem* item : items)
      b_writer.write(row_for(*item, 0, 100));
    b_writer.write(row_for(*items.back(), 0, 999));
  }
  const ProcessResult twice =
      run_explorer("compare " + quoted(dir + "/a.csv") + " " + quoted(dir + "/b_twice.csv"));
  INFO(twice.output);
  CHECK(twice.exit_code == 2);
  CHECK(contains(twice.output, "explorer compare: B (" + dir +
                                   "/b_twice.csv) holds 1 "
                                   "measurement more than once:"));
  CHECK(contains(twice.output, "N=" + std::to_string(items.back()->problem.seq_len) +
                                   (items.back()->is_baseline() ? " pass " : "")));
  CHECK(contains(twice.output, ": 2 copies, 100.0 and 999.0 TFLOP/s"));
  CHECK_FALSE(contains(twice.output, "geometric mean"));
}

TEST_CASE("no mode deletes or overwrites a file it did not create: partial files, dumps") {
  // An interrupted sweep's rows are in FILE.partial; every mode that writes FILE through
  // FILE.partial refuses (exit 2, naming the file and what to do) and leaves it as it was.
  const std::string dir = testing::scratch_folder("flashscope_test_result_merge", "keep");
  const std::string shard = write_shard(dir, 0, 1);
  const std::string kept_text = "step,config\ninterrupted sweep rows\n";
  const auto leave_partial = [&](const std::string& path) {
    std::ofstream(path + ".partial") << kept_text;
    return path + ".partial";
  };
  const auto text_of = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string document = dir + "/doc.md";
  std::ofstream(document) << "# a document\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"merge " + quoted(shard) + " --output " + quoted(dir + "/all.csv"), dir + "/all.csv"},
      {"sass --step " + std::to_string(first_fp16_kernel().step) + " --output " +
           quoted(dir + "/sass.txt"),
       dir + "/sass.txt"},
      {"peak --output " + quoted(dir + "/peak.csv"), dir + "/peak.csv"},
      {"report --results " + quoted(shard) + " --update " + quoted(document), document},
  };
  for (const auto& [arguments, output] : cases) {
    const std::string partial = leave_partial(output);
    const ProcessResult result = run_explorer(arguments);
    INFO(arguments, "\n", result.output);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.output, "'" + partial +
                                      "' exists, left by an earlier run that did "
                                      "not finish"));
    CHECK(contains(result.output, "move or delete it first"));
    CHECK(text_of(partial) == kept_text);
    ::remove(partial.c_str());
  }
  CHECK(text_of(document) == "# a document\n");
  CHECK_FALSE(testing::path_exists(dir + "/all.csv"));

  // check --dump: the .npy files of an earlier dump are refused before any GPU is looked for.
  const std::string dump = dir + "/dump";
  REQUIRE(::mkdir(dump.c_str(), 0777) == 0);
  std::ofstream(dump + "/q.npy") << "earlier";
  std::ofstream(dump + "/o.npy") << "earlier";
  const ProcessResult check = run_explorer(
      "check --step " + std::to_string(first_fp16_kernel().step) + " --dump " + quoted(dump));
  INFO(check.output);
  CHECK(check.exit_code == 2);
  CHECK(contains(check.output, "--dump: '" + dump + "' already holds q.npy, o.npy"));
  CHECK(text_of(dump + "/q.npy") == "earlier");
}
