// The headless modes on a GPU, through the real `explorer` binary: a short sweep's rows are sane,
// a kernel that faults (illegal address, crash, hang) costs exactly its own row, and `check`
// reports and dumps. Linked with the GPU test main, which skips without a device.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/sweep_mode.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/device.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/results/results.hpp"
#include "profiling/results/source_state.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "profiling/sweep/sweep_worker.hpp"
#include "tests/profiling/sweep/scratch_files.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

ProcessResult run_shell(const std::string& command) {
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

ProcessResult run_explorer(const std::string& environment, const std::string& arguments) {
  return run_shell(environment + " '" FLASHSCOPE_EXPLORER_PATH "' " + arguments + " 2>&1");
}

std::string scratch_directory(const std::string& name) {
  return testing::scratch_folder("flashscope_test_sweep_gpu", name);
}

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

// The first built fp16 kernel and the sweep arguments that measure exactly it.
const KernelEntry& first_fp16_kernel() {
  // A forward kernel: a backward step's entry (B1, ...) has launch_backward instead.
  for (const KernelEntry* entry : built_kernels().entries())
    if (entry->config.dtype == DType::FP16 && entry->launch != nullptr) return *entry;
  FAIL("this build has no fp16 kernel");
  throw std::logic_error("unreachable");
}

std::string only_kernel_arguments(const KernelEntry& entry) {
  return "--steps " + std::to_string(entry.step) + " --config " +
         quoted(to_short_form(entry.config));
}

}  // namespace

TEST_CASE("a short sweep writes one sane row per planned measurement") {
  const KernelEntry& kernel = first_fp16_kernel();
  const std::string output = scratch_directory("short") + "/sweep.csv";
  const std::string arguments =
      "--csv --steps " + std::to_string(kernel.step) +
      " --seq-lens 512,1024 --min-rounds 6 --max-rounds 6 --seed 1234 --metrics "
      "dram__bytes_read.sum --output " +
      quoted(output);
  const ProcessResult run = run_explorer("", arguments);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);

  // The plan the binary followed, recomputed here from the same options.
  SweepOptions options;
  options.steps = {kernel.step};
  options.axes[Axis::seq_len] = {512, 1024};
  const SweepPlan plan = plan_sweep(options, built_kernels(), built_baselines());
  const std::vector<ResultRow> rows = read_results_file(output);
  REQUIRE(rows.size() == plan.item_count());

  const DeviceDescription device = describe_device(0);
  const double peak = tensor_peak_tflops_bound(device);
  const bool have_fa2 = !built_baselines().empty() && built_baselines().front() == "fa2";
  std::size_t with_metrics = 0, ok_rows = 0;
  for (const ResultRow& row : rows) {
    CAPTURE(row.subject.text());
    CAPTURE(config_text(row));
    CAPTURE(dtype_text(row));
    CAPTURE(row.problem.seq_len);
    CAPTURE(row.status.text());
    REQUIRE(row.status.ok());
    ++ok_rows;
    CHECK(row.verdict == Verdict::pass);
    // Six interleaved rounds (--min-rounds = --max-rounds) of whole batches, and an interval.
    REQUIRE(row.rounds.has_value());
    CHECK(*row.rounds == 6);
    CHECK(row.runs >= 6);
    CHECK(row.runs % 6 == 0);
    REQUIRE(row.ci_low_ms.has_value());
    CHECK(*row.ci_low_ms <= row.median_ms);
    CHECK(row.median_ms <= *row.ci_high_ms);
    CHECK(row.median_ms > 0);
    CHECK(row.min_ms <= row.median_ms);
    CHECK(row.median_ms <= row.max_ms);
    CHECK(row.tflops > 0);
    CHECK(row.tflops < peak);
    CHECK(row.seed_attn_tflops > row.tflops);  // the seed's count adds the softmax term
    CHECK(row.sm_clock_mhz > 100);
    CHECK(row.sm_clock_mhz <= device.peak_sm_clock_mhz * 11 / 10);
    CHECK(row.device == device.name);
    CHECK(row.cache_mode == "warm");
    CHECK(row.max_error.has_value());
    CHECK(row.problem.batch == seed_batch_for(row.problem.seq_len));
    CHECK(row.problem.heads == 16);
    // Provenance: the build's commit and dirty state, this machine, no locked clock claimed.
    CHECK(row.git_commit == source_state().commit);
    CHECK(row.git_dirty == source_state().dirty);
    CHECK(row.host == host_name());
    CHECK_FALSE(row.host.empty());
    CHECK(row.run_id.starts_with(row.host + " 20"));  // "<host> <UTC start>"
    CHECK(row.run_id == rows.front().run_id);         // one sweep, one run
    CHECK_FALSE(row.locked_sm_clock_mhz.has_value());
    if (row.is_baseline_or_ceiling()) {
      CHECK_FALSE(row.config);
      CHECK_FALSE(row.registers.has_value());
      CHECK((row.reference_pass == 1 || row.reference_pass == 2));
      if (row.subject.text() == "fa2")
        CHECK((row.fa2_entry_point == "in_place" || row.fa2_entry_point == "sdpa_op"));
    } else {
      CHECK_FALSE(row.reference_pass.has_value());
      // Paired with the first reference pass by time and, where counters ran, by cycles.
      CHECK(row.pct_fa2_cycles.has_value() == (have_fa2 && row.cycles.has_value()));
      CHECK(row.fa2_entry_point.empty() == !have_fa2);
      CHECK(row.registers.value_or(0) > 0);
      CHECK(row.registers.value_or(0) <= 255);
      CHECK(row.smem_bytes.value_or(0) >= smem_bytes(*row.config));
      CHECK(row.local_bytes.value_or(-1) >= 0);
      CHECK(row.pct_fa2.has_value() == have_fa2);
    }
    if (row.l2_hit_pct) {
      ++with_metrics;
      CHECK(*row.l2_hit_pct >= 0);
      // The hit rate divides counters of two replay passes (two launches), so it may pass 100 %
      // by a little; such a row must say so in its warnings (docs/profiling.md).
      CHECK(*row.l2_hit_pct < 102);
      CHECK((*row.l2_hit_pct > 100) == contains(row.warnings, "l2_hit_pct"));
      CHECK(row.cycles.value_or(0) > 0);
      // One profiled launch against the median of the timed ones: same kernel, same order of time.
      CHECK(row.cupti_duration_ms.value_or(0) > 0.5 * row.median_ms);
      CHECK(row.cupti_duration_ms.value_or(0) < 2.0 * row.median_ms);
      CHECK(row.extra_metrics.count("dram__bytes_read.sum") == 1);
    }
  }
  // Counters are all or nothing for a sweep.
  CHECK((with_metrics == 0 || with_metrics == ok_rows));
  if (with_metrics == 0)
    MESSAGE("hardware counters are not permitted here; metric columns were checked empty only");
  CHECK(contains(run.output,
                 "[" + std::to_string(rows.size()) + "/" + std::to_string(rows.size()) + ", "));
  // The worker's closing line says where its time went.
  CHECK(contains(run.output, "worker: " + std::to_string(rows.size()) + " measurements in "));
  // The references are timed interleaved with the kernels of their problem (no repeated pass,
  // so no drift report): one "rounds:" line per unit, with the clock those rounds ran at.
  std::size_t round_lines = 0;
  for (std::size_t at = run.output.find("\nrounds: "); at != std::string::npos;
       at = run.output.find("\nrounds: ", at + 1))
    ++round_lines;
  CHECK(round_lines == plan.units.size());
  CHECK(contains(run.output, "SM clock "));
  CHECK_FALSE(contains(run.output, "reference drift, repeated pass vs first pass"));
}

