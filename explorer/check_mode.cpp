#include "explorer/check_mode.hpp"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include "configs/config_sets.hpp"
#include "explorer/usage.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/common/launch_validation.hpp"
#include "profiling/device.hpp"

namespace flashscope::cli {

CLI::App* add_check_command(CLI::App& app, CheckCli& cli) {
  CLI::App* check = app.add_subcommand(
      "check",
      "Run one kernel on one shape with fresh N(0, scale²) inputs and report the §1.4 verdict "
      "(err_kernel = max|O - R_lp| <= 2 * max|R_lp - R_32|) and the max/mean error against the "
      "fp32 reference. Exit code 0 pass, 1 fail, 2 invalid request, 3 no GPU or CUDA error.");
  check
      ->add_option("--step", cli.step,
                   "Kernel step, 1-" + std::to_string(configs::kLastStep) + " (" +
                       std::to_string(kFirstHopperStep) + "-" + std::to_string(configs::kLastStep) +
                       ": the Hopper track, sm_90a only)")
      ->required();
  check->add_option("--config", cli.config,
                    "Config short form, e.g. \"(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles\" "
                    "(default: the step's built config for --dtype)");
  check->add_option("--dtype", cli.dtype, "fp16 or bf16 (default: the config's, else fp16)");
  check->add_option("--batch", cli.batch, "Batch size")->capture_default_str();
  check->add_option("--seq-len", cli.seq_len, "Sequence length N")->capture_default_str();
  check->add_option("--heads", cli.heads, "Heads")->capture_default_str();
  check
      ->add_option("--d-head", cli.d_head,
                   "Head dimension: " + configs::d_head_support_text() +
                       " (default: --config's d_head, else 128; without --config, the step's "
                       "progression config at that d_head)")
      ->capture_default_str();
  check->add_flag("--causal", cli.causal,
                  "Check the causal problem (query i attends to keys j <= i) against the "
                  "references with the mask; causal attention runs on " +
                      configs::step_list_text(configs::steps_supporting_causal()) +
                      ", another step is refused naming them");
  check->add_option("--seed", cli.seed,
                    "Input seed (default: fresh, printed); a sweep row's input_seed reproduces "
                    "that row's inputs at its shape");
  check->add_option("--input-scale", cli.input_scale, "Inputs are N(0, scale²)")
      ->capture_default_str();
  check->add_option("--dump", cli.dump_dir,
                    "Write q, k, v, o and both references as .npy into this folder (fp16 as "
                    "'<f2'; bf16, which numpy lacks, widened exactly to float32 '<f4'); a folder "
                    "already holding any of those files is refused");
  check->add_option("--device", cli.device, "CUDA device index")->capture_default_str();
  return check;
}

CheckRequest check_request_from_cli(const CheckCli& cli) {
  // Every option is checked and every problem kept (UsageError), before any GPU is looked for.
  UsageProblems problems;
  CheckRequest request;
  request.step = cli.step;
  bool step_valid = false;
  problems.check([&] {
    try {
      configs::step_info(cli.step);
      step_valid = true;
    } catch (const std::out_of_range& error) {
      throw std::invalid_argument(std::string("--step: ") + error.what());
    }
  });
  bool config_valid = true;
  if (!cli.config.empty()) {
    try {
      request.config = parse_config(cli.config);
    } catch (const ConfigParseError& error) {
      problems.add(std::string("--config: ") + error.what());
      config_valid = false;
    }
  }
  if (!cli.dtype.empty()) {
    request.dtype = dtype_from_string(cli.dtype);
    if (!request.dtype) problems.add("--dtype: '" + cli.dtype + "' is not fp16 or bf16");
  }
  bool shape_valid = true;
  const int d_head = cli.d_head.value_or(request.config ? request.config->d_head : 128);
  for (const auto& [option, value] :
       {std::pair{"--batch", cli.batch}, std::pair{"--seq-len", cli.seq_len},
        std::pair{"--heads", cli.heads}, std::pair{"--d-head", d_head}})
    if (value <= 0) {
      problems.add(std::string(option) + ": " + std::to_string(value) + " is not positive");
      shape_valid = false;
    }
  request.shape = AttentionShape{cli.batch, cli.seq_len, cli.heads, d_head, cli.causal};
  if (cli.seed) {
    request.seed = *cli.seed;
  } else {
    std::random_device entropy;
    request.seed =
        ((static_cast<std::uint64_t>(entropy()) << 32) | entropy()) % 1'000'000'000'000ull;
  }
  {
    std::ostringstream scale;
    scale << cli.input_scale;
    if (!(cli.input_scale > 0)) problems.add("--input-scale: " + scale.str() + " is not positive");
  }
  request.input_scale = cli.input_scale;
  if (!cli.dump_dir.empty()) {
    std::error_code error;
    if (std::filesystem::exists(cli.dump_dir, error) &&
        !std::filesystem::is_directory(cli.dump_dir, error))
      problems.add("--dump: '" + cli.dump_dir + "' is a file; name a folder to write into");
    // Files of an earlier dump are not this run's to overwrite.
    std::string existing;
    for (const std::string& name : check_dump_file_names())
      if (std::filesystem::exists(std::filesystem::path(cli.dump_dir) / name, error))
        existing += (existing.empty() ? "" : ", ") + name;
    if (!existing.empty())
      problems.add("--dump: '" + cli.dump_dir + "' already holds " + existing +
                   " (an earlier dump?); move them or name another folder (this check would "
                   "overwrite them)");
  }
  request.dump_dir = cli.dump_dir;
  if (cli.device < 0)
    problems.add("--device: " + std::to_string(cli.device) + " is not a device index (0 or more)");
  request.device = cli.device;
  // Which kernel, and whether it takes the shape: the registry and launch rules need no GPU.
  if (step_valid && config_valid && shape_valid && (cli.dtype.empty() || request.dtype))
    problems.check([&] {
      validate_request_shape(resolve_check_kernel(request, built_kernels()), request.shape);
    });
  problems.throw_if_any();
  return request;
}

int run_check_mode(const CheckCli& cli) {
  CheckRequest request;
  try {
    request = check_request_from_cli(cli);
  } catch (const UsageError& error) {
    UsageProblems problems;
    for (const std::string& problem : error.problems())
      problems.add(problem);
    return problems.report(std::cerr, "explorer check");
  }
  CheckReport report;
  try {
    report = run_check(request);
  } catch (const NoCudaDevice& error) {
    std::cerr << "explorer check: " << error.what() << "\n";
    return 3;
  } catch (const CudaError& error) {
    std::cerr << "explorer check: " << error.what() << "\n";
    return 3;
  } catch (const std::invalid_argument& error) {  // includes lookup and validation errors
    std::cerr << "explorer check: " << error.what() << "\n";
    return 2;
  } catch (const std::out_of_range& error) {
    std::cerr << "explorer check: --step: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "explorer check: " << error.what() << "\n";
    return 3;
  }
  const AttentionShape& s = report.shape;
  const CorrectnessVerdict& verdict = report.verdict;
  std::cout << "step " << report.kernel->step << " " << to_short_form(report.kernel->config)
            << "\n  shape B=" << s.batch << " N=" << s.seq_len << " H=" << s.heads
            << " d=" << s.d_head << (s.causal ? " causal" : "") << " "
            << dtype_lower_name(report.dtype) << ", inputs N(0, " << cli.input_scale << "²), seed "
            << report.seed << "\n  §1.4: " << (verdict.passed ? "PASS" : "FAIL") << "  "
            << verdict.summary() << "\n"
            << std::setprecision(4)
            << "  vs fp32 reference: max |O - R_32| = " << verdict.vs_fp32.max_abs
            << ", mean = " << verdict.vs_fp32.mean_abs
            << (verdict.nan_count ? ", NaN elements: " + std::to_string(verdict.nan_count) : "")
            << "\n";
  if (!report.dumped_files.empty()) {
    std::cout << "  wrote";
    for (const std::string& path : report.dumped_files)
      std::cout << " " << path;
    std::cout << "\n";
    if (report.dtype == DType::BF16)
      std::cout << "  (bf16 tensors are stored as float32 '<f4': numpy has no bf16; the "
                   "widening is exact)\n";
  }
  return verdict.passed ? 0 : 1;
}

}  // namespace flashscope::cli
