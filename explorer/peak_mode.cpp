#include "explorer/peak_mode.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "explorer/usage.hpp"
#include "profiling/ceilings/ceilings.hpp"
#include "profiling/device.hpp"
#include "profiling/results/results.hpp"
#include "kernels/common/text.hpp"

namespace flashscope::cli {

namespace {

// The items of a comma-separated list, empty ones dropped (a trailing comma is fine).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items = text::split_list(text);
  std::erase(items, std::string());
  return items;
}

// Every option is checked and every problem kept: throws a UsageError holding them all.
CeilingOptions ceiling_options_from_cli(const PeakCli& cli) {
  UsageProblems problems;
  const auto shortest = [](double value) {
    std::ostringstream text;
    text << value;
    return text.str();
  };
  CeilingOptions options;
  options.device = cli.device;
  options.benchmarks = split_list(cli.only);
  if (options.benchmarks.empty())
    problems.add("--only: '" + cli.only + "' names no benchmark (" + ceiling_benchmark_list() +
                 ")");
  for (const std::string& name : options.benchmarks)
    if (std::find(ceiling_benchmarks().begin(), ceiling_benchmarks().end(), name) ==
        ceiling_benchmarks().end())
      problems.add("--only: '" + name + "' is not a benchmark (" + ceiling_benchmark_list() + ")");
  options.dtypes.clear();
  for (const std::string& name : split_list(cli.dtypes)) {
    const auto dtype = dtype_from_string(name);
    // The tensor-core benchmarks run the 16-bit MMAs (mma.sync, wgmma .f16/.bf16); e4m3's wgmma
    // has no ceiling benchmark yet, so "fp8" is refused here rather than measured as fp16.
    if (!dtype || element_bytes(*dtype) != 2)
      problems.add("--dtypes: '" + name + "' is not fp16 or bf16");
    else
      options.dtypes.push_back(*dtype);
  }
  if (split_list(cli.dtypes).empty())
    problems.add("--dtypes: '" + cli.dtypes + "' names no dtype (fp16, bf16)");
  options.timing.timed_runs = cli.runs;
  options.timing.min_timed_runs = cli.min_runs;
  options.timing.target_ms = cli.target_ms;
  options.timing.warmup_runs = cli.warmup;
  if (cli.runs < 1) problems.add("--runs: " + std::to_string(cli.runs) + " is below 1");
  if (cli.min_runs < 1) problems.add("--min-runs: " + std::to_string(cli.min_runs) + " is below 1");
  if (cli.warmup < 1)
    problems.add("--warmup: " + std::to_string(cli.warmup) +
                 " is below 1 (the first warm-up launch sizes the timed batch)");
  if (!(cli.target_ms >= 0))
    problems.add("--target-ms: " + shortest(cli.target_ms) + " is not 0 or more milliseconds");
  options.work_scale = cli.work_scale;
  if (!(cli.work_scale > 0) || cli.work_scale > 16)
    problems.add("--work-scale: " + shortest(cli.work_scale) + " is not in (0, 16]");
  if (cli.device < 0)
    problems.add("--device: " + std::to_string(cli.device) + " is not a device index (0 or more)");
  options.run_id = cli.run_id;
  if (cli.run_id.find_first_of(",\"\n\r") != std::string::npos)
    problems.add("--run-id: '" + cli.run_id + "' may not hold commas, quotes or line breaks");
  options.locked_sm_clock_mhz = cli.locked_sm_clock_mhz;
  if (cli.locked_sm_clock_mhz && *cli.locked_sm_clock_mhz <= 0)
    problems.add("--locked-sm-clock: " + std::to_string(*cli.locked_sm_clock_mhz) +
                 " is not a clock in MHz");
  if (!cli.output.empty())
    if (const auto problem = atomic_output_problem("--output", cli.output)) problems.add(*problem);
  // The library's own rules, should they ever be stricter than the ones above.
  if (problems.empty())
    problems.check([&] {
      try {
        validate_ceiling_options(options);
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument(std::string("peak options: ") + error.what());
      }
    });
  problems.throw_if_any();
  return options;
}

// The rate per SM and clock at the clock measured under load: what the ex2 and shared-memory
// ceilings are quoted in (16 ex2 and 128 bytes per clock per SM on sm_80 and sm_90).
std::optional<double> per_sm_per_clock(const ResultRow& row, const DeviceDescription& device,
                                       double per_second) {
  if (device.sm_count <= 0 || row.sm_clock_mhz <= 0) return std::nullopt;
  return per_second / (static_cast<double>(device.sm_count) * row.sm_clock_mhz * 1e6);
}

std::string describe(const ResultRow& row, const DeviceDescription& device) {
  char text[320];
  const std::string name = row.subject.text() + (row_dtype(row) ? " " + dtype_text(row) : "");
  const std::string verdict(verdict_name(row.verdict));
  const bool ex2 = row.subject.is_ceiling() && row.subject.benchmark().starts_with("ex2");
  if (!row.status.ok()) {
    std::snprintf(text, sizeof text, "%-22s %s", name.c_str(), row.status.text().c_str());
  } else if (row.gbytes_per_s) {
    const auto per_clock = per_sm_per_clock(row, device, *row.gbytes_per_s * 1e9);
    std::string per_sm;
    if (per_clock && row.subject.benchmark().starts_with("smem")) {
      char extra[64];
      std::snprintf(extra, sizeof extra, " (%.1f B/clk/SM)", *per_clock);
      per_sm = extra;
    }
    std::snprintf(text, sizeof text, "%-22s %8.0f GB/s%s    median %.3f ms, SM clock %d MHz, %s",
                  name.c_str(), *row.gbytes_per_s, per_sm.c_str(), row.median_ms, row.sm_clock_mhz,
                  verdict.c_str());
  } else if (ex2) {
    const auto per_clock = per_sm_per_clock(row, device, row.tflops * 1e12);
    std::snprintf(text, sizeof text,
                  "%-22s %8.3f T ex2/s (%.1f /clk/SM) median %.3f ms, SM clock %d MHz, %s",
                  name.c_str(), row.tflops, per_clock.value_or(0.0), row.median_ms,
                  row.sm_clock_mhz, verdict.c_str());
  } else {
    std::snprintf(text, sizeof text, "%-22s %8.1f TFLOP/s median %.3f ms, SM clock %d MHz, %s",
                  name.c_str(), row.tflops, row.median_ms, row.sm_clock_mhz, verdict.c_str());
  }
  return text;
}

}  // namespace

