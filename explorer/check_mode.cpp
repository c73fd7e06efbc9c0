#include "explorer/check_mode.hpp"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include "configs/config_sets.hpp"
#include "explorer/step_option.hpp"
#include "explorer/usage.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/registry.hpp"
#include "kernels/common/persistent_grid_limit.hpp"
#include "configs/launch_validation.hpp"
#include "profiling/device.hpp"
#include "kernels/common/text.hpp"

#include <algorithm>
#include <cmath>

namespace flashscope::cli {

CLI::App* add_check_command(CLI::App& app, CheckCli& cli) {
  CLI::App* check = app.add_subcommand(
      "check",
      "Run one kernel on one shape with fresh N(0, scale²) inputs and report the §1.4 verdict "
      "(err_kernel = max|O - R_lp| <= 2 * max|R_lp - R_32|) and the max/mean error against the "
      "fp32 reference. A backward step (B1 = 101, B2 = 102, ...) runs on the references' forward "
      "O and log-sum-exp and is judged on dQ, dK and dV each (backward-track.md §2: max|G - G_32| "
      "<= 2 * max|G_lp - G_32| + floor, no NaN). Exit code 0 pass, 1 fail, 2 invalid request, 3 "
      "no GPU or CUDA error.");
  check
      ->add_option("--step", cli.step,
                   "Kernel step, 1-" + std::to_string(configs::kLastStep) + " (" +
                       std::to_string(kFirstHopperStep) + "-" + std::to_string(configs::kLastStep) +
                       ": the Hopper track, sm_90a only), or a backward step " +
                       std::to_string(kFirstBackwardStep) + "-" +
                       std::to_string(configs::kLastBackwardStep) + " (" +
                       step_name(kFirstBackwardStep) + "-" + step_name(configs::kLastBackwardStep) +
                       "), checked on the backward pass; a backward step may be named B1, B2, ...")
      ->transform(step_name_transform())
      ->required();
  check->add_option("--config", cli.config,
                    "Config short form, e.g. \"(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles\" "
                    "(default: the step's built config for --dtype)");
  // One option per problem axis, from the table.
  for (const AxisSpec& spec : problem_axes()) {
    if (spec.check_flag.empty()) continue;
    std::string help(spec.check_help);
    if (spec.axis == Axis::d_head) help += "; " + configs::d_head_support_text();
    if (spec.is_switch)
      check->add_flag(std::string(spec.check_flag) + "{1}", cli.axes[spec.axis], help);
    else
      check->add_option(std::string(spec.check_flag), cli.axes[spec.axis], help);
  }
  check->add_option("--seed", cli.seed,
                    "Input seed (default: fresh, printed); a sweep row's input_seed reproduces "
                    "that row's inputs at its shape");
  check->add_option("--input-scale", cli.input_scale, "Inputs are N(0, scale²)")
      ->capture_default_str();
  check->add_option("--dump", cli.dump_dir,
                    "Write q, k, v, o and both references as .npy into this folder (a backward "
                    "step: q, k, v, o, do, dq, dk, dv and each gradient's two references; fp16 as "
                    "'<f2'; bf16, which numpy lacks, widened exactly to float32 '<f4'); a folder "
                    "already holding any of those files is refused");
  check->add_option("--device", cli.device, "CUDA device index")->capture_default_str();
  std::string quantizers;
  for (const E4m3Quantization quantization : kAllE4m3Quantizations)
    quantizers += (quantizers.empty() ? "" : ", ") + std::string(quantization_text(quantization));
  check->add_option("--quantize", cli.quantize,
                    "e4m3 inputs: " + quantizers +
                        " (default per-head): one descale per (sample, head) or per Q tile and "
                        "K/V tile (steps with block descales), after the random-sign Hadamard "
                        "rotation of Q and K with +hadamard (fp8-track.md §4.2)");
  check->add_flag("--outliers", cli.outliers,
                  "e4m3 inputs: Q and K with " + std::to_string(kOutlierChannels) +
                      " outlier channels x " + std::to_string(static_cast<int>(kOutlierFactor)) +
                      " (fp8-track.md §2)");
  check->add_option("--persistent-ctas", cli.persistent_ctas,
                    "Cap a persistent kernel's grid (steps with a tile scheduler) at this many "
                    "CTAs, so that a small problem runs several tiles on each: a CTA's later "
                    "tiles reuse its barrier rings, their phases and its shared memory, which "
                    "compute-sanitizer sees only then (scripts/gpu_host.sh's sanitize stage); "
                    "default: one CTA per multiprocessor, never more than the tiles");
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
  // The problem: the default one, the given axes, then the derived ones (heads_kv follows --heads,
  // batch follows --seq-len) and the config's dtype and d_head where they were not given.
  bool problem_valid = true;
  Problem& problem = request.problem;
  problem.pass = step_valid ? configs::step_descriptor(cli.step).pass : Pass::forward;
  std::vector<Axis> given;
  for (const AxisSpec& spec : problem_axes()) {
    const auto found = cli.axes.find(spec.axis);
    if (found == cli.axes.end() || !found->second) continue;
    try {
      const int value = spec.parse(*found->second);
      if (const auto violation = spec.value_violation(value))
        throw std::invalid_argument(*violation);
      spec.set(problem, value);
      given.push_back(spec.axis);
    } catch (const std::invalid_argument& error) {
      problems.add(std::string(spec.check_flag) + ": " + error.what());
      problem_valid = false;
    }
  }
  const auto is_given = [&given](Axis axis) {
    return std::find(given.begin(), given.end(), axis) != given.end();
  };
  if (request.config) {
    if (!is_given(Axis::dtype)) problem.dtype = request.config->dtype;
    if (!is_given(Axis::d_head)) problem.d_head = request.config->d_head;
  }
  for (const AxisSpec& spec : problem_axes())
    if (spec.derived != nullptr && !is_given(spec.axis)) spec.set(problem, spec.derived(problem));
  if (problem_valid)
    if (const auto violation = problem_violation(problem)) {
      problems.add("the problem " + problem_label(problem) + ": " + *violation);
      problem_valid = false;
    }
  if (cli.seed) {
    bool out_of_range = false;
    if (const auto seed = text::parse_decimal(*cli.seed, INT64_MAX, &out_of_range))
      request.seed = static_cast<std::uint64_t>(*seed);
    else
      problems.add("--seed: " + text::quoted(*cli.seed) +
                   (out_of_range ? " is out of range (0 to 9223372036854775807)"
                                 : " is not a seed: a whole number from 0, e.g. 42"));
  } else {
    std::random_device entropy;
    request.seed =
        ((static_cast<std::uint64_t>(entropy()) << 32) | entropy()) % 1'000'000'000'000ull;
  }
  {
    std::ostringstream scale;
    scale << cli.input_scale;
    // inf and NaN are not scales: the inputs would be all infinite or NaN.
    if (!(cli.input_scale > 0) || !std::isfinite(cli.input_scale))
      problems.add("--input-scale: " + scale.str() + " is not a positive finite number");
  }
  request.input_scale = cli.input_scale;
  if (!cli.dump_dir.empty()) {
    std::error_code error;
    if (std::filesystem::exists(cli.dump_dir, error) &&
        !std::filesystem::is_directory(cli.dump_dir, error))
      problems.add("--dump: '" + cli.dump_dir + "' is a file; name a folder to write into");
    // Files of an earlier dump are not this run's to overwrite.
    std::string existing;
    for (const std::string& name : check_dump_file_names(request.problem.pass))
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
  if (cli.quantize) {
    if (const auto quantization = quantization_from_string(*cli.quantize))
      request.quantization = *quantization;
    else
      problems.add("--quantize: " + text::quoted(*cli.quantize) +
                   " is not a quantizer: per-head, per-head+hadamard, per-tile or "
                   "per-tile+hadamard");
  }
  request.outliers = cli.outliers;
  if (cli.persistent_ctas && *cli.persistent_ctas < 1)
    problems.add("--persistent-ctas: " + std::to_string(*cli.persistent_ctas) +
                 " is not a CTA count (1 or more)");
  // The quantizer is the e4m3 inputs' alone: on 16-bit inputs the options would be ignored.
  if ((cli.quantize || cli.outliers) && problem_valid && !needs_descales(problem.dtype))
    problems.add(std::string(cli.quantize ? "--quantize" : "--outliers") +
                 " applies to e4m3 inputs, not " + std::string(dtype_lower_name(problem.dtype)));
  // Per-tile descales need a kernel that reads them (the descriptor's .block_descales).
  if (per_tile(request.quantization) && step_valid &&
      !configs::step_descriptor(cli.step).block_descales) {
    std::vector<int> steps;
    for (const StepDescriptor& step : configs::step_descriptors())
      if (step.block_descales) steps.push_back(step.number);
    problems.add("--quantize " + std::string(quantization_text(request.quantization)) + ": step " +
                 step_name(cli.step) +
                 " reads one descale per sample and head; per-tile descales run on " +
                 configs::step_list_text(steps));
  }
  if (rotates(request.quantization) && problem_valid && (problem.d_head & (problem.d_head - 1)))
    problems.add("--quantize: the Hadamard rotation needs a power-of-two d_head, not " +
                 std::to_string(problem.d_head));
  // Which kernel, and whether it takes the shape: the registry and launch rules need no GPU.
  if (step_valid && config_valid && problem_valid)
    problems.check([&] {
      validate_request_problem(resolve_check_kernel(request, built_kernels()), request.problem);
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
  if (cli.persistent_ctas) scheduling::limit_persistent_sms(*cli.persistent_ctas);
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
  const Problem& s = report.problem;
  const CorrectnessVerdict& verdict = report.verdict;
  std::cout << "step " << step_name(report.kernel->step) << " "
            << to_short_form(report.kernel->config) << "\n  problem " << problem_label(s)
            << " B=" << s.batch << " H=" << s.heads << " d=" << s.d_head << ", inputs N(0, "
            << cli.input_scale << "²), seed " << report.seed << "\n";
  if (cli.persistent_ctas)
    std::cout << "  persistent grids capped at " << *cli.persistent_ctas
              << " CTAs (--persistent-ctas)\n";
  if (report.fp8) {
    // e4m3 inputs: against the exact answer to the quantized problem (fp8-track.md §2).
    std::cout << "  fp8-track.md §2: " << (report.fp8->passed ? "PASS" : "FAIL") << "  "
              << report.fp8->summary() << "\n";
    // §4.2: the error quantization and the kernel make together, against the unquantized inputs.
    if (report.fp8_vs_unquantized)
      std::cout << "  inputs " << (report.outliers ? "with outlier channels" : "N(0, scale²)")
                << ", quantized " << quantization_text(report.quantization) << std::setprecision(4)
                << "; against the fp64 attention on the unquantized inputs: max |O - R| = "
                << report.fp8_vs_unquantized->max_abs
                << ", RMS = " << report.fp8_vs_unquantized->rms << "\n";
  } else if (report.backward) {
    // One line per gradient: each is judged on its own (backward-track.md §2).
    const BackwardCorrectnessVerdict& backward = *report.backward;
    std::cout << "  backward-track.md §2: " << (backward.passed ? "PASS" : "FAIL") << "\n"
              << std::setprecision(4);
    const std::pair<const char*, const GradientVerdict*> gradients[] = {
        {"dQ", &backward.dq}, {"dK", &backward.dk}, {"dV", &backward.dv}};
    for (const auto& [name, g] : gradients)
      std::cout << "  " << name << " " << (g->passed ? "pass" : "FAIL")
                << ": max |G - G_32| = " << g->err_kernel
                << (g->err_kernel <= g->tolerance() ? " <= " : " > ")
                << "2 x max |G_lp - G_32| + floor = " << g->tolerance() << " (ratio " << g->ratio()
                << "), mean |G - G_32| = " << g->vs_fp32.mean_abs
                << (g->nan_count ? ", NaN elements: " + std::to_string(g->nan_count) : "") << "\n";
  } else {
    std::cout << "  §1.4: " << (verdict.passed ? "PASS" : "FAIL") << "  " << verdict.summary()
              << "\n"
              << std::setprecision(4)
              << "  vs fp32 reference: max |O - R_32| = " << verdict.vs_fp32.max_abs
              << ", mean = " << verdict.vs_fp32.mean_abs
              << (verdict.nan_count ? ", NaN elements: " + std::to_string(verdict.nan_count) : "")
              << "\n";
  }
  if (!report.dumped_files.empty()) {
    std::cout << "  wrote";
    for (const std::string& path : report.dumped_files)
      std::cout << " " << path;
    std::cout << "\n";
    if (report.problem.dtype == DType::BF16)
      std::cout << "  (bf16 tensors are stored as float32 '<f4': numpy has no bf16; the "
                   "widening is exact)\n";
  }
  return report.passed() ? 0 : 1;
}

}  // namespace flashscope::cli