TEST_CASE("a faulting kernel costs its own row; the rows before and after are kept") {
  const KernelEntry& kernel = first_fp16_kernel();
  struct FaultCase {
    const char* kind;
    const char* expected;
    const char* extra_arguments;
  };
  const FaultCase cases[] = {
      {"illegal-address", "cudaErrorIllegalAddress", ""},
      {"abort", "worker killed by signal 6", ""},
      {"hang", "no result within 20 s; the worker was killed", " --timeout 20"},
  };
  for (const FaultCase& fault : cases) {
    CAPTURE(fault.kind);
    const std::string output = scratch_directory(fault.kind) + "/sweep.csv";
    const ProcessResult run = run_explorer("FLASHSCOPE_TEST_FAULT=" + std::string(fault.kind) +
                                               ":" + std::to_string(kernel.step) + ":1024",
                                           "--csv " + only_kernel_arguments(kernel) +
                                               " --seq-lens 512,1024,2048 --min-rounds 6 "
                                               "--max-rounds 6 --reference none --metrics none "
                                               "--output " +
                                               quoted(output) + fault.extra_arguments);
    INFO(run.output);
    CHECK(run.exit_code == 1);  // a fault makes the sweep fail, after finishing it
    const std::vector<ResultRow> rows = read_results_file(output);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].problem.seq_len == 512);
    CHECK(rows[0].status.ok());
    CHECK(rows[0].verdict == Verdict::pass);
    CHECK(rows[1].problem.seq_len == 1024);
    CHECK(rows[1].status.text().starts_with("fault: "));
    CHECK(contains(rows[1].status.text(), fault.expected));
    CHECK(rows[1].verdict == Verdict::unchecked);
    CHECK(rows[1].config == kernel.config);
    CHECK(rows[2].problem.seq_len == 2048);
    CHECK(rows[2].status.ok());
    CHECK(rows[2].verdict == Verdict::pass);
  }
}

