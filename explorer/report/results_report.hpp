// Generates the measured parts of docs/results.md and docs/versions/NN.md from result CSVs, so
// every number in the docs comes from a shipped measurement. Documents mark generated blocks
//   <!-- flashscope:begin NAME -->  ...  <!-- flashscope:end NAME -->
// and `explorer report --check` fails when any block differs from what the data gives.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "explorer/model/row_set.hpp"

namespace flashscope::explorer {

inline constexpr int kHeadlineSeqLen = 4096;

// Every block a document may use, by name. Tables that compare steps use one run (run_key: host
// and build), the progression run (the one that measured the most step x dtype x N), so no
// figure mixes two hosts' measurements; every % of FA2 is given by time and by cycles.
//   progression        per step and dtype: % of FA2 at N = 4096 and harmonic mean over N, by time
//                      and by cycles, with the seed's A100 and RTX 3090 columns (spec §1.5)
//   references         per run and N: FA2 and cuDNN TFLOP/s (their first pass)
//   clocks             per run: the SM clock range of kernel, FA2 and cuDNN rows; locked or not
//   drift              per run, reference and dtype: the repeat after the kernels vs the first
//                      pass (time, cycles, clock), or a sentence when no run repeated them
//   warnings           rows whose values fail a sanity check, or a sentence when none does
//   autotune-<step>    fastest config per dtype and N among a step's configs measured by one
//                      run (the one with most of the step's rows, e.g. a tune sweep)
//   autotune-summary-<step>  per dtype and N of that run: configs within 1 % of the fastest,
//                      the slowest, each block shape's best and the recorded picks, as time
//                      relative to the fastest config
//   run-comparison     per pair of runs: items both measured, the later run's time relative
//                      to the earlier one (median, range, references' range)
//   step-<NN>          a step's measured effect versus the previous step (docs/versions pages)
//   vs-fa2-<step>      each config of a step at N = 4096 against FA2: by time, cycles and
//                      CUPTI duration, with both SM clocks
//   counters-<NN>      a step's extra hardware counters (metric:<name> columns, e.g. from
//                      scripts/gpu_host.sh's counters stage) against the previous step
//   dataset            runs, devices, row counts and clock control of the data
//   d-heads            per d_head, dtype and N of the Hopper run at that d_head: the fastest
//                      step and config, % FA2 and % cuDNN (only when the rows hold several d_head)
// Each block but `dataset` and `d-heads` is made from rows of one head dimension: d_head 128 under
// the names above, another d_head with "-d<d_head>" appended to the name (before any "@<device>"
// suffix). And of one workload: rows without the mask under those names, causal rows (ResultRow::
// causal) with "-causal" appended after any "-d<d_head>" ("per-n-23-causal", "d-heads-causal",
// "progression-d64-causal@h100-80gb-hbm3"); `dataset` counts both.
std::map<std::string, std::string> report_blocks(const RowSet& set);

struct BlockUpdate {
  std::string text;                  // the document with every block it marks regenerated
  std::vector<std::string> changed;  // names of blocks whose content changed
  std::vector<std::string> unknown;  // marked blocks the data cannot produce
  std::size_t blocks = 0;            // marked blocks in the document
};

// Throws std::invalid_argument on an unterminated or mismatched marker.
BlockUpdate update_blocks(const std::string& document,
                          const std::map<std::string, std::string>& blocks);

}  // namespace flashscope::explorer
