// `explorer --csv --devices` on a machine with two or more GPUs, through the real binary: the plan
// is spread over every GPU with each row naming its device, a fault on one GPU costs one row, and
// a GPU whose worker cannot start leaves the others to measure everything. With fewer than two
// GPUs every case records "fewer than 2 CUDA devices (...)" through skip_test_case, so the GPU test
// main prints it after "SKIPPED:" and ctest counts the test as skipped; without any GPU the GPU
// test main skips first.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/common/registry.hpp"
#include "profiling/device.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "tests/profiling/sweep/scratch_files.hpp"
#include "tests/support/gpu_presence.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

ProcessResult run_explorer(const std::string& environment, const std::string& arguments) {
  const std::string command =
      environment + " '" FLASHSCOPE_EXPLORER_PATH "' " + arguments + " 2>&1";
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

// False, after recording why the case is skipped, on a machine with fewer than two GPUs.
bool have_two_devices() {
  const int count = cuda_device_count();
  if (count >= 2) return true;
  testing::skip_test_case("fewer than 2 CUDA devices (cudaGetDeviceCount found " +
                          std::to_string(count) + "); the multi-GPU sweep needs at least 2");
  return false;
}

const KernelEntry& first_fp16_kernel() {
  // A forward kernel: a backward step's entry (B1, ...) has launch_backward instead.
  for (const KernelEntry* entry : built_kernels().entries())
    if (entry->config.dtype == DType::FP16 && entry->launch != nullptr) return *entry;
  FAIL("this build has no fp16 kernel");
  throw std::logic_error("unreachable");
}

// Four units (two dtypes x two lengths) of the first built step: at least one per GPU on a
// two-GPU machine.
struct ShortSweep {
  std::string arguments;
  SweepPlan plan;

  ShortSweep() {
    const int step = first_fp16_kernel().step;
    arguments = "--csv --steps " + std::to_string(step) +
                " --seq-lens 512,1024 --dtypes fp16,bf16 --min-rounds 6 --max-rounds 6 "
                "--metrics none --seed 1234";
    SweepOptions options;
    options.steps = {step};
    options.axes[Axis::seq_len] = {512, 1024};
    plan = plan_sweep(options, built_kernels(), built_baselines());
  }
};

std::string scratch(const std::string& name) {
  return testing::scratch_folder("flashscope_test_sweep_devices_gpu", name) + "/sweep.csv";
}

}  // namespace

TEST_CASE("--devices all spreads the plan over every GPU; each row names its GPU") {
  if (!have_two_devices()) return;
  const int devices = cuda_device_count();
  const ShortSweep sweep;
  const std::string output = scratch("all");
  const ProcessResult run =
      run_explorer("", sweep.arguments + " --devices all --output '" + output + "'");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::vector<ResultRow> rows = read_results_file(output);
  REQUIRE(rows.size() == sweep.plan.item_count());

  std::set<int> used;
  std::map<std::string, std::set<int>> devices_of_unit;  // "fp16 N=512" -> GPUs
  for (const ResultRow& row : rows) {
    CAPTURE(row.subject.text());
    CAPTURE(row.problem.seq_len);
    CHECK(row.status.ok());
    CHECK(row.verdict == Verdict::pass);
    REQUIRE(row.device_index.has_value());
    CHECK(*row.device_index >= 0);
    CHECK(*row.device_index < devices);
    const DeviceDescription device = describe_device(*row.device_index);
    CHECK(row.device == device.name);
    CHECK(row.device_uuid == device.uuid);
    CHECK(row.device_uuid.starts_with("GPU-"));
    used.insert(*row.device_index);
    devices_of_unit[dtype_text(row) + " N=" + std::to_string(row.problem.seq_len)].insert(
        *row.device_index);
    // Kernels are compared with the references measured on their own GPU.
    if (!row.is_baseline_or_ceiling() && !built_baselines().empty())
      CHECK((row.pct_fa2.has_value() || row.pct_cudnn.has_value()));
  }
  // Every GPU got a unit (four units, handed out one per free GPU), and a unit stayed on one.
  CHECK(used.size() == std::min<std::size_t>(static_cast<std::size_t>(devices), 4));
  for (const auto& [unit, gpus] : devices_of_unit) {
    CAPTURE(unit);
    CHECK(gpus.size() == 1);
  }
  std::set<std::string> uuids;
  for (const int index : used)
    uuids.insert(describe_device(index).uuid);
  CHECK(uuids.size() == used.size());  // distinct GPUs, not one GPU under two indices
  CHECK(contains(run.output, ", GPU 1] "));
  CHECK(contains(run.output, " rows/s on " + std::to_string(devices) + " devices"));
}

