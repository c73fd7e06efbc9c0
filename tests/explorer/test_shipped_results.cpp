// The dataset shipped in results/ is the explorer's default and the source of every measured
// number in docs/: it must cover every step x dtype x N with both references, and every
// generated block of docs/results.md and docs/versions/*.md must match it.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "configs/config_sets.hpp"
#include "explorer/model/ceilings.hpp"
#include "explorer/model/compare.hpp"
#include "explorer/model/progression.hpp"
#include "explorer/model/result_files.hpp"
#include "explorer/model/roofline.hpp"
#include "explorer/model/row_set.hpp"
#include "explorer/report/results_report.hpp"
#include "profiling/results/results.hpp"

using namespace flashscope;
using namespace flashscope::explorer;

namespace {

const std::string kSourceDir = FLASHSCOPE_SOURCE_DIR;
constexpr int kSeqLens[] = {512, 1024, 2048, 4096, 8192, 16384};

// Rows a GPU run still owes, each with its reason. The coverage check below skips exactly these,
// and fails as soon as the shipped data covers one (a debt paid is struck from this list, never
// left behind). Keep it short: a gap not listed here fails the test.
struct OwedRows {
  int step;
  const char* dtype;
  const char* reason;
};
// None owed: step 33's fp16 and bf16 rows (its 16-bit kernels are step 32's) came with step 34's
// run (results/h200/step34-d-heads.csv), which measured both steps in the same rounds.
constexpr std::array<OwedRows, 0> kOwed{};

const OwedRows* owed(int step, const std::string& dtype) {
  for (const OwedRows& entry : kOwed)
    if (entry.step == step && dtype == entry.dtype) return &entry;
  return nullptr;
}

struct Dataset {
  std::vector<ResultFile> files;
  std::vector<const ResultRow*> rows;
};

Dataset load_shipped() {
  const std::vector<std::string> paths = find_result_csvs(kSourceDir + "/results");
  REQUIRE_MESSAGE(!paths.empty(), "no CSVs under results/");
  LoadOutcome outcome = load_result_files(paths);
  for (const std::string& problem : outcome.problems)
    FAIL_CHECK(problem);
  Dataset dataset{std::move(outcome.files), {}};
  for (const ResultFile& file : dataset.files)
    for (const ResultRow& row : file.rows)
      dataset.rows.push_back(&row);
  return dataset;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

TEST_CASE("the shipped dataset covers every step x dtype x N with both references") {
  const Dataset dataset = load_shipped();
  std::set<std::tuple<std::string, std::string, int>> covered;
  for (const ResultRow* row : dataset.rows)
    if (is_usable(*row))
      covered.insert({row->subject.text(), dtype_text(*row), row->problem.seq_len});
  // An owed (step, dtype) may be partly measured (a short sweep); once every N is, the debt is
  // paid and the entry must be struck.
  for (const OwedRows& debt : kOwed) {
    CAPTURE(debt.step);
    CAPTURE(debt.dtype);
    INFO("owed: " << debt.reason);
    CHECK_FALSE(std::all_of(std::begin(kSeqLens), std::end(kSeqLens), [&](int n) {
      return covered.contains({std::to_string(debt.step), debt.dtype, n});
    }));  // paid: strike it
  }
  for (const char* dtype : {"fp16", "bf16"})
    for (const int n : kSeqLens) {
      for (int step = configs::kFirstStep; step <= configs::kLastStep; ++step) {
        CAPTURE(step);
        CAPTURE(dtype);
        CAPTURE(n);
        if (!owed(step, dtype)) CHECK(covered.contains({std::to_string(step), dtype, n}));
      }
      for (const char* reference : {"fa2", "cudnn"}) {
        CAPTURE(reference);
        CAPTURE(dtype);
        CAPTURE(n);
        CHECK(covered.contains({reference, dtype, n}));
      }
    }
  for (const ResultRow* row : dataset.rows) {
    CAPTURE(row->subject.text());
    CAPTURE(config_text(*row));
    CAPTURE(row->problem.seq_len);
    // A failing kernel's speed is not a result. cuDNN's FP8 attention is the one exception: on
    // Hopper it writes O in e4m3 (docs/spec/fp8-track.md §3), coarser than the bf16 O the §2 rule
    // is written for, so its row may fail the rule (results/h200/MANIFEST.md names the one that
    // does, with its error) and still time cuDNN's FP8 speed, which the e4m3 rows are against.
    const bool fp8_reference =
        row->subject.which_baseline() == Baseline::cudnn && row->problem.dtype == DType::E4M3;
    if (!fp8_reference) CHECK(row->verdict != Verdict::fail);
    CHECK_FALSE(row->git_commit.empty());
    CHECK_FALSE(row->device.empty());
    // A value outside its range (an L2 hit rate above 100 %) never goes unflagged; docs/results.md
    // lists the flagged rows (the warnings block).
    if (!sanity_warnings(*row).empty()) CHECK_FALSE(row->warnings.empty());
  }
}

TEST_CASE("docs carry no hand-written measured sections") {
  // Measured figures live in generated blocks; the old hand-written "Measured (NVIDIA H200 ...)"
  // sections could not be reproduced (and described a "round-robin" mode that never existed).
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/docs/versions")) {
    if (entry.path().extension() != ".md") continue;
    CAPTURE(entry.path().string());
    const std::string text = read_file(entry.path().string());
    CHECK(text.find("## Measured (") == std::string::npos);
    CHECK(text.find("round-robin") == std::string::npos);
  }
  // The statements of docs/results.md rest on these blocks.
  const std::string results = read_file(kSourceDir + "/docs/results.md");
  for (const char* block : {"progression", "vs-fa2-16", "vs-fa2-9", "clocks", "drift", "references",
                            "warnings", "run-comparison", "dataset"}) {
    CAPTURE(block);
    CHECK(results.find(std::string("<!-- flashscope:begin ") + block + " -->") !=
          std::string::npos);
  }
}

TEST_CASE("every generated block in docs/ matches the shipped dataset") {
  const Dataset dataset = load_shipped();
  const RowSet set(dataset.rows);
  const auto blocks = report_blocks(set);
  std::vector<std::string> documents = {kSourceDir + "/docs/results.md"};
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/docs/versions"))
    if (entry.path().extension() == ".md") documents.push_back(entry.path().string());
  std::sort(documents.begin(), documents.end());
  int generated_blocks = 0;
  for (const std::string& path : documents) {
    CAPTURE(path);
    const std::string text = read_file(path);
    const BlockUpdate update = update_blocks(text, blocks);
    CHECK_MESSAGE(update.changed.empty(),
                  "stale blocks: run `explorer report --update " << path << "`");
    CHECK(update.unknown.empty());
    for (std::size_t at = text.find("<!-- flashscope:begin "); at != std::string::npos;
         at = text.find("<!-- flashscope:begin ", at + 1))
      ++generated_blocks;
  }
  // docs/results.md's tables and one block per step page.
  CHECK(generated_blocks >= 16 + 12);
}

TEST_CASE("docs/csv-schema.md shows the header the writer writes") {
  std::string header;
  for (const std::string& column : result_columns())
    header += (header.empty() ? "" : ",") + column;
  const std::string schema = read_file(kSourceDir + "/docs/csv-schema.md");
  CHECK(schema.find("\n" + header + "\n") != std::string::npos);
}

namespace {

// The records of a CSV text with each field as written (quotes kept), so two files compare byte
// for byte field by field. The shipped files quote no line breaks, so a record is a line.
std::vector<std::vector<std::string>> raw_records(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted)
        fields.emplace_back();
      else
        fields.back() += c;
    }
    records.push_back(std::move(fields));
  }
  return records;
}

}  // namespace