TEST_CASE("SIGINT stops the sweep, ends its workers and keeps every row written so far") {
  const std::string directory = scratch_directory("interrupt");
  const std::string output = directory + "/sweep.csv";
  const std::string partial = output + ".partial";
  const std::string log = directory + "/sweep.log";
  // An earlier result at --output stays as it was: a stopped sweep's rows go to FILE.partial.
  {
    std::FILE* previous = std::fopen(output.c_str(), "w");
    REQUIRE(previous != nullptr);
    std::fputs("earlier result\n", previous);
    std::fclose(previous);
  }
  // A sweep long enough to interrupt once two rows are in the partial file.
  const std::string command =
      "'" FLASHSCOPE_EXPLORER_PATH "' --csv --seq-lens 512,1024,2048,4096,8192,16384 --output " +
      quoted(output) + " 2> " + quoted(log) +
      " & pid=$!; "
      "while [ \"$(cat " +
      quoted(partial) +
      " 2>/dev/null | wc -l)\" -lt 3 ] && kill -0 $pid 2>/dev/null; do sleep 0.2; done; "
      "kill -INT $pid; wait $pid; echo \"exit=$?\"";
  const ProcessResult run = run_shell(command);
  INFO(run.output);
  CHECK(contains(run.output, "exit=130"));
  SweepOptions options;
  const std::size_t planned = plan_sweep(options, built_kernels(), built_baselines()).item_count();
  const std::vector<ResultRow> rows = read_results_file(partial);
  CHECK(rows.size() >= 2);
  CHECK(rows.size() < planned);
  for (const ResultRow& row : rows)
    CHECK(row.status.ok());                  // the items in flight are not reported as faults
  CHECK(testing::file_bytes(output) == 15);  // "earlier result\n", untouched
  FILE* file = std::fopen(log.c_str(), "r");
  REQUIRE(file != nullptr);
  std::string text(1 << 20, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), file));
  std::fclose(file);
  CHECK(contains(text, "explorer --csv: stopped by signal 2; the " + std::to_string(rows.size()) +
                           " rows measured so far are in " + partial + " (" + output +
                           " is left as it was"));
}

TEST_CASE("a claimed locked clock is recorded, and rows measured away from it are flagged") {
  // The sweep never changes clocks; it records what the caller says and compares it with the
  // clock it measures. No GPU runs at 100 MHz under load, so the row must be flagged.
  const KernelEntry& kernel = first_fp16_kernel();
  const std::string output = scratch_directory("locked") + "/sweep.csv";
  const ProcessResult run = run_explorer(
      "", "--csv " + only_kernel_arguments(kernel) +
              " --seq-lens 512 --min-rounds 6 --max-rounds 6 --reference none --metrics none "
              "--locked-sm-clock 100 --output " +
              quoted(output));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, "the caller says the SM clock is locked at 100 MHz"));
  const std::vector<ResultRow> rows = read_results_file(output);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].locked_sm_clock_mhz == 100);
  CHECK(contains(rows[0].warnings, "above the locked 100 MHz"));
  CHECK(contains(run.output, "warning: " + std::to_string(kernel.step)));
}

TEST_CASE("check reports the verdict and dumps numpy files") {
  std::vector<const KernelEntry*> kernels;  // one per dtype
  for (const DType dtype : {DType::FP16, DType::BF16})
    for (const KernelEntry* entry : built_kernels().entries())
      if (entry->config.dtype == dtype && entry->launch != nullptr) {  // a forward kernel
        kernels.push_back(entry);
        break;
      }
  for (const KernelEntry* kernel : kernels) {
    CAPTURE(kernel->display_name);
    const std::string directory = scratch_directory(
        std::string("check_") + std::string(dtype_lower_name(kernel->config.dtype)));
    const ProcessResult run = run_explorer(
        "", "check --step " + std::to_string(kernel->step) + " --config " +
                quoted(to_short_form(kernel->config)) +
                " --batch 2 --seq-len 256 --heads 16 --seed 7 --dump " + quoted(directory));
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK(contains(run.output, "§1.4: PASS"));
    CHECK(contains(run.output, "seed 7"));
    const std::uintmax_t elements =
        2ull * 256 * 16 * static_cast<std::uintmax_t>(kernel->config.d_head);
    const std::uintmax_t element_bytes = kernel->config.dtype == DType::FP16 ? 2 : 4;
    for (const char* name : {"q.npy", "k.npy", "v.npy", "o.npy", "reference_low_precision.npy",
                             "reference_fp32.npy"}) {
      CAPTURE(name);
      const std::string path = directory + "/" + name;
      REQUIRE(testing::path_exists(path));
      CHECK(testing::file_bytes(path) == static_cast<std::int64_t>(128 + elements * element_bytes));
    }
  }
  // A step that takes partial query blocks (26+) answers with its own rule or not at all: ask the
  // first built kernel of a step that needs whole blocks.
  const auto whole_blocks = std::find_if(kernels.begin(), kernels.end(), [](const auto* candidate) {
    return !configs::step_descriptor(candidate->step).partial_blocks;
  });
  if (whole_blocks != kernels.end()) {
    const ProcessResult invalid =
        run_explorer("", "check --step " + std::to_string((*whole_blocks)->step) + " --config " +
                             quoted(to_short_form((*whole_blocks)->config)) + " --seq-len 100");
    CHECK(invalid.exit_code == 2);
    CHECK(contains(invalid.output, "seq_len 100 is not a multiple of B_r"));
  } else {
    MESSAGE("every kernel asked takes partial query blocks: no B_r rule to ask for");
  }
}
