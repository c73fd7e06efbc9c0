// The generated docs blocks from synthetic rows: block markers are replaced in place, and an
// autotune table ranks the configs of one measurement campaign only.
#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "explorer/model/fields.hpp"
#include "explorer/model/steps.hpp"
#include "explorer/report/report_mode.hpp"
#include "explorer/report/results_report.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

constexpr const char* kPick = "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles";
constexpr const char* kTuneA = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles";
constexpr const char* kTuneB = "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles";

struct Rows {
  std::deque<ResultRow> storage;  // stable addresses for the RowSet

  ResultRow& add(const std::string& step, const std::string& config, double tflops,
                 const std::string& commit) {
    ResultRow row;
    row.subject = *RowSubject::from_text(step);
    if (!std::string_view(config).empty()) row.config = parse_short_form(config);
    row.problem.dtype = DType::FP16;
    row.problem.d_head = 128;
    row.problem.batch = 16;
    row.problem.heads = 16;
    row.problem.heads_kv = row.problem.heads;
    row.problem.seq_len = 4096;
    row.runs = 30;
    row.tflops = tflops;
    row.median_ms = 1000.0 / tflops;
    row.verdict = Verdict::pass;
    row.status = {};
    row.device = "test device";
    row.cache_mode = "warm";
    row.git_commit = commit;
    storage.push_back(row);
    return storage.back();
  }
  RowSet set() const {
    std::vector<const ResultRow*> pointers;
    for (const ResultRow& row : storage)
      pointers.push_back(&row);
    return RowSet(pointers);
  }
};

}  // namespace

TEST_CASE("an autotune block ranks the configs of the campaign that measured most of the step") {
  Rows rows;
  // A progression run on a faster host measured the pick; a tune run measured three configs.
  rows.add("7", kPick, 310, "progression");
  rows.add("7", kPick, 300, "tune");
  rows.add("7", kTuneA, 305, "tune");
  rows.add("7", kTuneB, 290, "tune");
  const auto blocks = report_blocks(rows.set());
  const std::string& block = blocks.at("autotune-7");
  CAPTURE(block);
  CHECK(block.find(std::string("| fp16 | 4096 | 3 | `") + kTuneA + "` | 305.0 |") !=
        std::string::npos);
  CHECK(block.find("310.0") == std::string::npos);  // the other run does not compete
}

TEST_CASE("blocks never mix head dimensions: d_head 128 keeps the names, others get -d<d_head>") {
  Rows rows;
  rows.add("7", kPick, 300, "run");
  rows.add("7", kTuneA, 305, "run");
  // The same configs' names at d_head 64 (as a step that runs it would record them), far faster:
  // they must not enter the d_head 128 tables.
  ResultRow& fast = rows.add("7", kTuneB, 900, "run");
  fast.problem.d_head = 64;
  const auto blocks = report_blocks(rows.set());
  const std::string& at_128 = blocks.at("autotune-7");
  CAPTURE(at_128);
  CHECK(at_128.find("900.0") == std::string::npos);
  CHECK(at_128.find(std::string("`") + kTuneA + "` | 305.0 |") != std::string::npos);
  REQUIRE(blocks.count("autotune-7-d64") == 1);
  const std::string& at_64 = blocks.at("autotune-7-d64");
  CAPTURE(at_64);
  CHECK(at_64.find("900.0") != std::string::npos);
  CHECK(at_64.find("305.0") == std::string::npos);
  CHECK(blocks.count("autotune-7-d64@test-device") == 1);
}

