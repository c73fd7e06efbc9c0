// The generated docs blocks from synthetic rows: block markers are replaced in place, and an
// autotune table ranks the configs of one measurement campaign only.
#include <doctest/doctest.h>

#include <deque>

#include "explorer/report/results_report.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

constexpr const char* kPick = "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles";
constexpr const char* kTuneA = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles";
constexpr const char* kTuneB = "(FP16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles";

struct Rows {
  std::deque<ResultRow> storage;  // stable addresses for the RowSet

  void add(const std::string& step, const std::string& config, double tflops,
           const std::string& commit) {
    ResultRow row;
    row.step = step;
    row.config = config;
    row.dtype = "fp16";
    row.d_head = 128;
    row.batch = 16;
    row.heads = 16;
    row.seq_len = 4096;
    row.runs = 30;
    row.tflops = tflops;
    row.median_ms = 1000.0 / tflops;
    row.verdict = "pass";
    row.status = "ok";
    row.device = "test device";
    row.cache_mode = "warm";
    row.git_commit = commit;
    storage.push_back(row);
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
