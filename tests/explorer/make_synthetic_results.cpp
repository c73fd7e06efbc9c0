// Writes SYNTHETIC result files for the explorer's GUI tests. Nothing here was measured: every
// row says so in its device and git_commit columns, and the files live in the build tree only.
//
//   make_synthetic_results --out-dir DIR [--configs-per-step 52]
//
// DIR/baseline.csv  16 steps x configs x 6 N x 2 dtypes + references (~10,000 rows by default)
// DIR/variant.csv   the same measurements, later steps faster: the second file for Compare
// DIR/two_gpus.csv  a smaller plan measured in full on GPU 0 and on GPU 1 of one (synthetic)
//                   model (two --devices N runs written into one file), GPU 1 3 % slower: the
//                   GPU filter and the compare view's two GPUs side by side
// DIR/d_heads.csv   step 22 at d_head 64, 128 and 256 (two configs each), step 21 at 128, and
//                   cuDNN at each d_head: the GUI's d_head selector
// DIR/corrupt.csv   a results header, one good row, then a row with missing fields
// DIR/foreign.csv   a CSV from somewhere else entirely
// DIR/sass/         a SASS artifact of every step (tests/explorer/synthetic_sass.hpp)
// baseline.csv and variant.csv also hold device ceilings (peak:* rows) and DRAM byte counts, so
// the roofline has points and roofs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <vector>

#include "configs/config_sets.hpp"
#include "kernels/common/config.hpp"
#include "profiling/results/results.hpp"
#include "tests/explorer/synthetic_sass.hpp"

