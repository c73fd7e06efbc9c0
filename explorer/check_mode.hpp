// `explorer check`: run one kernel on given shapes against the §1.4 rule. Command-line layer only;
// profiling/check.hpp does the work.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "kernels/common/problem_axes.hpp"

#include "profiling/check.hpp"

namespace flashscope::cli {

struct CheckCli {
  int step = 0;
  std::string config;  // short form; empty: the step's built config for the problem
  // One option per problem axis (kernels/common/problem_axes.hpp: --dtype, --d-head, --batch,
  // --heads, --heads-kv, --causal, --pass, --seq-len), as given; an axis not given keeps the
  // default problem's value: the seed's unit-test shape B=16 N=2048 H=16 d=128, the config's
  // dtype and d_head, heads_kv = heads, the step's own pass.
  std::map<Axis, std::optional<std::string>> axes;
  std::optional<std::string> seed;  // a decimal seed
  float input_scale = 1.0f;
  std::string dump_dir;
  int device = 0;
  // e4m3 only (fp8-track.md §4.2): --quantize's quantizer and --outliers.
  std::optional<std::string> quantize;
  bool outliers = false;
  // --persistent-ctas: a persistent kernel's grid capped at this many CTAs (sanitizer runs).
  std::optional<int> persistent_ctas;
};

// Adds the `check` subcommand; returns it so main can ask whether it was given.
CLI::App* add_check_command(CLI::App& app, CheckCli& cli);

// Throws a UsageError (explorer/usage.hpp) holding every problem, each naming the option, the
// value and the rule; the kernel lookup and shape rules are checked too (no GPU needed). A
// missing seed becomes a fresh one.
CheckRequest check_request_from_cli(const CheckCli& cli);

// Exit code: 0 pass, 1 the kernel fails §1.4, 2 invalid request (unknown or unbuilt config,
// invalid shape), 3 no GPU or a CUDA error.
int run_check_mode(const CheckCli& cli);

}  // namespace flashscope::cli