TEST_CASE("blocks never mix workloads: causal rows get every block again with -causal") {
  Rows rows;
  rows.add("7", kPick, 300, "run");
  rows.add("7", kTuneA, 305, "run");
  // Causal rows of another config, at a throughput the unmasked tables must not show.
  rows.add("7", kTuneB, 900, "run").problem.causal = true;
  rows.add("7", kPick, 950, "run").problem.causal = true;
  rows.add("7", kTuneB, 700, "run").problem.d_head = 64;
  rows.storage.back().problem.causal = true;
  const auto blocks = report_blocks(rows.set());
  const std::string& unmasked = blocks.at("autotune-7");
  CAPTURE(unmasked);
  CHECK(unmasked.find("900.0") == std::string::npos);
  CHECK(unmasked.find("950.0") == std::string::npos);
  CHECK(unmasked.find(std::string("`") + kTuneA + "` | 305.0 |") != std::string::npos);
  REQUIRE(blocks.count("autotune-7-causal") == 1);
  const std::string& causal = blocks.at("autotune-7-causal");
  CAPTURE(causal);
  CHECK(causal.find(std::string("`") + kPick + "` | 950.0 |") != std::string::npos);
  CHECK(causal.find("305.0") == std::string::npos);
  CHECK(causal.find("700.0") == std::string::npos);  // d_head 64 has its own block
  CHECK(blocks.count("autotune-7-causal@test-device") == 1);
  REQUIRE(blocks.count("autotune-7-d64-causal") == 1);
  CHECK(blocks.at("autotune-7-d64-causal").find("700.0") != std::string::npos);
  CHECK(blocks.count("autotune-7-d64") == 0);  // no unmasked rows at d_head 64
  CHECK(blocks.count("progression-causal") == 1);
}

TEST_CASE(
    "the d-heads block sets each head dimension's fastest Hopper step beside its references") {
  Rows rows;
  CHECK(report_blocks(rows.set()).count("d-heads") == 0);
  const char* config_128 = "(FP16, 128, 128, 128, 12): stages_2+regs_240";
  const char* config_64 = "(FP16, 64, 128, 128, 12): stages_4+regs_240";
  rows.add("22", config_128, 600, "run");
  rows.add("21", config_128, 590, "run");
  rows.add("cudnn", "", 580, "run");
  rows.add("22", config_64, 400, "run").problem.d_head = 64;
  rows.add("cudnn", "", 500, "run").problem.d_head = 64;  // 400 / 500: 80 % of cuDNN at d_head 64
  const auto blocks = report_blocks(rows.set());
  REQUIRE(blocks.count("d-heads") == 1);
  const std::string& block = blocks.at("d-heads");
  CAPTURE(block);
  CHECK(block.find(std::string("| 64 | fp16 | 4096 | 22 | `") + config_64 + "` | 400.0 |") !=
        std::string::npos);
  CHECK(block.find("| 80.0 %") != std::string::npos);
  CHECK(block.find(std::string("| 128 | fp16 | 4096 | 22 | `") + config_128 + "` | 600.0 |") !=
        std::string::npos);
  CHECK(block.find("590.0") == std::string::npos);  // step 21 is slower at 128
}

TEST_CASE("update_blocks replaces marked blocks and reports unknown and changed ones") {
  const std::map<std::string, std::string> blocks = {{"a", "new a\n"}, {"b", "same b\n"}};
  const std::string document =
      "intro\n<!-- flashscope:begin a -->\nold a\n<!-- flashscope:end a -->\n"
      "<!-- flashscope:begin b -->\nsame b\n<!-- flashscope:end b -->\n"
      "<!-- flashscope:begin c -->\nkept\n<!-- flashscope:end c -->\n";
  const BlockUpdate update = update_blocks(document, blocks);
  CHECK(update.text ==
        "intro\n<!-- flashscope:begin a -->\nnew a\n<!-- flashscope:end a -->\n"
        "<!-- flashscope:begin b -->\nsame b\n<!-- flashscope:end b -->\n"
        "<!-- flashscope:begin c -->\nkept\n<!-- flashscope:end c -->\n");
  CHECK(update.changed == std::vector<std::string>{"a"});
  CHECK(update.unknown == std::vector<std::string>{"c"});
  CHECK_THROWS_AS(update_blocks("<!-- flashscope:begin a -->\nno end\n", blocks),
                  std::invalid_argument);
}

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("the progression table comes from one run and reads % FA2 by time and by cycles") {
  Rows rows;
  // The progression run: FA2 and steps 1 and 2. Step 2 is 2.5 % faster by time but takes 1 %
  // more cycles than FA2: its clock was higher.
  rows.add("fa2", "", 200, "prog").cycles = 10e6;
  rows.add("1", kPick, 100, "prog").cycles = 20e6;
  rows.add("2", kPick, 205, "prog").cycles = 10.1e6;
  // Another run (another host) measured step 2 faster still: it must not enter the table.
  rows.add("fa2", "", 190, "tune").cycles = 10e6;
  rows.add("2", kTuneA, 260, "tune").cycles = 9e6;
  const auto blocks = report_blocks(rows.set());
  const std::string& table = blocks.at("progression");
  CAPTURE(table);
  CHECK(contains(table, "| 1 | Base implementation | 50.0 % | 50.0 % | 50.0 % | 50.0 % | 100.0 |"));
  CHECK(contains(table, "| 2 | Swizzling | 102.5 % | 99.0 % | 102.5 % | 99.0 % | 205.0 |"));
  CHECK_FALSE(contains(table, "260.0"));

  // Each config of a step against FA2, three ways, with both clocks.
  rows.storage[2].sm_clock_mhz = 1750;
  rows.storage[0].sm_clock_mhz = 1700;
  rows.storage[2].cupti_duration_ms = 4.9;
  rows.storage[0].cupti_duration_ms = 5.0;
  const std::string versus = report_blocks(rows.set()).at("vs-fa2-2");
  CAPTURE(versus);
  CHECK(contains(versus, std::string("| fp16 | `") + kPick +
                             "` | 4.878 | 102.5 % | 99.0 % | 102.0 % | 1750 | 1700 |"));
  CHECK_FALSE(contains(versus, kTuneA));
}

