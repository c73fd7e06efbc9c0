#include "explorer/report/results_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "explorer/model/autotune.hpp"
#include "explorer/model/fields.hpp"
#include "explorer/model/progression.hpp"

namespace flashscope::explorer {

namespace {

// The seed's published percentages of FA2 (spec §1.5): A100 and RTX 3090, at N = 4096 and as
// the harmonic mean over N = 512…16384.
struct SeedResult {
  double a100_4096, a100_harmonic, rtx3090_4096, rtx3090_harmonic;
};
constexpr SeedResult kSeedResults[] = {
    {15.8, 16.6, 49.5, 49.8},    {72.6, 72.4, 98.3, 98.6},   {77.6, 79.9, 99.4, 100.0},
    {77.6, 80.0, 100.0, 100.4},  {76.8, 79.1, 99.7, 100.3},  {78.1, 80.4, 99.9, 100.4},
    {80.3, 82.3, 101.5, 101.8},  {87.8, 88.9, 101.7, 101.2}, {95.3, 96.3, 97.5, 97.4},
    {93.9, 95.0, 102.9, 102.3},  {95.2, 96.7, 102.8, 102.3}, {95.3, 97.0, 102.8, 102.3},
    {97.6, 98.8, 101.5, 101.2},  {97.7, 99.1, 101.5, 101.2}, {97.9, 99.5, 101.5, 101.3},
    {99.2, 100.4, 100.9, 100.7},
};

std::string fixed(std::optional<double> value, int decimals, const char* suffix = "") {
  if (!value) return "–";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", decimals, *value, suffix);
  return text;
}

std::string signed_percent(std::optional<double> change) {
  if (!change) return "–";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * *change);
  return text;
}

std::vector<std::string> dtypes_of(const RowSet& set) {
  std::vector<std::string> out;
  for (const char* dtype : {"fp16", "bf16"})
    if (std::find(set.dtypes().begin(), set.dtypes().end(), dtype) != set.dtypes().end())
      out.push_back(dtype);
  return out;
}

std::string progression_block(const RowSet& set) {
  const std::vector<std::string> dtypes = dtypes_of(set);
  std::string out = "| # | step |";
  std::string rule = "| ---: | --- |";
  for (const std::string& dtype : dtypes) {
    out += " " + dtype + " % FA2 @" + std::to_string(kHeadlineSeqLen) + " | " + dtype +
           " % FA2 harm. | " + dtype + " TFLOP/s @" + std::to_string(kHeadlineSeqLen) + " |";
    rule += " ---: | ---: | ---: |";
  }
  out += " seed A100 @4096 | seed A100 harm. | seed 3090 @4096 | seed 3090 harm. |\n";
  rule += " ---: | ---: | ---: | ---: |\n";
  out += rule;

  std::map<std::string, Progression> at_headline, harmonic;
  for (const std::string& dtype : dtypes) {
    at_headline[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Reference::fa2});
    harmonic[dtype] = build_progression(set, {dtype, std::nullopt, Reference::fa2});
  }
  // The seed's sixteen steps; the Hopper track has its own table (hopper_block).
  for (int step = configs::kFirstStep; step < kFirstHopperStep; ++step) {
    out += "| " + std::to_string(step) + " | " + std::string(configs::step_info(step).title) + " |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = at_headline[dtype].find_step(step);
      const StepValue* mean = harmonic[dtype].find_step(step);
      out += " " + fixed(now ? now->percent : std::nullopt, 1, " %") + " | " +
             fixed(mean ? mean->percent : std::nullopt, 1, " %") + " | " +
             fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " |";
    }
    const SeedResult& seed = kSeedResults[step - 1];
    out += " " + fixed(seed.a100_4096, 1, " %") + " | " + fixed(seed.a100_harmonic, 1, " %") +
           " | " + fixed(seed.rtx3090_4096, 1, " %") + " | " +
           fixed(seed.rtx3090_harmonic, 1, " %") + " |\n";
  }
  for (const Reference reference : kReferences) {
    out += "| | " + std::string(reference_label(reference)) + " (TFLOP/s) |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = at_headline[dtype].find_reference(reference);
      const StepValue* mean = harmonic[dtype].find_reference(reference);
      out += " " + fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " | " +
             fixed(mean ? std::optional<double>(mean->tflops) : std::nullopt, 1) + " | |";
    }
    out += " | | | |\n";
  }
  return out;
}

