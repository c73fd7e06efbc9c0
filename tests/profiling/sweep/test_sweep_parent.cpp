// The sweep parent's scheduling without a GPU: stand-in workers (small /bin/sh scripts that speak
// the worker protocol: commands on stdin, CSV rows on fd 3) on made-up devices. Covers the dynamic
// hand-out of units to several devices, a fault costing one row and one worker restart on its
// device, a device whose worker cannot start, the timeout, and a stop that keeps every row.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "profiling/results/results.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "profiling/sweep/sweep_parent.hpp"
#include "profiling/sweep/sweep_worker.hpp"
#include "tests/profiling/sweep/scratch_files.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

cudaError_t launch_nothing(const ForwardArgs&, cudaStream_t) {
  return cudaSuccess;
}

KernelRegistry two_step_registry() {
  KernelRegistry registry;
  for (const int step : {1, 3}) {
    const KernelConfig config = configs::progression()[static_cast<std::size_t>(step - 1)];
    for (const DType dtype : {DType::FP16, DType::BF16}) {
      KernelEntry entry;
      entry.step = step;
      entry.config = configs::with_dtype(config, dtype);
      entry.launch = &launch_nothing;
      entry.display_name = std::to_string(step);
      registry.add(entry);
    }
  }
  return registry;
}

// The stand-in worker. It reads the job the parent sends first, then the commands. Marker files in
// its folder make it misbehave at one item: crash_U_I (killed by SIGSEGV), lost_U_I (writes a fault
// row, exits 3 as after a sticky CUDA error), hang_U_I (never answers); setup_fail_D makes the
// worker of device D exit 4 before any row; slow_D makes device D take 0.3 s per item.
constexpr const char* kFakeWorker = R"(
dir=$1; dev=$2
[ -e "$dir/setup_fail_$dev" ] && { echo "fake worker: setup fails on $dev" >&2; exit 4; }
# The job comes first (settings and plan as data, up to its "end" line): a real worker parses
# it; this one checks that it came, whole.
read header
[ "$header" = "flashscope-worker-job 1" ] || { echo "fake worker: no job header" >&2; exit 4; }
while read line; do [ "$line" = end ] && break; done
cat "$dir/header.csv" >&3
while read unit start; do
  n=$(cat "$dir/units/$unit")
  i=$start
  while [ "$i" -lt "$n" ]; do
    [ -e "$dir/slow_$dev" ] && sleep 0.3
    [ -e "$dir/crash_${unit}_$i" ] && kill -SEGV $$
    [ -e "$dir/hang_${unit}_$i" ] && exec sleep 60
    if [ -e "$dir/lost_${unit}_$i" ]; then cat "$dir/d$dev/${unit}_${i}_fault.csv" >&3; exit 3; fi
    cat "$dir/d$dev/${unit}_$i.csv" >&3
    i=$((i+1))
  done
done
exit 0
)";

std::string csv_line(const ResultRow& row) {
  std::ostringstream text;
  ResultsCsvWriter writer(text);
  writer.write(row);
  const std::string all = text.str();
  return all.substr(all.find('\n') + 1);  // without the header
}

DeviceDescription fake_device(int index) {
  DeviceDescription device;
  device.index = index;
  device.name = "Fake GPU";
  device.uuid = "GPU-0000000" + std::to_string(index) + "-0000-0000-0000-000000000000";
  return device;
}

// A plan, its devices and the files the stand-in workers read.
struct FakeSweep {
  std::string dir;
  SweepPlan plan;
  std::vector<SweepDevice> devices;

  FakeSweep(const std::string& name, int device_count, const SweepOptions& base = {},
            const KernelRegistry& registry = two_step_registry()) {
    dir = testing::scratch_folder("flashscope_test_sweep_parent", name);
    SweepOptions options = base;
    if (!options.axes.contains(Axis::seq_len)) options.axes[Axis::seq_len] = {512, 1024, 2048};
    options.collect_metrics = false;
    plan = plan_sweep(options, registry, {"fa2", "cudnn"});
    ::mkdir((dir + "/units").c_str(), 0777);
    {
      std::ofstream header(dir + "/header.csv");
      ResultsCsvWriter writer(header);
    }
    for (int d = 0; d < device_count; ++d) {
      SweepDevice device{fake_device(d), options};
      device.options.device = d;
      devices.push_back(device);
      ::mkdir((dir + "/d" + std::to_string(d)).c_str(), 0777);
      for (std::size_t u = 0; u < plan.units.size(); ++u) {
        std::ofstream(dir + "/units/" + std::to_string(u)) << plan.units[u].items.size() << "\n";
        for (std::size_t i = 0; i < plan.units[u].items.size(); ++i) {
          const MeasurementItem& item = plan.units[u].items[i];
          ResultRow row = row_skeleton(item, device.options, device.description);
          row.runs = 10;
          // References take 1 ms, kernels 2 ms: every kernel is at 50 % of each reference.
          // Causal references take 0.5 ms: a causal kernel is at 25 % of its own workload's.
          row.median_ms = item.is_baseline() ? (item.problem.causal ? 0.5 : 1.0) : 2.0;
          row.min_ms = row.median_ms;
          row.max_ms = row.median_ms;
          row.tflops = 100;
          row.seed_attn_tflops = 101;
          row.verdict = Verdict::pass;
          const std::string stem =
              dir + "/d" + std::to_string(d) + "/" + std::to_string(u) + "_" + std::to_string(i);
          std::ofstream(stem + ".csv") << csv_line(row);
          ResultRow fault = row_skeleton(item, device.options, device.description);
          fault.status = RowStatus::fault(
              "cudaErrorIllegalAddress (the CUDA context is lost; this worker ends here)");
          std::ofstream(stem + "_fault.csv") << csv_line(fault);
        }
      }
    }
  }