TEST_CASE("a fault on one GPU costs its row and that GPU's worker; the others go on") {
  if (!have_two_devices()) return;
  const ShortSweep sweep;
  const KernelEntry& kernel = first_fp16_kernel();
  std::size_t faulting_items = 0;  // the step's kernels at N = 1024, in each dtype it is built
  for (const SweepUnit& unit : sweep.plan.units)
    for (const MeasurementItem& item : unit.items)
      faulting_items += item.subject.step() == kernel.step && item.problem.seq_len == 1024;
  const std::string output = scratch("fault");
  const ProcessResult run =
      run_explorer("FLASHSCOPE_TEST_FAULT=illegal-address:" + std::to_string(kernel.step) + ":1024",
                   sweep.arguments + " --devices all --output '" + output + "'");
  INFO(run.output);
  CHECK(run.exit_code == 1);  // a fault makes the sweep fail, after finishing it
  const std::vector<ResultRow> rows = read_results_file(output);
  REQUIRE(rows.size() == sweep.plan.item_count());
  std::size_t faults = 0;
  for (const ResultRow& row : rows) {
    CAPTURE(row.subject.text());
    CAPTURE(row.problem.seq_len);
    if (row.step_number() == kernel.step && row.problem.seq_len == 1024) {
      CHECK(contains(row.status.text(), "cudaErrorIllegalAddress"));
      CHECK(row.device_index.has_value());
      ++faults;
    } else {
      CHECK(row.status.ok());
    }
  }
  CHECK(faults == faulting_items);
  CHECK(contains(run.output, "note: a new sweep worker on GPU "));
}

TEST_CASE("a GPU whose worker cannot start is reported; the other GPUs measure everything") {
  if (!have_two_devices()) return;
  const ShortSweep sweep;
  const std::string output = scratch("setup");
  const ProcessResult run =
      run_explorer("FLASHSCOPE_TEST_FAULT=setup:1",
                   sweep.arguments + " --devices all --output '" + output + "'");
  INFO(run.output);
  CHECK(run.exit_code == 1);  // a device failed: the sweep is complete but says so
  CHECK(contains(run.output, "error: GPU 1 ("));
  CHECK(contains(run.output, "its sweep worker could not start measuring"));
  CHECK(contains(run.output, "the other devices carry on"));
  const std::vector<ResultRow> rows = read_results_file(output);
  REQUIRE(rows.size() == sweep.plan.item_count());
  for (const ResultRow& row : rows) {
    CHECK(row.status.ok());
    CHECK(row.device_index != 1);
  }
}

TEST_CASE("--devices 0 and --devices 0,1 measure the same rows") {
  if (!have_two_devices()) return;
  const ShortSweep sweep;
  const std::string one = scratch("one");
  const std::string two = scratch("two");
  REQUIRE(run_explorer("", sweep.arguments + " --devices 0 --output '" + one + "'").exit_code == 0);
  REQUIRE(run_explorer("", sweep.arguments + " --devices 0,1 --output '" + two + "'").exit_code ==
          0);
  const ProcessResult compare = run_explorer("", "compare '" + one + "' '" + two + "' --same-rows");
  INFO(compare.output);
  CHECK(compare.exit_code == 0);
  CHECK(contains(compare.output, "only in A 0, only in B 0"));
  for (const ResultRow& row : read_results_file(one))
    CHECK(row.device_index == 0);
}