TEST_CASE("references, clocks and the dataset are listed per run") {
  Rows rows;
  ResultRow& a = rows.add("fa2", "", 200, "c1");
  a.host = "host-a";
  a.sm_clock_mhz = 1700;
  ResultRow& b = rows.add("fa2", "", 190, "c1");
  b.host = "host-b";
  b.sm_clock_mhz = 1650;
  b.locked_sm_clock_mhz = 1650;
  rows.add("1", kPick, 100, "c1").host = "host-a";
  const auto blocks = report_blocks(rows.set());
  CAPTURE(blocks.at("references"));
  CHECK(contains(blocks.at("references"), "| host-a, c1 | 4096 | 16 | 200.0 |"));
  CHECK(contains(blocks.at("references"), "| host-b, c1 | 4096 | 16 | 190.0 |"));
  // A run whose references are e4m3 only (cuDNN's FP8 attention) has no cell in the 16-bit
  // columns: no line of dashes for it.
  ResultRow& fp8 = rows.add("cudnn", "", 1000, "c2");
  fp8.host = "host-c";
  fp8.problem.dtype = DType::E4M3;
  const std::string with_fp8 = report_blocks(rows.set()).at("references");
  CAPTURE(with_fp8);
  CHECK(contains(with_fp8, "| host-a, c1 | 4096 | 16 | 200.0 |"));
  CHECK_FALSE(contains(with_fp8, "host-c"));
  CAPTURE(blocks.at("clocks"));
  CHECK(contains(blocks.at("clocks"),
                 "| host-a, c1 | – | 1700–1700 (median 1700) | – | as found (not locked) |"));
  CHECK(contains(blocks.at("clocks"),
                 "| host-b, c1 | – | 1650–1650 (median 1650) | – | locked "
                 "at 1650 MHz |"));
  CHECK(contains(blocks.at("dataset"), "| host-a, c1 | test device | 2 | as found (not locked) |"));
}

TEST_CASE("the drift and warnings blocks say what the data has, or that it has none") {
  Rows rows;
  ResultRow& first = rows.add("fa2", "", 200, "c1");
  rows.add("1", kPick, 100, "c1");
  auto blocks = report_blocks(rows.set());
  CHECK(contains(blocks.at("drift"), "No run in the data measured its references twice"));
  CHECK(blocks.at("warnings") == "No row carries a warning.\n");

  first.reference_pass = 1;
  first.sm_clock_mhz = 1700;
  ResultRow& repeat = rows.add("fa2", "", 198, "c1");  // 1 % slower after the kernels
  repeat.reference_pass = 2;
  repeat.sm_clock_mhz = 1680;
  ResultRow& odd = rows.storage[1];
  odd.l2_hit_pct = 100.8;
  odd.warnings = join_warnings(sanity_warnings(odd));
  blocks = report_blocks(rows.set());
  CAPTURE(blocks.at("drift"));
  CHECK(contains(blocks.at("drift"),
                 "| c1 | fa2 | fp16 | 1 | +1.0 % .. +1.0 % | +1.0 % | – | "
                 "1700 -> 1680 |"));
  CAPTURE(blocks.at("warnings"));
  CHECK(contains(blocks.at("warnings"), "| c1 | step 1 | `" + std::string(kPick) +
                                            "` | fp16 | 4096 | l2_hit_pct 100.8 is outside 0-100"));
  // The step block marks the flagged value.
  CHECK(contains(blocks.at("step-01"), "| 100.8 % (!) |"));
}