  void mark(const std::string& marker) const { std::ofstream(dir + "/" + marker) << ""; }

  WorkerStarter starter() const {
    return [dir = dir](const SweepDevice& device, int) {
      return WorkerInvocation{
          "/bin/sh",
          {"-c", kFakeWorker, "fake_worker", dir, std::to_string(device.description.index)}};
    };
  }

  struct Run {
    SweepSummary summary;
    std::vector<ResultRow> rows;
    std::string log;
  };

  Run run(std::function<bool(const std::vector<ResultRow>&)> stop = {}) const {
    Run result;
    SweepObserver observer;
    observer.on_row = [&](const ResultRow& row) { result.rows.push_back(row); };
    if (stop) observer.stop_requested = [&] { return stop(result.rows); };
    std::ostringstream log;
    result.summary = run_sweep_on_devices(plan, devices, starter(), observer, log);
    result.log = log.str();
    return result;
  }
};

// Every planned cell has exactly one row, in plan order within its unit.
void check_complete(const SweepPlan& plan, const std::vector<ResultRow>& rows) {
  std::multiset<std::string> planned, got;
  for (const SweepUnit& unit : plan.units)
    for (const MeasurementItem& item : unit.items)
      if (item.recorded) planned.insert(plan_cell_key(item));
  for (const ResultRow& row : rows)
    got.insert(plan_cell_key(row.subject, row.config, row.problem));
  CHECK(got == planned);
}

}  // namespace

TEST_CASE("pct_* pairs each kernel row with the references of its own workload") {
  // Step 3 stands in for a step with the causal mask; step 1 has none.
  // Step 1 and step 23, whose descriptor has the mask.
  KernelRegistry with_mask;
  // Named: entries() points into the registry, which must outlive the loop (a temporary's
  // lifetime is not extended through a range-for's range expression before C++23).
  const KernelRegistry both = two_step_registry();
  for (const KernelEntry* entry : both.entries())
    if (entry->step == 1) with_mask.add(*entry);
  for (const DType dtype : {DType::FP16, DType::BF16}) {
    KernelEntry masked;
    masked.step = 23;
    masked.config = configs::with_dtype(configs::headline_config(23), dtype);
    masked.launch = &launch_nothing;
    masked.display_name = "23";
    with_mask.add(masked);
  }
  SweepOptions options;
  options.axes[Axis::causal] = {0, 1};
  for (const int devices : {1, 2}) {
    CAPTURE(devices);
    const FakeSweep sweep("causal_pairing_" + std::to_string(devices), devices, options, with_mask);
    const FakeSweep::Run run = sweep.run();
    INFO(run.log);
    check_complete(sweep.plan, run.rows);
    std::size_t causal_kernels = 0, unmasked_kernels = 0;
    for (const ResultRow& row : run.rows) {
      if (row.is_baseline_or_ceiling()) continue;
      CAPTURE(row.subject.text());
      CAPTURE(row.problem.causal);
      (row.problem.causal ? causal_kernels : unmasked_kernels) += 1;
      if (row.problem.causal) CHECK(row.subject == RowSubject::kernel(23));
      CHECK(row.pct_fa2.value_or(0) == doctest::Approx(row.problem.causal ? 25 : 50));
      CHECK(row.pct_cudnn.value_or(0) == doctest::Approx(row.problem.causal ? 25 : 50));
    }
    CHECK(causal_kernels == 2 * 3);  // step 3 in two dtypes at three lengths
    CHECK(unmasked_kernels == 2 * 2 * 3);
  }
}