CLI::App* add_peak_command(CLI::App& app, PeakCli& cli) {
  CLI::App* peak = app.add_subcommand(
      "peak",
      "Measure the device's ceilings with microbenchmarks that issue one instruction family and "
      "nothing else: mma.sync m16n8k16 and wgmma m64n256k16 (sm_90a) TFLOP/s per dtype, HBM read "
      "and copy GB/s, ex2.approx (MUFU) results per second in f32 and f16x2, and conflict-free "
      "128-bit shared-memory reads in GB/s. Each result is checked. Writes results rows whose "
      "step is peak:<benchmark> "
      "(docs/csv-schema.md); the explorer draws them as reference lines and roofs. Exit code 0 "
      "every row ok or skipped, 1 a fault, a failed check or no GPU, 2 invalid options.");
  peak->add_option("--only", cli.only,
                   "Benchmarks, comma-separated: mma.sync, wgmma, hbm, ex2, smem")
      ->capture_default_str();
  peak->add_option("--dtypes", cli.dtypes, "Tensor-core input types: fp16, bf16 or fp16,bf16")
      ->capture_default_str();
  peak->add_option("--runs", cli.runs, "Timed launches per benchmark, at most")
      ->capture_default_str();
  peak->add_option("--min-runs", cli.min_runs, "Timed launches per benchmark, at least")
      ->capture_default_str();
  peak->add_option("--target-ms", cli.target_ms,
                   "GPU time the timed launches of one benchmark aim to cover (as in --csv)")
      ->capture_default_str();
  peak->add_option("--warmup", cli.warmup, "Untimed launches first, at most")
      ->capture_default_str();
  peak->add_option("--work-scale", cli.work_scale,
                   "Work per launch relative to the default (about 5 ms per launch on an H100)")
      ->capture_default_str();
  peak->add_option("--device", cli.device, "CUDA device index")->capture_default_str();
  peak->add_option("--run-id", cli.run_id,
                   "The rows' run_id (default: \"<host> <UTC start>\", as a sweep's)");
  peak->add_option("--locked-sm-clock", cli.locked_sm_clock_mhz,
                   "The SM clock (MHz) the caller locked, recorded in every row (as in --csv)");
  peak->add_option("--output", cli.output,
                   "Write the CSV here instead of stdout (as FILE.partial, renamed to FILE once "
                   "every benchmark has its row; a run that fails leaves FILE as it was; an "
                   "existing FILE.partial is refused)");
  return peak;
}

int run_peak_mode(const PeakCli& cli) {
  CeilingOptions options;
  try {
    options = ceiling_options_from_cli(cli);
  } catch (const UsageError& error) {
    UsageProblems problems;
    for (const std::string& problem : error.problems())
      problems.add(problem);
    return problems.report(std::cerr, "explorer peak");
  }
  // The rows go to FILE.partial and become FILE once every benchmark has its row: a failed run
  // leaves FILE as it was.
  std::optional<AtomicOutputFile> file;
  if (!cli.output.empty()) {
    try {
      file.emplace(cli.output);
    } catch (const std::runtime_error& error) {
      std::cerr << "explorer peak: --output: " << error.what() << "\n";
      return 2;
    }
  }
  std::ostream& out = file ? file->stream() : std::cout;
  try {
    std::optional<ResultsCsvWriter> writer;  // the header only once a row exists
    bool clean = true;
    std::size_t rows = 0;
    const DeviceDescription device = describe_device(options.device);
    measure_ceilings(options, [&](const ResultRow& row) {
      if (!writer) writer.emplace(out);
      writer->write(row);
      ++rows;
      std::cerr << "explorer peak: " << describe(row, device) << "\n";
      clean = clean && !row.status.is_fault() && row.verdict != Verdict::fail;
    });
    if (!writer) writer.emplace(out);
    if (file) file->commit();
    std::cerr << "explorer peak: " << rows << " rows" << (file ? " written to " + cli.output : "")
              << (clean ? "" : "; some faulted or failed their check") << "\n";
    return clean ? 0 : 1;
  } catch (const NoCudaDevice& error) {
    std::cerr << "explorer peak: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "explorer peak: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace flashscope::cli