TEST_CASE("a counters block compares a step's extra counters with the previous step's") {
  Rows rows;
  rows.add("1", kPick, 50, "counters").extra_metrics = {
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 7.5e9},
      {"smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct", 84}};
  rows.add("2", kPick, 250, "counters").extra_metrics = {
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 7.0e4},
      {"smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct", 12}};
  rows.add("2", kPick, 260, "timing");  // another run without counters: not used
  const auto blocks = report_blocks(rows.set());
  REQUIRE(blocks.count("counters-02") == 1);
  const std::string& block = blocks.at("counters-02");
  CAPTURE(block);
  CHECK(contains(block,
                 "| fp16 | shared-load bank conflicts "
                 "(`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`) | 7.5e+09 | "
                 "7e+04 | -100.0 % |"));
  CHECK(contains(block, "| 84.00 | 12.00 | -85.7 % |"));
  CHECK(blocks.count("counters-01") == 1);  // step 1 has no previous step: values only
  CHECK(contains(blocks.at("counters-01"), "| – | 7.5e+09 | – |"));
}

TEST_CASE("the autotune summary and the run comparison come from the rows") {
  Rows rows;
  rows.add("7", kPick, 300, "tune");   // 64x64, not a recorded pick (no opt_softmax)
  rows.add("7", kTuneA, 303, "tune");  // 128x64, fastest
  rows.add("7", kTuneB, 250, "tune");  // 128x32, 21.2 % slower
  rows.add("7", kPick, 306, "prog");   // another run: compared, not ranked
  rows.add("fa2", "", 200, "prog");
  rows.add("fa2", "", 198, "tune");
  const auto blocks = report_blocks(rows.set());
  const std::string& summary = blocks.at("autotune-summary-7");
  CAPTURE(summary);
  CHECK(
      contains(summary, "| best 64x64 | best 128x32 | best 128x64 | seed's pick | Hopper pick |"));
  CHECK(contains(summary, "| fp16 | 4096 | 3 | 2 | +21.2 % | +1.0 % | +21.2 % | +0.0 % | – | – |"));
  const std::string& comparison = blocks.at("run-comparison");
  CAPTURE(comparison);
  // "tune" against "prog": the pick 2.0 % slower, FA2 1.0 % slower; the median of the two.
  CHECK(contains(comparison, "| prog | tune | 2 | +1.5 % | +1.0 % .. +2.0 % | +1.0 % .. +1.0 % |"));
}

