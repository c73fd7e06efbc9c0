// flashscope's one executable: lists kernels and config sets, runs headless sweeps (--csv),
// checks one kernel (check), joins sharded sweeps (merge), compares two result files (compare),
// regenerates the measured docs (report), shows a step's SASS (sass), measures the device's
// ceilings (peak), or opens the desktop explorer (no mode).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "configs/config_sets.hpp"
#include "explorer/check_mode.hpp"
#include "explorer/compare_mode.hpp"
#include "explorer/merge_mode.hpp"
#include "explorer/peak_mode.hpp"
#include "explorer/report/report_mode.hpp"
#include "explorer/sass_mode.hpp"
#include "explorer/sweep_mode.hpp"
#include "explorer/usage.hpp"
#include "kernels/common/build_info.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/results/source_state.hpp"

#ifdef FLASHSCOPE_WITH_GUI
#include "explorer/gui/gui_app.hpp"
#include "explorer/gui/sweep_engine_adapter.hpp"
#endif

namespace {

using namespace flashscope;

int list_built_kernels() {
  for (const KernelEntry* entry : built_kernels().entries())
    std::cout << entry->step << " " << to_short_form(entry->config) << "\n";
  return 0;
}

// The built kernels that are their step's progression config or one of its picks (configs/), in
// either dtype: what the progression measures and the GPU host script sanitizes.
int list_built_picks() {
  for (const KernelEntry* entry : built_kernels().entries()) {
    for (const KernelConfig& pick : configs::step_picks(entry->step).all()) {
      if (configs::with_dtype(pick, entry->config.dtype) == entry->config) {
        std::cout << entry->step << " " << to_short_form(entry->config) << "\n";
        break;
      }
    }
  }
  return 0;
}

// `step` 0: the key as steps 1–16 read it; a Hopper step's own sets otherwise.
int list_selection(const std::string& key, int step) {
  for (const KernelConfig& c :
       step == 0 ? configs::select(key) : configs::select_for_step(key, step))
    std::cout << to_short_form(c) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flashscope explorer: the FlashAttention-2 forward progression (steps 1–" +
               std::to_string(kFirstHopperStep - 1) + "), its Hopper track (steps " +
               std::to_string(kFirstHopperStep) + "–" + std::to_string(configs::kLastStep) +
               ") and the backward track (" + step_name(kFirstBackwardStep) + "–" +
               step_name(configs::kLastBackwardStep) + ", steps " +
               std::to_string(kFirstBackwardStep) + "–" +
               std::to_string(configs::kLastBackwardStep) +
               ": --pass backward), built, checked and measured.\nBuilt kernel set: " +
               std::string(build_info().kernel_set) + ", CUDA architectures " +
               std::string(build_info().cuda_architectures) + "."};
  // CLI11's own parse errors name the mode and end with a --help hint that works for it (set
  // before the subcommands are added: they copy it).
  app.failure_message([](const CLI::App* parsed, const CLI::Error& error) {
    std::string mode = "explorer";
    for (const CLI::App* command : parsed->get_subcommands())
      mode += " " + command->get_name();
    return mode + ": " + error.what() + "\nRun " + mode + " --help for more information.\n";
  });
  // The commit stamped at build time, "+dirty" when the tree had uncommitted changes.
  app.set_version_flag("--version", "flashscope " + source_state_label());

  bool list = false;
  bool list_picks = false;
  std::string list_set;
  app.add_flag("--list", list,
               "Print every kernel built into this binary, one per line: step, space, short form");
  app.add_flag("--list-picks", list_picks,
               "Like --list, only the kernels that are a step's progression config or pick")
      ->excludes("--list");
  CLI::Option* list_set_option =
      app.add_option("--list-set", list_set,
                     "Print the configs a selection key yields, built or not: " +
                         configs::selection_keys_help())
          ->excludes("--list");
  int list_set_step = 0;
  app.add_option("--list-set-step", list_set_step,
                 "With --list-set: read the key as this step does (a Hopper step " +
                     std::to_string(kFirstHopperStep) + "–" + std::to_string(configs::kLastStep) +
                     " has its own tune set); default: as steps 1–" +
                     std::to_string(kFirstHopperStep - 1) + " do")
      ->needs(list_set_option);
  cli::SweepCli sweep;
  cli::add_sweep_options(app, sweep);
  cli::CheckCli check;
  CLI::App* check_command = cli::add_check_command(app, check);
  cli::MergeCli merge;
  CLI::App* merge_command = cli::add_merge_command(app, merge);
  cli::CompareCli compare;
  CLI::App* compare_command = cli::add_compare_command(app, compare);
  const explorer::ReportCommand report = explorer::add_report_command(app);
  cli::SassCli sass;
  CLI::App* sass_command = cli::add_sass_command(app, sass);
  cli::PeakCli peak;
  CLI::App* peak_command = cli::add_peak_command(app, peak);
#ifdef FLASHSCOPE_WITH_GUI
  explorer::GuiOptions gui;
  explorer::add_gui_options(app, gui);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version print and exit 0; every other parse error is a usage error: exit 2,
    // as --help documents, not CLI11's own codes (105, 109, ...).
    const int code = app.exit(error);
    return code == 0 ? 0 : cli::kUsageExitCode;
  }
  if (sweep.csv) return cli::run_sweep_mode(sweep);
  if (check_command->parsed()) return cli::run_check_mode(check);
  if (merge_command->parsed()) return cli::run_merge_mode(merge);
  if (compare_command->parsed()) return cli::run_compare_mode(compare);
  if (report.command->parsed()) return report.run();
  if (sass_command->parsed()) return cli::run_sass_mode(sass);
  if (peak_command->parsed()) return cli::run_peak_mode(peak);