TEST_CASE("every shipped CSV reads into typed rows and writes back to the same text") {
  const std::vector<std::string> paths = find_result_csvs(kSourceDir + "/results");
  REQUIRE(!paths.empty());
  for (const std::string& path : paths) {
    CAPTURE(path);
    const std::string original = read_file(path);
    ResultsCsvParser parser(path);
    std::vector<ResultRow> rows = parser.feed(original);
    for (ResultRow& row : parser.finish())
      rows.push_back(std::move(row));
    std::ostringstream out;
    ResultsCsvWriter writer(out, parser.extra_metric_names());
    for (const ResultRow& row : rows)
      writer.write(row);
    const std::string written = out.str();

    // The writer writes today's header: every column, `causal` after `gbytes_per_s`, then the
    // file's metric columns. A file with the full header but `causal` (written before that
    // column existed) comes back as it was plus `,0` there; older files lack more columns, so
    // each row is compared on the columns the shipped file has, field by field.
    const auto shipped = raw_records(original);
    const auto rewritten = raw_records(written);
    REQUIRE(shipped.size() == rows.size() + 1);
    REQUIRE(rewritten.size() == shipped.size());
    const std::vector<std::string>& header = shipped.front();
    std::vector<std::size_t> position;  // of each shipped column in the written header
    for (const std::string& name : header) {
      const auto found = std::find(rewritten.front().begin(), rewritten.front().end(), name);
      REQUIRE_MESSAGE(found != rewritten.front().end(), name);
      position.push_back(static_cast<std::size_t>(found - rewritten.front().begin()));
    }
    int differing = 0;
    for (std::size_t r = 1; r < shipped.size(); ++r)
      for (std::size_t c = 0; c < header.size(); ++c)
        if (shipped[r][c] != rewritten[r][position[c]] && ++differing <= 5)
          FAIL_CHECK("row " << r << " column " << header[c] << ": '" << shipped[r][c]
                            << "' written back as '" << rewritten[r][position[c]] << "'");
    CHECK(differing == 0);

    const bool lacks_only_causal =
        header.size() == rewritten.front().size() - 1 &&
        std::find(header.begin(), header.end(), "causal") == header.end() &&
        std::equal(result_columns().begin(), result_columns().end() - 1, header.begin());
    if (lacks_only_causal) {
      // Byte for byte: the shipped text with ",0" inserted after gbytes_per_s on every line.
      std::string expected;
      std::istringstream lines(original);
      std::string line;
      bool first = true;
      while (std::getline(lines, line)) {
        auto fields = raw_records(line + "\n").front();
        fields.insert(fields.begin() + static_cast<long>(result_columns().size() - 1),
                      first ? "causal" : "0");
        first = false;
        for (std::size_t i = 0; i < fields.size(); ++i)
          expected += (i ? "," : "") + fields[i];
        expected += '\n';
      }
      CHECK(written == expected);
    }
  }
}

