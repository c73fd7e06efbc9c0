#include "explorer/peak_mode.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "profiling/ceilings.hpp"
#include "profiling/device.hpp"
#include "profiling/results.hpp"

namespace flashscope::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) items.push_back(item);
    begin = end + 1;
  }
  return items;
}

CeilingOptions ceiling_options_from_cli(const PeakCli& cli) {
  CeilingOptions options;
  options.device = cli.device;
  options.benchmarks = split_list(cli.only);
  if (options.benchmarks.empty()) throw std::invalid_argument("--only: names no benchmark");
  options.dtypes.clear();
  for (const std::string& name : split_list(cli.dtypes)) {
    const auto dtype = dtype_from_string(name);
    if (!dtype) throw std::invalid_argument("--dtypes: '" + name + "' is not fp16 or bf16");
    options.dtypes.push_back(*dtype);
  }
  options.timing.timed_runs = cli.runs;
  options.timing.min_timed_runs = cli.min_runs;
  options.timing.target_ms = cli.target_ms;
  options.timing.warmup_runs = cli.warmup;
  options.work_scale = cli.work_scale;
  options.run_id = cli.run_id;
  options.locked_sm_clock_mhz = cli.locked_sm_clock_mhz;
  try {
    validate_ceiling_options(options);
  } catch (const std::invalid_argument& error) {
    const std::string text = error.what();
    if (text.find("benchmark") != std::string::npos) throw std::invalid_argument("--only: " + text);
    if (text.find("work_scale") != std::string::npos)
      throw std::invalid_argument("--work-scale: " + text);
    if (text.find("locked_sm_clock") != std::string::npos)
      throw std::invalid_argument("--locked-sm-clock: " + text);
    throw std::invalid_argument("timing options: " + text);
  }
  return options;
}

std::string describe(const ResultRow& row) {
  char text[256];
  const std::string name = row.step + (row.dtype.empty() ? "" : " " + row.dtype);
  if (row.status != "ok") {
    std::snprintf(text, sizeof text, "%-22s %s", name.c_str(), row.status.c_str());
  } else if (row.gbytes_per_s) {
    std::snprintf(text, sizeof text, "%-22s %8.0f GB/s    median %.3f ms, SM clock %d MHz, %s",
                  name.c_str(), *row.gbytes_per_s, row.median_ms, row.sm_clock_mhz,
                  row.verdict.c_str());
  } else {
    std::snprintf(text, sizeof text, "%-22s %8.1f TFLOP/s median %.3f ms, SM clock %d MHz, %s",
                  name.c_str(), row.tflops, row.median_ms, row.sm_clock_mhz, row.verdict.c_str());
  }
  return text;
}

}  // namespace

CLI::App* add_peak_command(CLI::App& app, PeakCli& cli) {
  CLI::App* peak = app.add_subcommand(
      "peak",
      "Measure the device's ceilings with microbenchmarks that issue one instruction family and "
      "nothing else: mma.sync m16n8k16 and wgmma m64n256k16 (sm_90a) TFLOP/s per dtype, HBM read "
      "and copy GB/s. Each result is checked. Writes results rows whose step is peak:<benchmark> "
      "(docs/csv-schema.md); the explorer draws them as reference lines and roofs. Exit code 0 "
      "every row ok or skipped, 1 a fault, a failed check or no GPU, 2 invalid options.");
  peak->add_option("--only", cli.only, "Benchmarks, comma-separated: mma.sync, wgmma, hbm")
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
  peak->add_option("--output", cli.output, "Write the CSV here instead of stdout");
  return peak;
}

int run_peak_mode(const PeakCli& cli) {
  CeilingOptions options;
  try {
    options = ceiling_options_from_cli(cli);
  } catch (const std::invalid_argument& error) {
    std::cerr << "explorer peak: " << error.what() << "\n";
    return 2;
  }
  std::ofstream file;
  if (!cli.output.empty()) {
    file.open(cli.output, std::ios::binary);
    if (!file) {
      std::cerr << "explorer peak: --output: cannot write " << cli.output << "\n";
      return 2;
    }
  }
  std::ostream& out = cli.output.empty() ? std::cout : file;
  try {
    std::optional<ResultsCsvWriter> writer;  // the header only once a row exists
    bool clean = true;
    measure_ceilings(options, [&](const ResultRow& row) {
      if (!writer) writer.emplace(out);
      writer->write(row);
      std::cerr << "explorer peak: " << describe(row) << "\n";
      clean = clean && !row.status.starts_with("fault") && row.verdict != "fail";
    });
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
