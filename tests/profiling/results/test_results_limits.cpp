// The limits a results CSV is read under (docs/csv-schema.md, Limits): a record of 1 MiB, 10^6
// rows, 1 GiB, 64 metric columns. Past each, reading stops with an error that names the file,
// the line and the limit; errors quote long or binary values shortened and escaped. The
// defaults are checked where that is cheap (a 1 MiB record, a sparse 1 GiB file, the metric
// columns); the row and size limits through the same code with smaller ResultsLimits.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profiling/results/results.hpp"

using namespace flashscope;

namespace {

ResultRow reference_row(int seq_len) {
  ResultRow row;
  row.subject = RowSubject::baseline(Baseline::fa2);
  row.problem.dtype = DType::FP16;
  row.problem.batch = 16;
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = seq_len;
  row.runs = 30;
  row.median_ms = 2;
  row.min_ms = 1.5;
  row.max_ms = 2.5;
  row.tflops = 300;
  row.seed_attn_tflops = 305;
  row.verdict = Verdict::pass;
  row.status = {};
  row.device = "NVIDIA H200";
  row.cache_mode = "warm";
  row.git_commit = "0123456789ab";
  row.input_seed = 1;
  return row;
}

std::string csv_of(const std::vector<ResultRow>& rows,
                   const std::vector<std::string>& extra_metrics = {}) {
  std::ostringstream out;
  ResultsCsvWriter writer(out, extra_metrics);
  for (const ResultRow& row : rows)
    writer.write(row);
  return out.str();
}

// The error reading `text` under `limits` gives, or "(no error)".
std::string error_of(const std::string& text, const ResultsLimits& limits = {}) {
  std::istringstream in(text);
  try {
    read_results_csv(in, "results.csv", limits);
  } catch (const ResultsFormatError& error) {
    return error.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a record of 1 MiB is read; one byte more is an error naming the line and the limit") {
  const std::string header_and_row = csv_of({reference_row(512)});
  const std::string header = header_and_row.substr(0, header_and_row.find('\n') + 1);
  // A second row padded (through its device name) to exactly 1 MiB without its line end.
  ResultRow padded = reference_row(1024);
  const std::size_t plain = csv_of({padded}).size() - header.size() - 1;
  padded.device += std::string((std::size_t{1} << 20) - plain, 'x');
  std::string text = header_and_row + csv_of({padded}).substr(header.size());
  REQUIRE(text.size() - header_and_row.size() - 1 == std::size_t{1} << 20);
  std::istringstream in(text);
  CHECK(read_results_csv(in, "results.csv").size() == 2);

  text.insert(text.size() - 1, "x");  // one more byte of device name
  const std::string error = error_of(text);
  CHECK(contains(error,
                 "results.csv:3: the record is longer than 1 MiB (1048576 bytes), the "
                 "limit for one line (docs/csv-schema.md, Limits)"));
}

TEST_CASE("line breaks inside a quoted field count towards the record limit") {
  ResultRow row = reference_row(512);
  // Written quoted: one record of 1001 lines, longer than the header line.
  row.status = RowStatus::skipped(std::string(1000, '\n'));
  const std::string text = csv_of({row});
  // Without its line end; 1000 of its bytes are the quoted line breaks.
  const std::size_t record = text.size() - text.find('\n') - 2;
  ResultsLimits limits;
  limits.max_record_bytes = record - 1;
  CHECK(contains(error_of(text, limits), "results.csv:2: the record is longer than " +
                                             std::to_string(record - 1) + " bytes"));
  limits.max_record_bytes = record;
  CHECK(error_of(text, limits) == "(no error)");
}

TEST_CASE("rows past the row limit are an error at the first row too many") {
  const std::string text = csv_of({reference_row(512), reference_row(1024), reference_row(2048)});
  ResultsLimits limits;
  limits.max_rows = 3;
  CHECK(error_of(text, limits) == "(no error)");
  limits.max_rows = 2;
  CHECK(error_of(text, limits) ==
        "results.csv:4: more than 2 rows, the limit for one file (docs/csv-schema.md, Limits)");
  // A header alone is a file of no rows, even under a limit of none.
  limits.max_rows = 0;
  CHECK(error_of(csv_of({}), limits) == "(no error)");
  CHECK(ResultsLimits{}.max_rows == 1'000'000);
}

TEST_CASE("the size limit stops at the same byte however the text arrives") {
  const std::string text = csv_of({reference_row(512), reference_row(1024), reference_row(2048)});
  ResultsLimits limits;
  limits.max_file_bytes = text.size();
  CHECK(error_of(text, limits) == "(no error)");
  limits.max_file_bytes = text.size() - 10;  // inside the last row, on line 4
  const std::string expected = "results.csv:4: the text goes on past " +
                               std::to_string(text.size() - 10) +
                               " bytes, the limit for one file (docs/csv-schema.md, Limits)";
  CHECK(error_of(text, limits) == expected);
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{100}}) {
    CAPTURE(chunk);
    ResultsCsvParser parser("results.csv", limits);
    std::string error;
    try {
      for (std::size_t at = 0; at < text.size(); at += chunk)
        parser.feed(std::string_view(text).substr(at, chunk));
      parser.finish();
    } catch (const ResultsFormatError& e) {
      error = e.what();
    }
    CHECK(error == expected);
  }
}