TEST_CASE("results/h100/hopper.csv has today's header without the later axes: byte for byte") {
  // The file the byte-for-byte comparison above runs on in full; keep one like it shipped. It
  // predates the columns added since (the mask, K/V heads, the pass, the interleaved measurement
  // and the GPU's state), which are optional and follow gbytes_per_s.
  const std::string header =
      read_file(kSourceDir + "/results/h100/hopper.csv")
          .substr(0, read_file(kSourceDir + "/results/h100/hopper.csv").find(",metric:"));
  std::string expected;
  // The file's header is today's up to gbytes_per_s, the last column it has.
  for (const std::string& name : result_columns()) {
    expected += (expected.empty() ? "" : ",") + name;
    if (name == "gbytes_per_s") break;
  }
  CHECK(header == expected);
}

TEST_CASE("Compare opens the shipped dataset on the pair docs/explorer.md names") {
  // docs/explorer.md, "Compare": on the H200 (the device with the most rows, which the views
  // show first), the newest re-run: step 34's 16-bit rows, swept beside step 33 and again beside
  // step 35 (results/h200/MANIFEST.md).
  const Dataset dataset = load_shipped();
  const auto pair = default_compare_pair(dataset.files, "NVIDIA H200");
  REQUIRE(pair.has_value());
  const auto name = [&](std::size_t index) {
    const std::filesystem::path path = dataset.files[index].path;
    return path.parent_path().filename().string() + "/" + path.filename().string();
  };
  CHECK(name(pair->a) == "h200/step34-d-heads.csv");
  CHECK(name(pair->b) == "h200/step35-d-heads.csv");
  const std::string doc = read_file(kSourceDir + "/docs/explorer.md");
  CHECK(doc.find("`h200/step34-d-heads.csv` against `h200/step35-d-heads.csv`") !=
        std::string::npos);
}

// Issue 36: the roofline (the GUI's roofline view builds it from the rows with DRAM counts, as
// below) places every forward step on the H200, whose dataset has DRAM byte counts for each step's
// progression configs at N = 4096 (progression-4096.csv: steps 1-21; progression-4096-22-29.csv:
// the steps added after it; progression-4096-smem.csv: steps 1-31 again, with the shared-memory
// wavefront counts too; progression-4096-smem-32.csv: step 32; progression-4096-smem-34.csv:
// steps 33 and 34, whose 16-bit kernels are step 32's and step 34's). Steps whose DRAM counts a
// GPU run still owes (`explorer --csv --set prog --steps NN --seq-lens 4096 --d-heads 128
// --metrics dram__bytes_read.sum,dram__bytes_write.sum`): step 35 (its two calls on a lent H200,
// a 400 s budget, ran the checks, sanitizers and the sweep against step 34, not the counters). An
// owed step that is placed fails the test, so an entry goes when its rows come.
constexpr std::array<int, 1> kRooflineOwed{35};

TEST_CASE("the H200 roofline places every forward step at N = 4096 in both dtypes") {
  const Dataset dataset = load_shipped();
  std::vector<const ResultRow*> h200;
  for (const ResultRow* row : dataset.rows)
    if (row->device == "NVIDIA H200") h200.push_back(row);
  REQUIRE_FALSE(h200.empty());
  const RowSet all(h200);
  const RowSet with_dram = rows_with_dram(all);
  const Ceilings ceilings(with_dram.ceiling_rows());
  REQUIRE_FALSE(ceilings.empty());
  for (const char* dtype : {"fp16", "bf16"}) {
    const Progression progression = build_progression(with_dram, {dtype, 4096, Baseline::fa2});
    const Roofline roofline = build_roofline(progression, ceilings, dtype);
    std::set<int> placed;
    for (const RooflinePoint& point : roofline.points)
      if (const auto step = point.subject.step()) placed.insert(*step);
    for (int step = configs::kFirstStep; step <= configs::kLastStep; ++step) {
      INFO(dtype << " step " << step);
      const bool owed =
          std::find(kRooflineOwed.begin(), kRooflineOwed.end(), step) != kRooflineOwed.end();
      CHECK(placed.contains(step) != owed);
    }
    CHECK_FALSE(roofline.compute_roofs.empty());
    CHECK(roofline.memory_roof != nullptr);
  }
}
