// Benchmark (not a test: it asserts no time): how long the explorer takes to open a results CSV
// of the largest size the reader accepts (10^6 rows, docs/csv-schema.md, Limits), and what the
// first frame of each view then costs. docs/hardening.md records its numbers.
//
//   bench_results_load [--rows 1000000] [--file PATH] [--keep]
//
// Without --file it writes a SYNTHETIC file of --rows rows first (every kernel row a real config
// of configs/, steps 1..configs::kLastStep, both dtypes, the six N of a sweep, FA2 and cuDNN rows,
// repeated over as many "sweeps" as needed; the device column says it is synthetic) into the temp
// folder, and removes it afterwards unless --keep is given.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/gui/explorer_state.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/sweep_series.hpp"
#include "kernels/common/config.hpp"
#include "profiling/results/results.hpp"

namespace {

using flashscope::KernelConfig;
using flashscope::ResultRow;
namespace configs = flashscope::configs;
namespace explorer = flashscope::explorer;

constexpr int kSeqLens[] = {512, 1024, 2048, 4096, 8192, 16384};
constexpr int kBatches[] = {16, 16, 16, 16, 8, 4};

// Deterministic value in [0, 1).
double noise(std::uint64_t seed) {
  seed ^= seed >> 33;
  seed *= 0xFF51AFD7ED558CCDull;
  seed ^= seed >> 33;
  seed *= 0xC4CEB9FE1A85EC53ull;
  seed ^= seed >> 33;
  return static_cast<double>(seed >> 11) / static_cast<double>(1ull << 53);
}

ResultRow make_row(const std::string& step, const std::string& config, const char* dtype,
                   int n_index, std::uint64_t index, const std::string& commit) {
  ResultRow row;
  row.subject = *flashscope::RowSubject::from_text(step);
  if (!std::string_view(config).empty()) row.config = flashscope::parse_short_form(config);
  row.problem.dtype = flashscope::dtype_from_string(dtype).value_or(flashscope::DType::FP16);
  row.problem.batch = kBatches[n_index];
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = kSeqLens[n_index];
  row.runs = 30;
  row.tflops = 100 + 300 * noise(index);
  row.median_ms = flashscope::matmul_flops(row.problem.batch, row.problem.heads,
                                           row.problem.seq_len, row.problem.d_head) /
                  (row.tflops * 1e9);
  row.min_ms = row.median_ms * 0.99;
  row.max_ms = row.median_ms * 1.02;
  row.seed_attn_tflops = row.tflops * 1.01;
  if (!config.empty()) {
    row.pct_fa2 = 50 + 50 * noise(index + 1);
    row.pct_cudnn = 30 + 50 * noise(index + 2);
    row.registers = 128 + static_cast<int>(127 * noise(index + 3));
    row.smem_bytes = 49152;
    row.local_bytes = 0;
  }
  row.cycles = row.median_ms * 1.98e6;
  row.l2_hit_pct = 90 + 9 * noise(index + 4);
  row.cupti_duration_ms = row.median_ms * 0.97;
  row.verdict = flashscope::Verdict::pass;
  row.max_error = 0.0001220703;
  row.device = "synthetic benchmark data (not a measurement)";
  row.sm_clock_mhz = 1780;
  row.cache_mode = "warm";
  row.git_commit = commit;
  row.input_seed = index;
  return row;
}

// Writes `rows` rows: sweeps of every step's configs over both dtypes and six N, then FA2 and
// cuDNN at each (dtype, N); each sweep a different commit, as results of many runs merged.
void write_synthetic(const std::string& path, std::uint64_t rows) {
  std::vector<KernelConfig> kernel_configs = configs::tune_set();
  for (const KernelConfig& c : configs::extended_progression())
    kernel_configs.push_back(c);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  flashscope::ResultsCsvWriter writer(out);
  std::uint64_t written = 0;
  for (int sweep = 0; written < rows; ++sweep) {
    char commit[16];
    std::snprintf(commit, sizeof commit, "%012x", 0x5eed0000 + sweep);
    for (int step = configs::kFirstStep; step <= configs::kLastStep && written < rows; ++step)
      for (const KernelConfig& base : kernel_configs)
        for (const flashscope::DType dtype : {flashscope::DType::FP16, flashscope::DType::BF16})
          for (int n = 0; n < 6 && written < rows; ++n) {
            const std::string config = flashscope::to_short_form(configs::with_dtype(base, dtype));
            writer.write(make_row(std::to_string(step), config,
                                  std::string(flashscope::dtype_lower_name(dtype)).c_str(), n,
                                  written, commit));
            ++written;
          }
    for (const char* baseline : {"fa2", "cudnn"})
      for (const char* dtype : {"fp16", "bf16"})
        for (int n = 0; n < 6 && written < rows; ++n) {
          writer.write(make_row(baseline, "", dtype, n, written, commit));
          ++written;
        }
  }
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times opening a large results CSV in the explorer's model (a benchmark: it "
      "prints times and asserts none). See docs/hardening.md."};
  std::uint64_t rows = 1'000'000;
  std::string file;
  bool keep = false;
  app.add_option("--rows", rows, "Rows of the synthetic file to write and open")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10'000'000}));
  app.add_option("--file", file, "Open this results CSV instead of writing a synthetic one")
      ->check(CLI::ExistingFile);
  app.add_flag("--keep", keep, "Keep the synthetic file (its path is printed)");
  CLI11_PARSE(app, argc, argv);

  try {
    std::string path = file;
    if (path.empty()) {
      path = (std::filesystem::temp_directory_path() /
              ("flashscope_bench_" + std::to_string(rows) + "_rows_" + std::to_string(::getpid()) +
               ".csv"))
                 .string();
      const double write_s = seconds_of([&] { write_synthetic(path, rows); });
      std::printf("wrote %s: %llu rows, %.1f MiB in %.2f s\n", path.c_str(),
                  static_cast<unsigned long long>(rows),
                  static_cast<double>(std::filesystem::file_size(path)) / (1 << 20), write_s);
    }
    const double baseline_mib = peak_rss_mib();

    std::size_t parsed_rows = 0;
    const double parse_s =
        seconds_of([&] { parsed_rows = flashscope::read_results_file(path).size(); });
    std::printf("read_results_file:            %8.2f s  (%zu rows, %.0f rows/s)\n", parse_s,
                parsed_rows, static_cast<double>(parsed_rows) / parse_s);

    // What the GUI's Open box (or --results) does: read, pick the device and cache mode, build
    // the row set the views share, repair the selection.
    explorer::ExplorerState state;
    const double load_s = seconds_of([&] { state.load({path}); });
    for (const std::string& problem : state.problems())
      std::printf("problem: %s\n", problem.c_str());
    std::printf("ExplorerState::load:          %8.2f s  (%zu rows in the view)\n", load_s,
                state.rows().rows().size());

    // The first frame of each view: the model it builds and caches.
    const explorer::RowSet& set = state.rows();
    const double progression_s = seconds_of([&] {
      (void)explorer::build_progression(
          set, {state.selection.dtype, std::nullopt, flashscope::Baseline::fa2});
    });
    std::printf("progression (harmonic mean):  %8.2f s\n", progression_s);
    explorer::SweepQuery sweep;
    const double sweep_s = seconds_of([&] {
      sweep.steps = explorer::available_series_steps(set);
      sweep.dtypes = set.dtypes();
      (void)explorer::build_sweep_series(set, sweep);
    });
    std::printf("sweep series (every step):    %8.2f s\n", sweep_s);
    explorer::AutotuneModel autotune;
    const double autotune_s = seconds_of([&] {
      autotune = explorer::build_autotune_model(set, {7, "", std::nullopt});
    });
    std::printf("autotune model (step 7):      %8.2f s  (%zu points)\n", autotune_s,
                autotune.points.size());
    std::vector<const ResultRow*> table;
    for (const explorer::AutotunePoint& point : autotune.points)
      table.push_back(point.row);
    const explorer::SortKey by_tflops[] = {{explorer::Field::tflops, true}};
    const double sort_s = seconds_of([&] { explorer::sort_rows(table, by_tflops, set); });
    std::printf("autotune table sort (TFLOP/s): %7.2f s\n", sort_s);
    std::printf("peak RSS: %.0f MiB (%.0f MiB before reading)\n", peak_rss_mib(), baseline_mib);

    if (file.empty() && !keep) std::filesystem::remove(path);
  } catch (const std::exception& error) {
    std::cerr << "bench_results_load: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