  // The listing options and the desktop explorer's: one validation pass, every problem at once,
  // before the window opens or a GPU is looked for.
  cli::UsageProblems problems;
  if (!list_set.empty()) {
    if (list_set_step != 0 && configs::find_step_descriptor(list_set_step) == nullptr)
      problems.add("--list-set-step: " + std::to_string(list_set_step) + " is not a step (" +
                   std::to_string(configs::kFirstStep) + "-" + std::to_string(configs::kLastStep) +
                   ", or a backward step " + std::to_string(kFirstBackwardStep) + "-" +
                   std::to_string(configs::kLastBackwardStep) + ")");
    else
      problems.check([&] {
        try {
          list_set_step == 0 ? configs::select(list_set)
                             : configs::select_for_step(list_set, list_set_step);
        } catch (const std::out_of_range& error) {
          throw std::invalid_argument(std::string("--list-set-step: ") + error.what());
        } catch (const std::invalid_argument& error) {
          throw std::invalid_argument(std::string("--list-set: ") + error.what());
        }
      });
  }
#ifdef FLASHSCOPE_WITH_GUI
  if (!list && !list_picks && list_set.empty())
    for (std::string& problem : explorer::gui_option_problems(gui))
      problems.add(std::move(problem));
#endif
  if (!problems.empty()) return problems.report(std::cerr, "explorer");

  try {
    if (list) return list_built_kernels();
    if (list_picks) return list_built_picks();
    if (!list_set.empty()) return list_selection(list_set, list_set_step);
  } catch (const std::exception& error) {
    std::cerr << "explorer: " << error.what() << "\n";
    return 1;
  }
#ifdef FLASHSCOPE_WITH_GUI
  gui.sweep_planner = explorer::make_sweep_engine_planner();
  gui.sweep_runner = explorer::make_sweep_engine_runner(0, gui.sweep_unavailable_reason);
  return explorer::run_gui(gui);
#else
  std::cout << app.help()
            << "\nThis build has no desktop explorer (ImGui, GLFW or OpenGL were not found at "
               "configure time).\n";
  return 0;
#endif
}