TEST_CASE("the ceilings block lists the peaks and each step's share of its family's ceiling") {
  Rows rows;
  ResultRow& mma = rows.add("peak:mma.sync", "", 600, "peak");
  mma.problem.seq_len = 0;
  mma.subject.set_element_type(DType::FP16);
  ResultRow& wgmma = rows.add("peak:wgmma", "", 900, "peak");
  wgmma.problem.seq_len = 0;
  wgmma.subject.set_element_type(DType::FP16);
  ResultRow& hbm = rows.add("peak:hbm.read", "", 0, "peak");
  hbm.problem.seq_len = 0;
  hbm.gbytes_per_s = 3000;
  // 4·B·H·N²·d = 4·16·16·4096²·128 FLOP over 2^30 bytes: 2048 FLOP per byte.
  const auto with_dram = [](ResultRow& row) {
    row.extra_metrics["dram__bytes_read.sum"] = 768.0 * 1024 * 1024;
    row.extra_metrics["dram__bytes_write.sum"] = 256.0 * 1024 * 1024;
  };
  with_dram(rows.add("16", kPick, 300, "sweep"));
  with_dram(rows.add("17", kPick, 450, "sweep"));
  with_dram(rows.add("fa2", "", 330, "sweep"));
  const std::string block = report_blocks(rows.set()).at("ceilings");
  CHECK(block.find("| mma.sync | fp16 | 600.0 TFLOP/s |") != std::string::npos);
  CHECK(block.find("| hbm.read | – | 3000 GB/s |") != std::string::npos);
  // Step 16 against mma.sync, step 17 against wgmma, FA2 against mma.sync.
  CHECK(block.find("| 300.0 | 50.0 % mma.sync | 2048 |") != std::string::npos);
  CHECK(block.find("| 450.0 | 50.0 % wgmma | 2048 |") != std::string::npos);
  CHECK(block.find("| | FA2 | 330.0 | 55.0 % mma.sync | 2048 |") != std::string::npos);
}

TEST_CASE(
    "the ceilings block places steps a wider run lacks from another run, in a table of its own") {
  Rows rows;
  ResultRow& wgmma = rows.add("peak:wgmma", "", 900, "peak");
  wgmma.problem.seq_len = 0;
  wgmma.subject.set_element_type(DType::FP16);
  const auto with_dram = [](ResultRow& row) {
    row.extra_metrics["dram__bytes_read.sum"] = 768.0 * 1024 * 1024;
    row.extra_metrics["dram__bytes_write.sum"] = 256.0 * 1024 * 1024;
    return &row;
  };
  constexpr const char* kHopper = "(FP16, 128, 128, 128, 12): stages_2+regs_240";
  // The progression's run measured steps 20-22 with DRAM counts; a later run steps 22-23 (issue
  // 36: steps added after the roofline's sweep). A third run without DRAM counts places nothing.
  for (const char* step : {"20", "21", "22"})
    with_dram(rows.add(step, kHopper, 450, "progression"));
  with_dram(rows.add("cudnn", "", 560, "progression"));
  with_dram(rows.add("22", kHopper, 600, "later"));
  with_dram(rows.add("23", kHopper, 610, "later"));
  with_dram(rows.add("cudnn", "", 565, "later"));
  rows.add("24", kHopper, 620, "no-dram");
  const std::string block = report_blocks(rows.set()).at("ceilings");
  CAPTURE(block);
  const std::size_t first = block.find("At N = 4096 (run ");
  const std::size_t second = block.find("Steps the runs above lack, from another run. At N = 4096");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  // Step 22 is read from the progression's run only; step 23 from the later run, with that run's
  // cuDNN; step 24 has no DRAM counts and no line.
  CHECK(block.find("| 22 |") < second);
  CHECK(block.find("| 22 |", second) == std::string::npos);
  CHECK(block.find("| 23 |") > second);
  CHECK(block.find("| 610.0 | 67.8 % wgmma | 2048 |", second) != std::string::npos);
  CHECK(block.find("| | cuDNN | 565.0 |", second) != std::string::npos);
  CHECK(block.find("| 24 |") == std::string::npos);
}

TEST_CASE("without ceiling rows there is no ceilings block") {
  Rows rows;
  rows.add("16", kPick, 300, "sweep");
  CHECK(report_blocks(rows.set()).count("ceilings") == 0);
}