TEST_CASE("one device measures the units in plan order") {
  const FakeSweep sweep("one_device", 1);
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  REQUIRE(run.rows.size() == sweep.plan.item_count());
  std::size_t r = 0;
  for (const SweepUnit& unit : sweep.plan.units)
    for (const MeasurementItem& item : unit.items) {
      CHECK(run.rows[r].subject == item.subject);
      CHECK(run.rows[r].problem.seq_len == item.problem.seq_len);
      CHECK(run.rows[r].device_index == 0);
      if (!item.is_baseline()) CHECK(run.rows[r].pct_fa2.value_or(0) == doctest::Approx(50));
      ++r;
    }
  CHECK(run.summary.rows == run.rows.size());
  CHECK(run.summary.faults == 0);
  REQUIRE(run.summary.devices.size() == 1);
  CHECK(run.summary.devices[0].worker_starts == 1);  // one worker for the whole sweep
  CHECK(run.summary.devices[0].units == sweep.plan.units.size());
  CHECK_FALSE(run.summary.device_failed());
  CHECK(contains(run.log, "[1/" + std::to_string(run.rows.size()) + ", "));
}

TEST_CASE("several devices share the plan: each unit on one device, every cell once") {
  const FakeSweep sweep("two_devices", 2);
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  // A unit's rows come from one device, so kernels are paired with that device's references.
  std::map<std::string, std::set<int>> devices_of_shape;
  for (const ResultRow& row : run.rows) {
    devices_of_shape[dtype_text(row) + std::to_string(row.problem.seq_len)].insert(
        *row.device_index);
    CHECK(row.device_uuid == fake_device(*row.device_index).uuid);
    if (!row.is_baseline_or_ceiling()) CHECK(row.pct_cudnn.value_or(0) == doctest::Approx(50));
  }
  for (const auto& [shape, devices] : devices_of_shape)
    CHECK(devices.size() == 1);
  REQUIRE(run.summary.devices.size() == 2);
  CHECK(run.summary.devices[0].units + run.summary.devices[1].units == sweep.plan.units.size());
  CHECK(run.summary.devices[0].units > 0);
  CHECK(run.summary.devices[1].units > 0);
  CHECK(contains(run.log, ", GPU 1] "));  // progress lines name the device
}

TEST_CASE("units go to whichever device is free: a slow device takes fewer") {
  const FakeSweep sweep("slow_device", 2);
  sweep.mark("slow_1");  // 0.3 s per item on device 1, next to nothing on device 0
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  CHECK(run.summary.devices[0].units > run.summary.devices[1].units);
  CHECK(run.summary.devices[1].units >= 1);
}

TEST_CASE("a crash costs its own row and restarts that device's worker only") {
  const FakeSweep sweep("crash", 2);
  sweep.mark("crash_2_1");  // unit 2, item 1: a kernel
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  std::size_t faults = 0;
  for (const ResultRow& row : run.rows) {
    if (row.status.ok()) continue;
    ++faults;
    CHECK(row.status.text() ==
          "fault: worker killed by signal 11 (Segmentation fault) while measuring "
          "this item");
    CHECK(row.subject == sweep.plan.units[2].items[1].subject);
    CHECK(row.problem.seq_len == sweep.plan.units[2].items[1].problem.seq_len);
    CHECK(row.device_uuid == fake_device(*row.device_index).uuid);
  }
  CHECK(faults == 1);
  CHECK(run.summary.faults == 1);
  CHECK(run.summary.devices[0].worker_starts + run.summary.devices[1].worker_starts == 3);
  CHECK(contains(run.log, "note: a new sweep worker on GPU "));
}

TEST_CASE("a worker that loses its CUDA context writes the fault row itself; no second row") {
  const FakeSweep sweep("context_lost", 1);
  sweep.mark("lost_1_2");
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  CHECK(run.summary.faults == 1);
  CHECK(run.summary.devices[0].worker_starts == 2);
}

TEST_CASE("a worker silent for longer than --timeout is killed; its item is a fault row") {
  SweepOptions options;
  options.timeout_s = 2;
  const FakeSweep sweep("timeout", 2, options);
  sweep.mark("hang_0_1");
  const auto started = std::chrono::steady_clock::now();
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  check_complete(sweep.plan, run.rows);
  REQUIRE(run.summary.faults == 1);
  for (const ResultRow& row : run.rows)
    if (!row.status.ok())
      CHECK(row.status.text() == "fault: no result within 2 s; the worker was killed");
}