TEST_CASE("a file over 1 GiB is rejected before it is read") {
  const auto directory = std::filesystem::temp_directory_path() / "flashscope_test_results_limits";
  std::filesystem::create_directories(directory);
  const std::string path = (directory / "huge.csv").string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << csv_of({reference_row(512)});
  }
  // Sparse: the size is there, the disk blocks are not.
  std::filesystem::resize_file(path, (std::uintmax_t{1} << 30) + 1);
  try {
    read_results_file(path);
    FAIL("a file over 1 GiB was read");
  } catch (const ResultsFormatError& error) {
    CHECK(std::string(error.what()) ==
          path +
              ": the file holds 1073741825 bytes, over the limit of 1 GiB (1073741824 bytes) "
              "for one results CSV (docs/csv-schema.md, Limits)");
  }
  std::filesystem::resize_file(path, csv_of({reference_row(512)}).size());
  CHECK(read_results_file(path).size() == 1);
  std::filesystem::remove_all(directory);
}

TEST_CASE("at most 64 metric columns") {
  std::vector<std::string> metrics;
  for (int i = 0; i < 64; ++i)
    metrics.push_back("metric_" + std::to_string(i) + ".sum");
  ResultRow row = reference_row(512);
  row.extra_metrics["metric_0.sum"] = 1;
  CHECK(error_of(csv_of({row}, metrics)) == "(no error)");
  metrics.push_back("one_too_many.sum");
  CHECK(error_of(csv_of({row}, metrics)) ==
        "results.csv:1: the header has 65 metric columns, over the limit of 64 "
        "(docs/csv-schema.md, Limits)");
}

TEST_CASE("errors quote long values shortened and other bytes escaped") {
  ResultRow row = reference_row(512);
  row.device = std::string(100'000, 'd');
  std::string text = csv_of({row});
  // The device column is fine; break the verdict so the message quotes a value of 100,000 bytes.
  // (In the record, not the header: a column is named "pass" too.)
  text.replace(text.find(",pass,", text.find('\n')), 6, "," + std::string(100'000, 'v') + ",");
  const std::string long_value = error_of(text);
  CHECK(contains(long_value, "results.csv:2: column 'verdict': 'vvvv"));
  CHECK(contains(long_value, "... (100000 bytes)' is not pass, fail or unchecked"));
  CHECK(long_value.size() < 300);

  std::string binary = csv_of({reference_row(512)});
  binary.replace(binary.find(",warm,"), 6, std::string(",w\x01\xff,", 5));
  CHECK(contains(error_of(binary), "column 'cache_mode': 'w\\x01\\xff' is not warm or cold"));

  // A config parse error quotes the whole config; the message keeps its start and its problem.
  ResultRow kernel = reference_row(512);
  kernel.subject = RowSubject::kernel(7);
  const std::string valid = "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles";
  kernel.config = parse_short_form(valid);
  std::string long_config = csv_of({kernel});
  long_config.replace(long_config.find(valid), valid.size(),
                      "(FP16, 128, 64, 64, 4): " + std::string(50'000, 'a') + "+async");
  const std::string config_error = error_of(long_config);
  CHECK(config_error.starts_with("results.csv:2: column 'config': cannot parse config"));
  CHECK(config_error.ends_with(
      "is not a feature; the features are async, eager, swizzled, "
      "load_Q_K_V_tiles (e.g. load_0_2_2_tiles), buffer and opt_softmax "
      "(steps 1-16), or stages_N, regs_N and deterministic (Hopper steps 17+; "
      "deterministic on backward steps B5+)"));
  CHECK(config_error.size() < 1000);
}