// The Hopper track (steps 17–21) from step 16, against both references: % FA2 and % cuDNN at the
// headline N and as the harmonic mean over every measured N, per dtype.
std::string hopper_block(const RowSet& set) {
  const std::vector<std::string> dtypes = dtypes_of(set);
  std::string out = "| # | step |";
  std::string rule = "| ---: | --- |";
  for (const std::string& dtype : dtypes) {
    const std::string at = " @" + std::to_string(kHeadlineSeqLen);
    out += " " + dtype + " TFLOP/s" + at + " | " + dtype + " % FA2" + at + " | " + dtype +
           " % cuDNN" + at + " | " + dtype + " % cuDNN harm. |";
    rule += " ---: | ---: | ---: | ---: |";
  }
  out += "\n" + rule + "\n";
  std::map<std::string, Progression> fa2_now, cudnn_now, cudnn_mean;
  for (const std::string& dtype : dtypes) {
    fa2_now[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Reference::fa2});
    cudnn_now[dtype] = build_progression(set, {dtype, kHeadlineSeqLen, Reference::cudnn});
    cudnn_mean[dtype] = build_progression(set, {dtype, std::nullopt, Reference::cudnn});
  }
  for (int step = kFirstHopperStep - 1; step <= configs::kLastStep; ++step) {
    out += "| " + std::to_string(step) + " | " + std::string(configs::step_info(step).title) + " |";
    for (const std::string& dtype : dtypes) {
      const StepValue* now = fa2_now[dtype].find_step(step);
      const StepValue* versus_cudnn = cudnn_now[dtype].find_step(step);
      const StepValue* mean = cudnn_mean[dtype].find_step(step);
      out += " " + fixed(now ? std::optional<double>(now->tflops) : std::nullopt, 1) + " | " +
             fixed(now ? now->percent : std::nullopt, 1, " %") + " | " +
             fixed(versus_cudnn ? versus_cudnn->percent : std::nullopt, 1, " %") + " | " +
             fixed(mean ? mean->percent : std::nullopt, 1, " %") + " |";
    }
    out += "\n";
  }
  return out;
}

std::string references_block(const RowSet& set) {
  std::string out = "| N | batch |";
  std::string rule = "| ---: | ---: |";
  const std::vector<std::string> dtypes = dtypes_of(set);
  for (const std::string& dtype : dtypes)
    for (const Reference reference : kReferences) {
      out += " " + std::string(reference_label(reference)) + " " + dtype + " |";
      rule += " ---: |";
    }
  out += "\n" + rule + "\n";
  for (const int seq_len : set.seq_lens("")) {
    std::string line = "| " + std::to_string(seq_len) + " |";
    std::optional<int> batch;
    std::string cells;
    for (const std::string& dtype : dtypes)
      for (const Reference reference : kReferences) {
        const ResultRow* best = nullptr;
        for (const ResultRow* row : set.rows())
          if (row->step == reference_key(reference) && row->dtype == dtype &&
              row->seq_len == seq_len && is_usable(*row) &&
              (!best || row->median_ms < best->median_ms))
            best = row;
        if (best) batch = best->batch;
        cells += " " + fixed(best ? std::optional<double>(best->tflops) : std::nullopt, 1) + " |";
      }
    out += line + " " + (batch ? std::to_string(*batch) : "–") + " |" + cells + "\n";
  }
  return out;
}

// The rows of the campaign that measured most of `step`'s rows, told apart by commit: a tune
// sweep's configs must compete with each other, not with the same step's picks measured in
// another run (another host or clock, which moves every time by a percent or so).
std::vector<const ResultRow*> rows_of_main_campaign(const RowSet& set, const std::string& step) {
  std::map<std::string, int> rows_by_commit;
  for (const ResultRow* row : set.rows())
    if (row->step == step) ++rows_by_commit[row->git_commit];
  if (rows_by_commit.empty()) return {};
  const std::string commit =
      std::max_element(rows_by_commit.begin(), rows_by_commit.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  std::vector<const ResultRow*> rows;
  for (const ResultRow* row : set.rows())
    if (row->git_commit == commit) rows.push_back(row);
  return rows;
}

std::string autotune_block(const RowSet& all, const std::string& step) {
  const RowSet set(rows_of_main_campaign(all, step));
  BlockShapeCache shapes;
  const AutotuneModel model = build_autotune_model(set, {step, "", std::nullopt}, shapes);
  std::map<std::pair<std::string, int>, int> configs_measured;
  for (const AutotunePoint& point : model.points)
    ++configs_measured[{point.row->dtype, point.row->seq_len}];
  std::string out =
      "| dtype | N | configs measured | fastest config | TFLOP/s | % FA2 | registers |\n"
      "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const ResultRow* row : model.fastest) {
    out += "| " + row->dtype + " | " + std::to_string(row->seq_len) + " | " +
           std::to_string(configs_measured[{row->dtype, row->seq_len}]) + " | `" + row->config +
           "` | " + fixed(row->tflops, 1) + " | " +
           fixed(set.percent_of_reference(*row, Reference::fa2), 1, " %") + " | " +
           fixed(row->registers ? std::optional<double>(*row->registers) : std::nullopt, 0) +
           " |\n";
  }
  return out;
}