namespace {

using flashscope::KernelConfig;
using flashscope::ResultRow;

constexpr const char* kDevice = "synthetic test data (not a measurement)";
constexpr int kSeqLens[] = {512, 1024, 2048, 4096, 8192, 16384};
constexpr int kBatches[] = {16, 16, 16, 16, 8, 4};  // spec §1.2
constexpr int kHeads = 16;
constexpr int kHeadDim = 128;
constexpr double kClockHz = 1.98e9;

// Deterministic noise in [0, 1) so the files are identical on every run.
double noise(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t x =
      a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ c * 0x165667B19E3779F9ull;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
}

std::vector<KernelConfig> candidate_configs(flashscope::DType dtype) {
  std::vector<KernelConfig> configs;
  for (int b_r : {64, 128})
    for (int b_c : {32, 64, 128})
      for (int warps : {4, 8})
        for (int load : {0, 2})
          for (int v_load : {0, 2})
            for (bool buffer : {false, true})
              for (bool softmax : {false, true}) {
                const KernelConfig config{dtype, kHeadDim, b_r,  b_c,    warps,  true,   true,
                                          true,  load,     load, v_load, buffer, softmax};
                if (flashscope::is_statically_valid(config)) configs.push_back(config);
              }
  return configs;
}

ResultRow make_row(const std::string& step, const std::string& config, const std::string& dtype,
                   int n_index, double tflops) {
  const int seq_len = kSeqLens[n_index];
  const int batch = kBatches[n_index];
  ResultRow row;
  row.subject = *flashscope::RowSubject::from_text(step);
  if (!std::string_view(config).empty()) row.config = flashscope::parse_short_form(config);
  row.problem.dtype = flashscope::dtype_from_string(dtype).value_or(flashscope::DType::FP16);
  row.problem.d_head = kHeadDim;
  row.problem.batch = batch;
  row.problem.heads = kHeads;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = seq_len;
  row.runs = 30;
  row.tflops = tflops;
  row.median_ms = flashscope::matmul_flops(batch, kHeads, seq_len, kHeadDim) / (tflops * 1e9);
  row.min_ms = row.median_ms * 0.98;
  row.max_ms = row.median_ms * 1.03;
  row.seed_attn_tflops =
      flashscope::seed_attention_flops(batch, kHeads, seq_len, kHeadDim) / (row.median_ms * 1e9);
  row.cycles = row.median_ms * 1e-3 * kClockHz;
  row.verdict = flashscope::Verdict::pass;
  row.device = kDevice;
  row.sm_clock_mhz = static_cast<int>(kClockHz / 1e6);
  row.cache_mode = "warm";
  row.git_commit = "synthetic";
  return row;
}

// Ceilings as `explorer peak` writes them: the tensor-core families per dtype, the HBM rows, the
// ex2 rates and shared memory.
void write_ceilings(flashscope::ResultsCsvWriter& writer) {
  const auto ceiling = [](const std::string& name, const std::string& dtype, double tflops,
                          std::optional<double> gbytes_per_s) {
    ResultRow row = make_row("fa2", "", dtype.empty() ? "fp16" : dtype, 0, 1);
    row.subject = flashscope::RowSubject::ceiling(name, flashscope::dtype_from_string(dtype));
    row.problem.d_head = row.problem.batch = row.problem.heads = row.problem.seq_len = 0;
    row.median_ms = 5;
    row.min_ms = 4.9;
    row.max_ms = 5.2;
    row.tflops = row.seed_attn_tflops = tflops;
    row.gbytes_per_s = gbytes_per_s;
    row.cycles.reset();
    return row;
  };
  for (const char* dtype : {"fp16", "bf16"}) {
    writer.write(ceiling("mma.sync", dtype, 420, std::nullopt));
    writer.write(ceiling("wgmma", dtype, 720, std::nullopt));
  }
  writer.write(ceiling("hbm.read", "", 0, 4100));
  writer.write(ceiling("hbm.copy", "", 0, 3900));
  // 10^12 exponentials per second in tflops (profiling/ceilings/ceilings.hpp); on-chip bandwidth.
  writer.write(ceiling("ex2.f32", "", 4.2, std::nullopt));
  writer.write(ceiling("ex2.f16x2", "", 8.4, std::nullopt));
  writer.write(ceiling("smem.read", "", 0, 33000));
}

// A plausible-looking progression: later steps faster, long sequences faster, configs spread.
// With `gpu`, every row names that device index and a made-up UUID, and runs `gpu_factor` as fast.
void write_results(flashscope::ResultsCsvWriter& writer, int configs_per_step,
                   double late_step_speedup, std::optional<int> gpu = std::nullopt,
                   double gpu_factor = 1.0) {
  // DRAM traffic: Q, K, V read and O written once, plus K and V re-read by a share of the CTAs.
  const auto add_dram = [](ResultRow& row, double reread) {
    const double tensor_bytes = double(row.problem.batch) * row.problem.heads *
                                row.problem.seq_len * row.problem.d_head * 2;
    row.extra_metrics["dram__bytes_read.sum"] = tensor_bytes * (3 + reread);
    row.extra_metrics["dram__bytes_write.sum"] = tensor_bytes;
  };
  const double n_factor[] = {0.70, 0.88, 0.96, 1.0, 0.99, 0.99};
  const auto on_gpu = [&](ResultRow row) {
    if (!gpu) return row;
    row.device_index = *gpu;
    row.device_uuid =
        "GPU-5e7a7e" + std::to_string(*gpu) + "0-0000-4000-8000-00000000000" + std::to_string(*gpu);
    row.tflops *= gpu_factor;
    row.median_ms /= gpu_factor;
    row.min_ms /= gpu_factor;
    row.max_ms /= gpu_factor;
    row.seed_attn_tflops *= gpu_factor;
    return row;
  };
  for (int d = 0; d < 2; ++d) {
    const auto dtype = d == 0 ? flashscope::DType::FP16 : flashscope::DType::BF16;
    const std::string dtype_name(flashscope::dtype_lower_name(dtype));
    for (int n = 0; n < 6; ++n) {
      ResultRow fa2 = make_row("fa2", "", dtype_name, n, 340 * n_factor[n]);
      add_dram(fa2, 1.0);
      writer.write(on_gpu(fa2));
      ResultRow cudnn = make_row("cudnn", "", dtype_name, n, 580 * n_factor[n]);
      add_dram(cudnn, 0.5);
      writer.write(on_gpu(cudnn));
    }
    const std::vector<KernelConfig> configs = candidate_configs(dtype);
    for (int step = 1; step <= 16; ++step) {
      const double step_level = 60 + 280 * (1 - std::exp(-step / 3.0));
      const double speedup = step >= 8 ? late_step_speedup : 1.0;
      for (int c = 0; c < configs_per_step; ++c) {
        // A stride coprime with the candidate count spreads the picks over every block shape.
        const KernelConfig& config = configs[static_cast<std::size_t>(c) * 37 % configs.size()];
        const std::string short_form = flashscope::to_short_form(config);
        const double config_factor = 0.75 + 0.25 * noise(step, c, d);
        for (int n = 0; n < 6; ++n) {
          const double jitter = 0.97 + 0.06 * noise(step, c, n + 10 * d);
          ResultRow row = make_row(std::to_string(step), short_form, dtype_name, n,
                                   step_level * config_factor * n_factor[n] * jitter * speedup);
          row.registers = 128 + static_cast<int>(noise(step, c, 99) * 127);
          row.smem_bytes = flashscope::smem_bytes(config);
          row.local_bytes = noise(step, c, 98) < 0.1 ? 16 : 0;
          row.l2_hit_pct = 70 + 29 * noise(step, c, n + 50);
          row.max_error = 1e-3 * noise(step, c, n + 70);
          add_dram(row, 4.0 * noise(step, c, n + 30) + 8.0 / step);
          if (noise(step, c, n + 90) < 0.01) {  // a few faults, as real sweeps have
            row.status = flashscope::RowStatus::fault("synthetic launch failure");
            row.verdict = flashscope::Verdict::unchecked;
          }
          writer.write(on_gpu(row));
        }
      }
    }
  }
}

// Step 22 at every head dimension it runs, step 21 at 128, cuDNN at each: rows of one problem
// per d_head, so a view that mixed them would show step 22's d_head 64 rows against d_head 128.
void write_head_dimensions(flashscope::ResultsCsvWriter& writer) {
  const auto at_d_head = [](ResultRow row, int d_head) {
    row.problem.d_head = d_head;
    row.median_ms = flashscope::matmul_flops(row.problem.batch, row.problem.heads,
                                             row.problem.seq_len, d_head) /
                    (row.tflops * 1e9);
    row.min_ms = row.median_ms * 0.98;
    row.max_ms = row.median_ms * 1.03;
    row.seed_attn_tflops = flashscope::seed_attention_flops(row.problem.batch, row.problem.heads,
                                                            row.problem.seq_len, d_head) /
                           (row.median_ms * 1e9);
    row.cycles = row.median_ms * 1e-3 * kClockHz;
    return row;
  };
  for (const char* dtype : {"fp16", "bf16"})
    for (const int d_head : {64, 128, 256})
      for (int n = 0; n < static_cast<int>(std::size(kSeqLens)); ++n) {
        // Longer rows and wider heads run faster, as on a GPU; cuDNN in between the configs.
        const double level = 380 + 40 * n + d_head / 2.0;
        writer.write(at_d_head(make_row("cudnn", "", dtype, n, level), d_head));
        KernelConfig config = flashscope::configs::headline_config(22, d_head);
        config.dtype = *flashscope::dtype_from_string(dtype);
        writer.write(at_d_head(
            make_row("22", flashscope::to_short_form(config), dtype, n, level * 1.04), d_head));
        config.consumer_regs = config.consumer_regs == 224 ? 240 : 224;  // the other split
        writer.write(at_d_head(
            make_row("22", flashscope::to_short_form(config), dtype, n, level * 0.97), d_head));
        if (d_head == 128) {
          KernelConfig step_21 = *flashscope::configs::step_picks(21).progression;
          step_21.dtype = config.dtype;
          writer.write(make_row("21", flashscope::to_short_form(step_21), dtype, n, level * 0.99));
        }
      }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write synthetic result CSVs for the explorer's GUI tests"};
  std::string out_dir;
  int configs_per_step = 52;
  app.add_option("--out-dir", out_dir, "Folder to write the files into")->required();
  app.add_option("--configs-per-step", configs_per_step, "Configs per step and dtype")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  std::filesystem::create_directories(out_dir);
  const std::filesystem::path dir(out_dir);
  const std::vector<std::string> dram_metrics = {"dram__bytes_read.sum", "dram__bytes_write.sum"};
  {
    std::ofstream baseline(dir / "baseline.csv");
    flashscope::ResultsCsvWriter writer(baseline, dram_metrics);
    write_ceilings(writer);
    write_results(writer, configs_per_step, 1.0);
  }
  {
    std::ofstream variant(dir / "variant.csv");
    flashscope::ResultsCsvWriter writer(variant, dram_metrics);
    write_ceilings(writer);
    write_results(writer, configs_per_step, 1.06);
  }
  {
    std::ofstream two_gpus(dir / "two_gpus.csv");
    flashscope::ResultsCsvWriter writer(two_gpus, dram_metrics);
    write_ceilings(writer);
    const int configs = std::min(configs_per_step, 8);
    write_results(writer, configs, 1.0, 0, 1.0);
    write_results(writer, configs, 1.0, 1, 0.97);
  }
  {
    std::ofstream d_heads(dir / "d_heads.csv");
    flashscope::ResultsCsvWriter writer(d_heads);
    write_head_dimensions(writer);
  }
  {
    std::ofstream corrupt(dir / "corrupt.csv");
    flashscope::ResultsCsvWriter writer(corrupt);
    writer.write(make_row("1", "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles", "fp16", 3, 50));
    corrupt << "2,oops\n";
  }
  { std::ofstream(dir / "foreign.csv") << "name,score\nalice,3\nbob,4\n"; }
  flashscope::testing::write_synthetic_sass(dir / "sass", flashscope::configs::kLastStep);
  std::cout << "wrote synthetic test data to " << out_dir << '\n';
  return 0;
}