TEST_CASE("report --check and --update of a document without a block say so and fail") {
  // It used to say "every block matches the data" (exit 0) for a document with no block at all.
  const std::string dir = std::filesystem::temp_directory_path() / "flashscope_report_no_blocks";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string csv = FLASHSCOPE_SOURCE_DIR "/results/h200/progression-4096.csv";
  const std::string plain = dir + "/plain.md";
  std::ofstream(plain) << "# a document\n";
  const auto run = [](std::vector<std::string> arguments) {
    CLI::App app;
    const ReportCommand report = add_report_command(app);
    arguments.insert(arguments.begin(), "report");
    std::reverse(arguments.begin(), arguments.end());
    app.parse(arguments);
    std::ostringstream err;
    std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
    const int status = report.run();
    std::cerr.rdbuf(old);
    return std::pair{status, err.str()};
  };
  for (const char* mode : {"--check", "--update"}) {
    const auto [status, err] = run({"--results", csv, mode, plain});
    INFO(mode, ": ", err);
    CHECK(status == 1);
    CHECK(err.find(plain + ": no generated block") != std::string::npos);
    CHECK(err.find("every block matches") == std::string::npos);
  }
  std::ifstream in(plain);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "# a document\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("per-N and vs-previous blocks carry the rows' intervals and say when a change is real") {
  constexpr const char* kHopper = "(FP16, 128, 128, 128, 12): stages_2+regs_240";
  Rows rows;
  const auto kernel = [&](const char* step, int seq_len, double tflops, double low_ms,
                          double high_ms) -> ResultRow& {
    ResultRow& row = rows.add(step, kHopper, tflops, "run");
    row.problem.seq_len = seq_len;
    row.ci_low_ms = low_ms;
    row.ci_high_ms = high_ms;
    row.pct_cudnn = 100.0 * tflops / 600;
    row.pct_cudnn_low = *row.pct_cudnn - 0.2;
    row.pct_cudnn_high = *row.pct_cudnn + 0.3;
    return row;
  };
  for (const int seq_len : {1024, 4096}) {
    rows.add("fa2", "", 300, "run").problem.seq_len = seq_len;
    rows.add("cudnn", "", 600, "run").problem.seq_len = seq_len;
  }
  // N = 1024: step 26 is 2 % slower, beyond both intervals; N = 4096: 1 % faster, within them.
  kernel("25", 1024, 612, 1.000, 1.004);
  kernel("26", 1024, 600, 1.020, 1.024);
  kernel("25", 4096, 600, 1.000, 1.030);
  kernel("26", 4096, 606, 0.995, 1.025);
  const auto blocks = report_blocks(rows.set());
  REQUIRE(blocks.count("per-n-26") == 1);
  const std::string& per_n = blocks.at("per-n-26");
  CAPTURE(per_n);
  CHECK(per_n.find("| 100.0 % [99.8, 100.3] |") != std::string::npos);
  REQUIRE(blocks.count("vs-previous-26") == 1);
  const std::string& versus = blocks.at("vs-previous-26");
  CAPTURE(versus);
  CHECK(versus.find("beyond the intervals") != std::string::npos);
  CHECK(versus.find("| fp16 | 1024 | 612.0 | 600.0 | 98.0 % | – → – | – → – | yes |") !=
        std::string::npos);
  CHECK(versus.find("| fp16 | 4096 | 600.0 | 606.0 | 101.0 % | – → – | – → – | no |") !=
        std::string::npos);
}

TEST_CASE(
    "a backward step's block reads its backward rows and the backward baselines, never a forward "
    "row") {
  Rows rows;
  constexpr const char* kB2 =
      "(FP16, 128, 64, 128, 8): async+eager+swizzled+load_0_0_0_tiles+buffer";
  // Before any backward row: the block exists and says how to measure the step.
  rows.add("7", kPick, 300, "run");
  rows.add("cudnn", "", 400, "run");
  auto blocks = report_blocks(rows.set());
  REQUIRE(blocks.count("step-B2") == 1);
  CHECK(blocks.at("step-B2").find("No sweep rows of step B2") == 0);
  CHECK(blocks.at("step-B2").find("--pass backward --steps 102") != std::string::npos);
  // B2's backward rows at two N beside FA2's and cuDNN's backward, and a faster forward cuDNN row.
  const auto backward = [&](const std::string& step, const std::string& config, double tflops,
                            int seq_len) {
    ResultRow& row = rows.add(step, config, tflops, "run");
    row.problem.pass = Pass::backward;
    row.problem.seq_len = seq_len;
  };
  backward("B2", kB2, 150, 4096);
  backward("cudnn", "", 200, 4096);
  backward("fa2", "", 300, 4096);
  backward("B2", kB2, 150, 1024);
  backward("fa2", "", 100, 1024);
  blocks = report_blocks(rows.set());
  const std::string& block = blocks.at("step-B2");
  CAPTURE(block);
  CHECK(block.find(std::string("| fp16 | none | 4096 | `") + kB2 +
                   "` | 6.667 | 150.0 | 50.0 % | 75.0 % |") != std::string::npos);
  CHECK(block.find(std::string("| fp16 | none | 1024 | `") + kB2 +
                   "` | 6.667 | 150.0 | 150.0 % | – |") != std::string::npos);
  // The harmonic mean of 150 % and 50 % is 75 %; cuDNN's is missing at N = 1024, so none.
  CHECK(block.find("| fp16 | none | harmonic mean over N | | | | 75.0 % | – |") !=
        std::string::npos);
  CHECK(blocks.at("step-B2@test-device") == block);
  CHECK(blocks.at("step-B1").find("No sweep rows of step B1") == 0);
}

