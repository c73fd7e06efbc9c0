// `explorer sass`: a step's SASS from the build's artifact (or the shipped one): ptxas resources,
// the opcode histogram, its change against another step's kernel, and the normalized disassembly
// diff. Needs no GPU. The work is in explorer/sass/; this is the command-line layer.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace flashscope::cli {

struct SassCli {
  int step = 0;
  std::string config;  // short form; empty: the step's default kernel
  std::string dtype;   // fp16 / bf16 for the default kernel (default fp16)
  std::string arch;    // "sm_80", "sm_90a"; empty: where the step's kernel is largest
  bool diff_previous = false;
  std::string against;  // "STEP" or "STEP:CONFIG"
  std::string by = "opcode";
  bool csv = false;
  bool listing = false;
  int context = 3;
  bool list = false;
  std::string sass_dir;
  std::string output;
};

// Adds the `sass` subcommand; returns it so main can ask whether it was given.
CLI::App* add_sass_command(CLI::App& app, SassCli& cli);

// Exit code: 0 done, 2 invalid request (unknown step, config or architecture; unreadable
// artifact), 3 no artifact at all.
int run_sass_mode(const SassCli& cli);

}  // namespace flashscope::cli
