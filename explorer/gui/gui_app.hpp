// Entry point of the desktop explorer (Dear ImGui + GLFW + OpenGL 3).
//
//   explorer                                  opens the shipped results (results/**/*.csv)
//   explorer --results a.csv b.csv            opens those files
//   explorer --screenshot out.png --view autotune --frames 4     renders, saves, exits
//   explorer --bench-frames 300 --view compare                   prints the mean frame time
//   explorer --results run.csv --view compare --compare-gpus 0,1  two GPUs of one run
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "explorer/model/sweep_session.hpp"

namespace CLI {
class App;
}

namespace flashscope::explorer {

struct GuiOptions {
  std::vector<std::string> result_files;  // --results; empty: scan results_directory
  std::string results_directory;          // --results-dir; empty: the shipped results/ folder
  std::string view = "progression";  // --view: progression|sweep|autotune|detail|compare|roofline
  int detail_step = 0;               // --detail-step; 0: the second step with data
  std::string detail_tab;            // --detail-tab: documentation|diff|sass; empty: the first
  std::string sass_directory;        // --sass-dir; empty: the build's SASS, else the shipped one
  std::string progression_opcode;    // --progression-opcode: annotate the bars with its count
  std::string screenshot_path;       // --screenshot: render `frames` frames, save, exit
  int frames = 4;                    // --frames: tables and tabs settle within a few
  int bench_frames = 0;              // --bench-frames: time this many frames, print, exit
  int window_width = 1600;           // --window WxH
  int window_height = 1000;
  std::string gpu;  // --gpu: the GPU the views show first (index or UUID prefix); "" any
  // --workload name=value (repeatable): the workload the views show first, one axis each
  // (d_head=64, heads_kv=8, causal=1, ...); an axis not named starts at its plain value.
  std::vector<std::string> workload;
  // --compare-gpus A,B: the GPU of each compare side (index or UUID prefix; "" any).
  std::string compare_gpu_a;
  std::string compare_gpu_b;

  std::vector<int> run_steps;  // --run-steps: the steps the run panel starts with ticked
  bool run_sweep = false;      // --run-sweep: start the run panel's sweep on opening

  // Set by main: the build's steps and sweep plans (the run panel's choices), and, when this
  // machine can measure, the runner. Without a runner the panel's choices stay open and
  // `sweep_unavailable_reason` says why it cannot run; without a planner the panel shows it alone.
  std::shared_ptr<SweepPlanner> sweep_planner;
  std::shared_ptr<SweepRunner> sweep_runner;
  std::string sweep_unavailable_reason = "no CUDA GPU on this machine";
};

// Adds --results, --results-dir, --view, --detail-step, --detail-tab, --sass-dir,
// --progression-opcode, --gpu, --workload, --compare-gpus, --run-steps, --run-sweep, --screenshot,
// --frames,
// --bench-frames and --window
// to `app` (group "Desktop explorer"), writing into `options`, which must outlive parsing.
void add_gui_options(CLI::App& app, GuiOptions& options);

// Every problem of the parsed options, each naming the option, the value and the rule: --results
// files and a --results-dir that do not exist, a view, step, tab or frame count out of range. main
// reports them all (exit 2) before the window opens or a GPU is looked for. A file that exists but
// does not read is shown in the window instead, as one opened with the Open box is, and so is a
// --sass-dir without an artifact (on the SASS tab).
std::vector<std::string> gui_option_problems(const GuiOptions& options);

// The folder scanned for *.csv when no --results are given: <source dir>/results.
std::string shipped_results_directory();

// Opens the window and runs until it is closed (or the screenshot/bench is done). Returns the
// process exit code; problems in result files are shown in the window, never fatal.
int run_gui(const GuiOptions& options);

}  // namespace flashscope::explorer