TEST_CASE("a backward step's block reads the run that compared it with a baseline") {
  Rows rows;
  constexpr const char* kB3 = "(FP16, 128, 64, 128, 8): stages_3";
  const auto backward = [&](double tflops, int seq_len, const std::string& run) -> ResultRow& {
    ResultRow& row = rows.add("B3", kB3, tflops, run);
    row.problem.pass = Pass::backward;
    row.problem.seq_len = seq_len;
    return row;
  };
  // Run "many": three N, no baseline. Run "paired": one N, paired with cuDNN in its rounds.
  backward(400, 1024, "many");
  backward(410, 2048, "many");
  backward(420, 4096, "many");
  backward(430, 4096, "paired").pct_cudnn = 80.0;
  auto blocks = report_blocks(rows.set());
  std::string block = blocks.at("step-B3");
  CAPTURE(block);
  CHECK(block.find("| 430.0 | – | 80.0 % |") != std::string::npos);
  CHECK(block.find("420.0") == std::string::npos);
  // Without any paired row, the run that measured the step most.
  rows.storage.back().pct_cudnn.reset();
  blocks = report_blocks(rows.set());
  block = blocks.at("step-B3");
  CHECK(block.find("| 410.0 |") != std::string::npos);
  CHECK(block.find("430.0") == std::string::npos);
}

TEST_CASE("rows of a step this build does not have are reported, not fatal") {
  // A result file may hold a reverted experiment's rows or another build's newer step (the
  // backward candidate B6's counters were such a file); the blocks that list a run's steps take
  // their numbers from the rows and name the step as unknown instead of throwing.
  Rows rows;
  constexpr const char* kHopper = "(FP16, 128, 128, 128, 12): stages_2+regs_240";
  constexpr int kNoSuchStep = 99;  // forward numbers end well below it, backward start at 101
  REQUIRE(step_title(kNoSuchStep).empty());
  ResultRow& known = rows.add("17", kHopper, 450, "pipes");
  known.extra_metrics[std::string(kTensorPipeMetric)] = 60.0;
  ResultRow& unknown = rows.add(std::to_string(kNoSuchStep), kHopper, 500, "pipes");
  unknown.extra_metrics[std::string(kTensorPipeMetric)] = 70.0;
  ResultRow& unknown_backward = rows.add("B9", "(FP16, 128, 64, 128, 12): stages_3", 300, "pipes");
  unknown_backward.problem.pass = Pass::backward;
  unknown_backward.extra_metrics[std::string(kTensorPipeMetric)] = 50.0;
  std::map<std::string, std::string> blocks;
  REQUIRE_NOTHROW(blocks = report_blocks(rows.set()));
  CHECK(blocks.count("step-" + std::to_string(kNoSuchStep)) == 0);  // no page cites it
  REQUIRE(blocks.count("hopper-tensor-pipe") == 1);
  const std::string& block = blocks.at("hopper-tensor-pipe");
  CAPTURE(block);
  CHECK(contains(block, "| " + std::to_string(kNoSuchStep) + " | (not a step of this build) |"));
  CHECK(contains(block, "| 17 | " + std::string(step_title(17)) + " |"));
}

TEST_CASE("step titles cover both passes and nothing else") {
  CHECK(!step_title(1).empty());
  CHECK(!step_title(101).empty());  // B1: the backward track has titles too
  CHECK(step_title(0).empty());
  CHECK(step_title(100).empty());
}
