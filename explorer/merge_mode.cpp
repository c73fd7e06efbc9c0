#include "explorer/merge_mode.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "explorer/usage.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/sweep/result_merge.hpp"

namespace flashscope::cli {

CLI::App* add_merge_command(CLI::App& app, MergeCli& cli) {
  CLI::App* merge = app.add_subcommand(
      "merge",
      "Join the CSVs of a sharded sweep (explorer --csv --shard K/N on N hosts) into one. Checks "
      "that every input has the same columns and that no measurement (step, config, dtype, "
      "shape, device) is in two of them; with the sweep's selection options (--set, --steps, "
      "...), also lists the plan cells no input has a row for. Exit code 0 merged and complete, "
      "1 merged with cells missing, 2 nothing written (the reason is printed).");
  merge->add_option("inputs", cli.inputs, "Result CSVs to merge (the shards)")->required();
  merge
      ->add_option("--output", cli.output,
                   "The merged CSV (written whole or not at all: FILE.partial is renamed; an "
                   "existing FILE.partial, an interrupted sweep's rows, is refused)")
      ->required();
  merge->add_flag("--allow-missing", cli.allow_missing,
                  "Exit 0 even when plan cells are missing (they are still listed)");
  const std::string group = "Selection the shards were run with (enables the coverage check)";
  add_selection_options(*merge, cli.selection, nullptr, group);
  for (CLI::Option* option : merge->get_options())
    if (option->get_group() == group) cli.selection_options.push_back(option);
  return merge;
}

int run_merge_mode(const MergeCli& cli) {
  // One validation pass before anything is written: every problem at once.
  UsageProblems problems;
  for (const std::string& path : cli.inputs)
    if (const auto problem = input_file_problem("input", path)) problems.add(*problem);
  if (const auto problem = atomic_output_problem("--output", cli.output)) problems.add(*problem);
  const bool selection_given =
      std::any_of(cli.selection_options.begin(), cli.selection_options.end(),
                  [](const CLI::Option* option) { return option->count() > 0; });
  std::optional<SweepPlan> plan;
  if (selection_given) {
    problems.check([&] {
      const SweepOptions options = sweep_options_from_cli(cli.selection);
      plan = plan_sweep(options, built_kernels(), built_baselines());
    });
  }
  if (!problems.empty()) {
    problems.report(std::cerr, "explorer merge");
    std::cerr << "explorer merge: nothing written\n";
    return kUsageExitCode;
  }
  if (plan)
    for (const std::string& note : plan->notes)
      std::cerr << "note: " << note << "\n";

  // Every unreadable input is named, not only the first.
  std::vector<ResultsFileContents> inputs;
  std::vector<std::string> unreadable;
  for (const std::string& path : cli.inputs) {
    try {
      inputs.push_back(read_results_file_contents(path));
    } catch (const ResultsFormatError& error) {
      unreadable.push_back(error.what());
    }
  }
  if (!unreadable.empty()) {
    for (const std::string& error : unreadable)
      std::cerr << "explorer merge: " << error << "\n";
    std::cerr << "explorer merge: nothing written\n";
    return 2;
  }
  const MergeOutcome outcome = merge_result_files(inputs, plan ? &*plan : nullptr);
  for (const std::string& warning : outcome.warnings)
    std::cerr << "warning: " << warning << "\n";
  if (!outcome.errors.empty()) {
    for (const std::string& error : outcome.errors)
      std::cerr << "explorer merge: " << error << "\n";
    std::cerr << "explorer merge: nothing written\n";
    return 2;
  }

  try {
    AtomicOutputFile out(cli.output);
    ResultsCsvWriter writer(out.stream(), outcome.extra_metric_names);
    for (const ResultRow& row : outcome.rows)
      writer.write(row);
    out.commit();
  } catch (const std::runtime_error& error) {
    std::cerr << "explorer merge: " << error.what() << "; nothing written\n";
    return 2;
  }
  std::cerr << "explorer merge: " << outcome.rows.size() << " rows from " << inputs.size()
            << " files written to " << cli.output << " (" << outcome.fault_rows << " faults, "
            << outcome.skipped_rows << " skipped)\n";
  if (!outcome.coverage_checked) {
    std::cerr << "explorer merge: coverage not checked (give the sweep's selection options, e.g. "
                 "--set tune --steps 7,16, to list missing plan cells)\n";
    return 0;
  }
  if (outcome.rows_outside_plan > 0)
    std::cerr << "note: " << outcome.rows_outside_plan
              << " rows are of cells outside the given selection\n";
  if (outcome.missing_cells.empty()) {
    std::cerr << "explorer merge: every one of the " << outcome.plan_cells
              << " plan cells of the selection has a row\n";
    return 0;
  }
  std::cerr << "explorer merge: " << outcome.missing_cells.size() << " of " << outcome.plan_cells
            << " plan cells of the selection have no row in any input:\n";
  constexpr std::size_t kListed = 50;
  for (std::size_t i = 0; i < outcome.missing_cells.size() && i < kListed; ++i)
    std::cerr << "  missing: " << outcome.missing_cells[i] << "\n";
  if (outcome.missing_cells.size() > kListed)
    std::cerr << "  ... and " << outcome.missing_cells.size() - kListed << " more\n";
  return cli.allow_missing ? 0 : 1;
}

}  // namespace flashscope::cli