std::string step_block(const RowSet& set, int step) {
  std::string out =
      "| dtype | config (fastest at N = 4096) | time (ms) | TFLOP/s | % FA2 | registers | "
      "spill (local bytes) | L2 hit | cycles (M) | TFLOP/s vs previous step |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  bool any = false;
  for (const std::string& dtype : dtypes_of(set)) {
    const Progression progression =
        build_progression(set, {dtype, kHeadlineSeqLen, Reference::fa2});
    const StepChange change = change_from_previous_step(progression, step, set, Reference::fa2);
    if (!change.current || change.current->rows.empty()) continue;
    any = true;
    const ResultRow& row = *change.current->rows.front();
    std::optional<double> tflops_change;
    for (const MetricChange& metric : change.changes)
      if (metric.field == Field::tflops && step > 1) tflops_change = metric.relative_change();
    out += "| " + dtype + " | `" + row.config + "` | " + fixed(row.median_ms, 3) + " | " +
           fixed(row.tflops, 1) + " | " + fixed(change.current->percent, 1, " %") + " | " +
           fixed(row.registers ? std::optional<double>(*row.registers) : std::nullopt, 0) + " | " +
           fixed(row.local_bytes ? std::optional<double>(*row.local_bytes) : std::nullopt, 0) +
           " | " + fixed(row.l2_hit_pct, 1, " %") + " | " +
           fixed(row.cycles ? std::optional<double>(*row.cycles / 1e6) : std::nullopt, 2) + " | " +
           signed_percent(tflops_change) + " |\n";
  }
  return any ? out : "";
}

std::string dataset_block(const RowSet& set) {
  std::map<std::string, std::set<std::string>> commits_by_device;
  std::map<std::string, int> rows_by_device;
  for (const ResultRow* row : set.rows()) {
    commits_by_device[row->device].insert(row->git_commit);
    ++rows_by_device[row->device];
  }
  std::string out = "| device | rows | commits |\n| --- | ---: | --- |\n";
  for (const auto& [device, commits] : commits_by_device) {
    std::string list;
    for (const std::string& commit : commits)
      list += (list.empty() ? "" : ", ") + commit;
    out += "| " + device + " | " + std::to_string(rows_by_device[device]) + " | " + list + " |\n";
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> report_blocks(const RowSet& set) {
  std::map<std::string, std::string> blocks;
  blocks["progression"] = progression_block(set);
  blocks["hopper"] = hopper_block(set);
  blocks["references"] = references_block(set);
  blocks["dataset"] = dataset_block(set);
  for (const int step : set.steps()) {
    char name[16];
    std::snprintf(name, sizeof name, "step-%02d", step);
    if (std::string block = step_block(set, step); !block.empty()) blocks[name] = block;
    blocks["autotune-" + std::to_string(step)] = autotune_block(set, std::to_string(step));
  }
  return blocks;
}

BlockUpdate update_blocks(const std::string& document,
                          const std::map<std::string, std::string>& blocks) {
  static const std::string kBegin = "<!-- flashscope:begin ";
  static const std::string kEnd = "<!-- flashscope:end ";
  BlockUpdate update;
  std::size_t position = 0;
  while (true) {
    const std::size_t begin = document.find(kBegin, position);
    if (begin == std::string::npos) break;
    const std::size_t name_end = document.find(" -->", begin);
    if (name_end == std::string::npos)
      throw std::invalid_argument("unterminated begin marker at offset " + std::to_string(begin));
    const std::string name =
        document.substr(begin + kBegin.size(), name_end - begin - kBegin.size());
    const std::size_t content_begin = name_end + 4 + (document[name_end + 4] == '\n' ? 1 : 0);
    const std::string end_marker = kEnd + name + " -->";
    const std::size_t end = document.find(end_marker, content_begin);
    if (end == std::string::npos)
      throw std::invalid_argument("block '" + name + "' has no " + end_marker);
    update.text += document.substr(position, content_begin - position);
    const std::string old_content = document.substr(content_begin, end - content_begin);
    const auto found = blocks.find(name);
    if (found == blocks.end()) {
      update.unknown.push_back(name);
      update.text += old_content;
    } else {
      if (found->second != old_content) update.changed.push_back(name);
      update.text += found->second;
    }
    position = end;
  }
  update.text += document.substr(position);
  return update;
}

}  // namespace flashscope::explorer