TEST_CASE("a device whose worker cannot start is reported; the others measure everything") {
  const FakeSweep sweep("setup_fails", 2);
  sweep.mark("setup_fail_1");
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  for (const ResultRow& row : run.rows)
    CHECK(row.device_index == 0);
  CHECK(run.summary.faults == 0);
  CHECK(run.summary.device_failed());
  CHECK(run.summary.devices[0].failure.empty());
  CHECK(run.summary.devices[1].failure ==
        "GPU 1 (Fake GPU): its sweep worker could not start measuring (its message is above)");
  CHECK(contains(run.log, "the other devices carry on"));

  const FakeSweep none("setup_fails_everywhere", 2);
  none.mark("setup_fail_0");
  none.mark("setup_fail_1");
  try {
    none.run();
    FAIL("a sweep without any working device returned");
  } catch (const std::runtime_error& error) {
    CHECK(contains(error.what(), "no device could start measuring"));
    CHECK(contains(error.what(), "GPU 0 (Fake GPU)"));
    CHECK(contains(error.what(), "GPU 1 (Fake GPU)"));
  }
}

TEST_CASE("a stop kills every worker and keeps the rows written so far") {
  const FakeSweep sweep("stop", 2);
  sweep.mark("slow_0");
  sweep.mark("slow_1");
  const auto started = std::chrono::steady_clock::now();
  const FakeSweep::Run run =
      sweep.run([](const std::vector<ResultRow>& rows) { return rows.size() >= 3; });
  INFO(run.log);
  CHECK(run.summary.stopped);
  // The stop is polled between waits: rows that arrived together (one per device) are all kept.
  CHECK(run.rows.size() >= 3);
  CHECK(run.rows.size() <= 4);
  CHECK(run.summary.rows == run.rows.size());
  CHECK(run.summary.faults == 0);  // the items in flight are not faults
  // Far less than the 0.3 s x 30 items the slow workers would need.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("a shard's baseline references are measured for pct_* but not written") {
  SweepOptions options;
  options.shard = PlanShard{0, 2};
  const FakeSweep sweep("shard_baselines", 2, options);
  const FakeSweep::Run run = sweep.run();
  INFO(run.log);
  check_complete(sweep.plan, run.rows);
  CHECK(run.summary.rows == sweep.plan.recorded_count());
  CHECK(run.summary.unrecorded_baselines == sweep.plan.item_count() - sweep.plan.recorded_count());
  for (const ResultRow& row : run.rows)
    if (!row.is_baseline_or_ceiling()) CHECK(row.pct_fa2.value_or(0) == doctest::Approx(50));
  if (run.summary.unrecorded_baselines > 0)
    CHECK(contains(run.log, "another shard writes this row"));
}

TEST_CASE("e4m3 problems plan cuDNN's FP8 rows beside the FP8 step's; fa2's are absent, noted") {
  // Step 28's config as its first sweep ran it (results/h100/step28-first-sweep.csv).
  KernelEntry entry;
  entry.step = 28;
  entry.config = parse_short_form("(E4M3, 128, 128, 128, 12): stages_2+regs_240");
  entry.launch = &launch_nothing;
  entry.display_name = "28";
  KernelRegistry registry;
  registry.add(entry);
  SweepOptions options;
  options.steps = {28};
  options.axes[Axis::dtype] = {static_cast<int>(DType::E4M3)};
  options.axes[Axis::d_head] = {entry.config.d_head};
  options.axes[Axis::seq_len] = {1024, 2048};
  options.collect_metrics = false;
  options.repeat_baselines = true;
  const SweepPlan plan = plan_sweep(options, registry, {"fa2", "cudnn"});
  REQUIRE(plan.units.size() == 2);
  for (const SweepUnit& unit : plan.units) {
    CAPTURE(unit.name);
    std::vector<std::string> subjects;
    for (const MeasurementItem& item : unit.items) {
      CHECK(item.problem.dtype == DType::E4M3);
      subjects.push_back(item.is_baseline()
                             ? std::string(baseline_key(*item.subject.which_baseline())) + "/" +
                                   std::to_string(item.reference_pass)
                             : std::to_string(*item.subject.step()));
    }
    // cuDNN's FP8 attention brackets the step, as the 16-bit references do; no fa2 item at all.
    CHECK(subjects == std::vector<std::string>{"cudnn/1", "28", "cudnn/2"});
  }
  std::string notes;
  for (const std::string& note : plan.notes)
    notes += note + "\n";
  CHECK(contains(notes,
                 "reference 'fa2': no rows for e4m3 problems: FlashAttention-2 has no FP8 forward "
                 "(fp8-track.md §3; cuDNN's FP8 attention is the e4m3 reference) (2 problems)"));

  Problem problem;
  problem.dtype = DType::E4M3;
  CHECK(baseline_plan_refusal(Baseline::fa2, problem).has_value());
  CHECK_FALSE(baseline_plan_refusal(Baseline::cudnn, problem).has_value());
  problem.dtype = DType::BF16;
  CHECK_FALSE(baseline_plan_refusal(Baseline::fa2, problem).has_value());
}
