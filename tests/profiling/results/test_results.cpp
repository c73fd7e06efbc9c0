// The results CSV: writer/reader round trip, quoting, optional fields, incremental parsing, and
// the errors a corrupt file produces (file, line and problem in every message).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "profiling/results/results.hpp"

using namespace flashscope;

namespace {

ResultRow measured_kernel_row() {
  ResultRow row;
  row.subject = RowSubject::kernel(7);
  row.config =
      parse_short_form("(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax");
  row.problem.dtype = DType::FP16;
  row.problem.d_head = 128;
  row.problem.batch = 16;
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = 4096;
  row.runs = 30;
  row.median_ms = 2.345678;
  row.min_ms = 2.3125;
  row.max_ms = 2.5;
  row.tflops = 234.5678;
  row.seed_attn_tflops = 245.6789;
  row.pct_fa2 = 68.125;
  row.pct_cudnn = std::nullopt;
  row.registers = 229;
  row.smem_bytes = 49152;
  row.local_bytes = 0;
  row.cycles = 4567890;
  row.l2_hit_pct = 97.53125;
  row.cupti_duration_ms = 2.4375;
  row.verdict = Verdict::pass;
  row.max_error = 0.0009765625;
  row.status = {};
  row.device = "NVIDIA H100 80GB HBM3";
  row.device_index = 1;
  row.device_uuid = "GPU-8e5b7a0c-1d2e-3f40-5162-738495a6b7c8";
  row.sm_clock_mhz = 1980;
  row.cache_mode = "warm";
  row.git_commit = "229426e";
  row.git_dirty = true;
  row.host = "gpu-host-7";
  row.run_id = "gpu-host-7 2026-11-21T06:45:03Z";
  row.fa2_entry_point = "in_place";
  row.locked_sm_clock_mhz = 1980;
  row.pct_fa2_cycles = 97.5;
  row.pct_cudnn_cycles = 51.25;
  row.input_seed = 123456789012ull;
  row.extra_metrics = {{"dram__bytes_read.sum", 1.5e9}};
  return row;
}

ResultRow reference_row() {
  ResultRow row;
  row.subject = RowSubject::baseline(Baseline::fa2);
  row.problem.dtype = DType::BF16;
  row.problem.batch = 4;
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = 16384;
  row.runs = 30;
  row.median_ms = 25.5;
  row.min_ms = 25.25;
  row.max_ms = 26;
  row.tflops = 345.25;
  row.seed_attn_tflops = 346.75;
  row.verdict = Verdict::pass;
  row.max_error = 0.0078125;
  row.status = {};
  row.device = "NVIDIA H100 80GB HBM3";
  row.sm_clock_mhz = 1755;
  row.cache_mode = "cold";
  row.git_commit = "229426e";
  row.git_dirty = false;
  row.fa2_entry_point = "sdpa_op";
  row.reference_pass = 2;
  row.warnings = "l2_hit_pct 101 is outside 0-100: a note, with a comma";
  row.input_seed = 7;
  return row;
}

ResultRow faulted_row() {
  ResultRow row;
  row.subject = RowSubject::kernel(16);
  row.config =
      parse_short_form("(BF16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_0_tiles+buffer");
  row.problem.dtype = DType::BF16;
  row.problem.batch = 8;
  row.problem.heads = 16;
  row.problem.heads_kv = row.problem.heads;
  row.problem.seq_len = 8192;
  row.verdict = Verdict::unchecked;
  // Commas, quotes and a line break: all must survive quoting.
  row.status = RowStatus::fault(
      "kernels/x.cu:12: launch failed: \"cudaErrorIllegalAddress\", code 700\nworker ended");
  row.device = "NVIDIA H100 80GB HBM3";
  row.cache_mode = "warm";
  row.git_commit = "229426e";
  row.input_seed = 99;
  return row;
}

std::string write_csv(const std::vector<ResultRow>& rows,
                      const std::vector<std::string>& extra_metrics) {
  std::ostringstream out;
  ResultsCsvWriter writer(out, extra_metrics);
  for (const ResultRow& row : rows)
    writer.write(row);
  return out.str();
}

void check_equal(const ResultRow& a, const ResultRow& b) {
  CHECK(a.subject == b.subject);
  CHECK(a.config == b.config);
  CHECK(a.problem.dtype == b.problem.dtype);
  CHECK(a.problem.d_head == b.problem.d_head);
  CHECK(a.problem.batch == b.problem.batch);
  CHECK(a.problem.heads == b.problem.heads);
  CHECK(a.problem.seq_len == b.problem.seq_len);
  CHECK(a.runs == b.runs);
  CHECK(a.median_ms == doctest::Approx(b.median_ms).epsilon(1e-7));
  CHECK(a.min_ms == doctest::Approx(b.min_ms).epsilon(1e-7));
  CHECK(a.max_ms == doctest::Approx(b.max_ms).epsilon(1e-7));
  CHECK(a.tflops == doctest::Approx(b.tflops).epsilon(1e-7));
  CHECK(a.seed_attn_tflops == doctest::Approx(b.seed_attn_tflops).epsilon(1e-7));
  CHECK(a.pct_fa2 == b.pct_fa2);
  CHECK(a.pct_cudnn == b.pct_cudnn);
  CHECK(a.registers == b.registers);
  CHECK(a.smem_bytes == b.smem_bytes);
  CHECK(a.local_bytes == b.local_bytes);
  CHECK(a.cycles == b.cycles);
  CHECK(a.l2_hit_pct == b.l2_hit_pct);
  CHECK(a.cupti_duration_ms == b.cupti_duration_ms);
  CHECK(a.verdict == b.verdict);
  CHECK(a.max_error == b.max_error);
  CHECK(a.status == b.status);
  CHECK(a.device == b.device);
  CHECK(a.device_index == b.device_index);
  CHECK(a.device_uuid == b.device_uuid);
  CHECK(a.sm_clock_mhz == b.sm_clock_mhz);
  CHECK(a.cache_mode == b.cache_mode);
  CHECK(a.git_commit == b.git_commit);
  CHECK(a.git_dirty == b.git_dirty);
  CHECK(a.host == b.host);
  CHECK(a.run_id == b.run_id);
  CHECK(a.fa2_entry_point == b.fa2_entry_point);
  CHECK(a.locked_sm_clock_mhz == b.locked_sm_clock_mhz);
  CHECK(a.reference_pass == b.reference_pass);
  CHECK(a.pct_fa2_cycles == b.pct_fa2_cycles);
  CHECK(a.pct_cudnn_cycles == b.pct_cudnn_cycles);
  CHECK(a.warnings == b.warnings);
  CHECK(a.input_seed == b.input_seed);
  CHECK(a.extra_metrics == b.extra_metrics);
  CHECK(a.gbytes_per_s == b.gbytes_per_s);
  CHECK(a.reference_variant == b.reference_variant);
  CHECK(a.max_error_fp64 == b.max_error_fp64);
  CHECK(a.rms_error_fp64 == b.rms_error_fp64);
  CHECK(a.reference_version == b.reference_version);
}

std::string error_of(const std::string& text, const std::string& source = "results.csv") {
  std::istringstream in(text);
  try {
    read_results_csv(in, source);
  } catch (const ResultsFormatError& error) {
    return error.what();
  }
  return "(no error)";
}

// A valid file whose line `line` (1 = header) has `field` replaced by `value`.
std::string with_field(int line, const std::string& column, const std::string& value) {
  std::string text = write_csv({measured_kernel_row(), measured_kernel_row()}, {});
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  // Locate the column in the header (no quoted commas there) and in the row (quoted config).
  const std::vector<std::string>& columns = result_columns();
  const std::size_t index =
      static_cast<std::size_t>(std::find(columns.begin(), columns.end(), column) - columns.begin());
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (const char c : lines[static_cast<std::size_t>(line - 1)]) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      fields.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  fields.push_back(field);
  fields[index] = value;
  std::string rebuilt;
  for (std::size_t i = 0; i < fields.size(); ++i)
    rebuilt += (i ? "," : "") + fields[i];
  lines[static_cast<std::size_t>(line - 1)] = rebuilt;
  std::string out;
  for (const std::string& l : lines)
    out += l + "\n";
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("the header lists every column in order, then the extra metrics") {
  const std::string text = write_csv({}, {"dram__bytes_read.sum", "smsp__inst_executed.sum"});
  std::string expected;
  for (const std::string& column : result_columns())
    expected += (expected.empty() ? "" : ",") + column;
  expected += ",metric:dram__bytes_read.sum,metric:smsp__inst_executed.sum\n";
  CHECK(text == expected);
  CHECK(result_columns().front() == "step");
}

TEST_CASE("rows survive a write/read round trip, optional and quoted fields included") {
  const std::vector<ResultRow> rows = {measured_kernel_row(), reference_row(), faulted_row()};
  const std::string text = write_csv(rows, {"dram__bytes_read.sum"});
  // The short form holds commas, so it is quoted; the fault text holds quotes and a newline.
  CHECK(contains(text,
                 "\"(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax\""));
  CHECK(contains(text, "\"\"cudaErrorIllegalAddress\"\""));
  std::istringstream in(text);
  const std::vector<ResultRow> back = read_results_csv(in, "round-trip.csv");
  REQUIRE(back.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    check_equal(back[i], rows[i]);
  }
  CHECK(back[1].is_baseline_or_ceiling());
  CHECK(back[0].step_number() == 7);
  CHECK_FALSE(back[1].step_number().has_value());
  CHECK(back[1].extra_metrics.empty());  // an empty metric field reads as absent
}

TEST_CASE("an e4m3 row (the FP8 track) is written as e4m3 and read back, with its errors") {
  // A baseline row of the FP8 problem (cuDNN's FP8 attention, docs/spec/fp8-track.md §3) with
  // the error columns beside its verdict (§2): max and RMS of |O - R_ref|.
  ResultRow row = reference_row();
  row.subject = RowSubject::baseline(Baseline::cudnn);
  row.fa2_entry_point.clear();
  row.problem.dtype = DType::E4M3;
  row.reference_variant = "fp8_composite_per_tensor";
  row.max_error_fp64 = 0.01171875;
  row.rms_error_fp64 = 0.0012345678;
  row.reference_version = "cuDNN 9.19.0";
  const std::string text = write_csv({row}, {});
  CHECK(contains(text, ",e4m3,"));
  CHECK(contains(text, ",fp8_composite_per_tensor,0.01171875,0.001234568,cuDNN 9.19.0\n"));
  std::istringstream in(text);
  const std::vector<ResultRow> back = read_results_csv(in, "fp8.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].problem.dtype == DType::E4M3);
  CHECK(back[0].max_error_fp64 == 0.01171875);
  CHECK(back[0].rms_error_fp64 == doctest::Approx(0.001234568).epsilon(1e-9));
  // Written at 7 digits: the read value is what is written again.
  row.rms_error_fp64 = back[0].rms_error_fp64;
  check_equal(back[0], row);
  CHECK(write_csv(back, {}) == text);
}

TEST_CASE("only a reference row names its library's version") {
  ResultRow reference = reference_row();
  reference.reference_version = "PyTorch 2.11.0";
  const std::string text = write_csv({reference}, {});
  CHECK(text.ends_with(",PyTorch 2.11.0\n"));
  std::istringstream in(text);
  CHECK(read_results_csv(in, "ref.csv").at(0).reference_version == "PyTorch 2.11.0");

  ResultRow kernel = measured_kernel_row();
  kernel.reference_version = "cuDNN 9.19.0";
  const std::string message = error_of(write_csv({kernel}, {}));
  CHECK(contains(message,
                 "'cuDNN 9.19.0': only a reference row (fa2, cudnn) names a library "
                 "version"));
}

TEST_CASE("a 16-bit row leaves the FP8 error columns empty") {
  const std::string text = write_csv({measured_kernel_row()}, {});
  // max_error_fp64 and rms_error_fp64, then reference_version (a kernel row has none): the last
  // three columns.
  CHECK(text.ends_with(",,,\n"));
  std::istringstream in(text);
  const std::vector<ResultRow> back = read_results_csv(in, "bf16.csv");
  REQUIRE(back.size() == 1);
  CHECK_FALSE(back[0].max_error_fp64.has_value());
  CHECK_FALSE(back[0].rms_error_fp64.has_value());
}

TEST_CASE("rows that were not measured leave the measurement columns empty") {
  const std::string text = write_csv({faulted_row()}, {});
  const std::string row_line = text.substr(text.find('\n') + 1);
  // step..seq_len, then runs, median, min, max, tflops, seed tflops all empty.
  CHECK(contains(row_line, ",8192,,,,,,,"));
}

TEST_CASE("the incremental parser gives the same rows however the text is cut") {
  const std::vector<ResultRow> rows = {measured_kernel_row(), faulted_row(), reference_row()};
  const std::string text = write_csv(rows, {"dram__bytes_read.sum"});
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{64}, text.size()}) {
    CAPTURE(chunk);
    ResultsCsvParser parser("pipe");
    std::vector<ResultRow> back;
    for (std::size_t at = 0; at < text.size(); at += chunk)
      for (ResultRow& row : parser.feed(std::string_view(text).substr(at, chunk)))
        back.push_back(std::move(row));
    for (ResultRow& row : parser.finish())
      back.push_back(std::move(row));
    REQUIRE(back.size() == rows.size());
    check_equal(back[1], rows[1]);
    CHECK(parser.extra_metric_names() == std::vector<std::string>{"dram__bytes_read.sum"});
  }
}

TEST_CASE("CRLF line ends are read") {
  std::string text = write_csv({measured_kernel_row(), reference_row()}, {});
  std::string crlf;
  for (const char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  std::istringstream in(crlf);
  const std::vector<ResultRow> back = read_results_csv(in, "crlf.csv");
  REQUIRE(back.size() == 2);
  check_equal(back[1], reference_row());
}

TEST_CASE("a file cut anywhere inside its last record is refused with the file and line") {
  // Issue 22: a file cut inside its last field (input_seed 4622506166399442052 cut to 46225061)
  // read as a plausible row. The writer ends every record with a line end; text that stops
  // without one was cut short, whichever field the cut is in.
  ResultRow last = reference_row();
  last.extra_metrics["dram__bytes_read.sum"] = 123456789;
  const std::string text =
      write_csv({measured_kernel_row(), faulted_row(), last}, {"dram__bytes_read.sum"});
  const std::size_t last_start = text.rfind('\n', text.size() - 2) + 1;
  // The faulted row's status holds a line break inside quotes: the last record is on line 5.
  const long last_line = 5;
  for (std::size_t cut = last_start + 1; cut < text.size(); ++cut) {
    CAPTURE(cut);
    const std::string error = error_of(text.substr(0, cut), "cut.csv");
    // "the file ends inside this record", or "... inside a quoted field" within the config.
    CHECK(contains(error, "cut.csv:" + std::to_string(last_line) + ": the file ends inside"));
  }
  // With CRLF line ends, a cut between the CR and the LF too.
  std::string crlf = text;
  crlf.insert(crlf.size() - 1, "\r");
  CHECK(contains(error_of(crlf.substr(0, crlf.size() - 1), "cut.csv"), "ends inside this record"));
  CHECK(error_of(crlf) == "(no error)");
  // A cut inside the header, and inside a quoted field (the config) of a row.
  CHECK(contains(error_of(text.substr(0, 20), "cut.csv"), "cut.csv:1: the file ends inside"));
  const std::size_t config = text.find("\"(FP16", text.find('\n'));
  CHECK(contains(error_of(text.substr(0, config + 8), "cut.csv"),
                 "cut.csv:2: the file ends inside a quoted field"));
  // Cut right after a line end, the file is whole (fewer rows): nothing is cut short.
  std::istringstream whole(text.substr(0, last_start));
  CHECK(read_results_csv(whole, "whole.csv").size() == 2);
  // The incremental parser (a worker's pipe) says the same at finish().
  ResultsCsvParser parser("pipe");
  CHECK(parser.feed(std::string_view(text).substr(0, text.size() - 3)).size() == 2);
  CHECK_THROWS_WITH_AS(parser.finish(), doctest::Contains("pipe:5: the file ends inside"),
                       ResultsFormatError);
}

TEST_CASE("a UTF-8 byte-order mark at the start is skipped, in any chunking; elsewhere it is not") {
  // Spreadsheet programs save "CSV UTF-8" with a BOM; it used to make the header's first column
  // "unknown column '\xef\xbb\xbfstep'".
  const std::string valid = write_csv({measured_kernel_row(), reference_row()}, {});
  const std::string bom = "\xEF\xBB\xBF";
  std::istringstream whole(bom + valid);
  CHECK(read_results_csv(whole, "bom.csv").size() == 2);
  for (std::size_t cut = 0; cut <= 5; ++cut) {  // the mark split over the pipe's chunks
    ResultsCsvParser parser("pipe");
    const std::string text = bom + valid;
    std::size_t rows = 0;
    rows += parser.feed(std::string_view(text).substr(0, cut)).size();
    rows += parser.feed(std::string_view(text).substr(cut, 1)).size();
    rows += parser.feed(std::string_view(text).substr(cut + 1)).size();
    rows += parser.finish().size();
    CHECK_MESSAGE(rows == 2, "cut at " << cut);
  }
  // Only at the start: a second mark is read as text.
  CHECK(
      contains(error_of(bom + bom + valid), "results.csv:1: unknown column '\\xef\\xbb\\xbfstep'"));
  // A part of a mark alone is a one-column header, named byte by byte.
  CHECK(contains(error_of("\xEF"), "results.csv:1: the file ends inside"));
  CHECK(error_of(bom) == "results.csv: empty file (no header line)");
}

TEST_CASE("a corrupt file is reported with its name, the line and the problem") {
  const std::string valid = write_csv({measured_kernel_row()}, {});

  CHECK(error_of("") == "results.csv: empty file (no header line)");
  CHECK(error_of("step,config\n") == "results.csv:1: the header lacks column 'dtype'");
  CHECK(contains(error_of("step,nonsense\n"),
                 "results.csv:1: unknown column 'nonsense' (not a flashscope results header"));
  CHECK(contains(error_of("step,step\n"), "results.csv:1: column 'step' appears twice"));
  CHECK(contains(error_of(with_field(3, "median_ms", "fast")),
                 "results.csv:3: column 'median_ms': 'fast' is not a number"));
  CHECK(contains(
      error_of(with_field(2, "batch", "16.5")),
      "results.csv:2: column 'batch': '16.5' is not a whole number written in decimal digits"));
  CHECK(contains(error_of(with_field(2, "verdict", "maybe")),
                 "results.csv:2: column 'verdict': 'maybe' is not pass, fail or unchecked"));
  CHECK(contains(error_of(with_field(3, "dtype", "fp32")),
                 "results.csv:3: column 'dtype': 'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)"));
  // The FP8 short name reads as e4m3 on the command line; a file spells the value one way only.
  CHECK(contains(error_of(with_field(3, "dtype", "fp8")),
                 "results.csv:3: column 'dtype': 'fp8' is not written as 'e4m3'"));
  CHECK(contains(error_of(with_field(2, "status", "broken")), "results.csv:2: column 'status'"));
  CHECK(contains(error_of(with_field(2, "median_ms", "9")),
                 "results.csv:2: column 'median_ms': median 9 ms lies outside [min"));
  CHECK(contains(error_of(with_field(2, "config", "\"(FP16, 128): async\"")),
                 "results.csv:2: column 'config': "));
  CHECK(contains(error_of(with_field(2, "config", "")),
                 "results.csv:2: column 'config': is empty on a kernel row (step 7)"));
  CHECK(contains(error_of(with_field(2, "median_ms", "")),
                 "results.csv:2: column 'median_ms': is empty but the row's status is ok"));
  CHECK(contains(error_of(with_field(2, "input_seed", "-3")),
                 "results.csv:2: column 'input_seed': '-3' is not an unsigned integer"));
  CHECK(contains(error_of(with_field(2, "device_index", "-1")),
                 "results.csv:2: column 'device_index': '-1' is not a device index (0 or more)"));
  CHECK(contains(error_of(with_field(3, "device_index", "first")),
                 "results.csv:3: column 'device_index': 'first' is not an integer"));
  CHECK(contains(error_of(with_field(2, "git_dirty", "maybe")),
                 "results.csv:2: column 'git_dirty': 'maybe' is not true, false or empty"));
  CHECK(contains(error_of(with_field(2, "reference_pass", "1")),
                 "results.csv:2: column 'reference_pass': '1' must be empty on kernel rows"));
  CHECK(contains(error_of(with_field(2, "locked_sm_clock_mhz", "0")),
                 "results.csv:2: column 'locked_sm_clock_mhz': '0' is not a positive clock"));

  // Field count, quotes.
  CHECK(contains(error_of(valid + "7,x\n"),
                 "results.csv:3: the record has 2 fields but the header has"));
  CHECK(contains(error_of(valid + "7,\"unterminated\n\n"),
                 "results.csv:3: the file ends inside a quoted field that opened on this line"));
  CHECK(contains(error_of(valid + "7,\"a\"b\n"),
                 "results.csv:3: unexpected character 'b' after the closing quote of field 2"));
  CHECK(
      contains(error_of(valid + "7,a\"b\n"), "results.csv:3: a quote inside the unquoted field 2"));

  // An extra metric that is not a number.
  std::string metrics = write_csv({measured_kernel_row()}, {"dram__bytes_read.sum"});
  metrics.replace(metrics.rfind("1500000000"), 10, "lots");
  CHECK(contains(error_of(metrics),
                 "results.csv:2: column 'metric:dram__bytes_read.sum': 'lots' is not a number"));
}

TEST_CASE("files written before the device index and UUID columns existed are read") {
  const std::vector<std::string>& optional = optional_result_columns();
  CHECK(std::find(optional.begin(), optional.end(), "device_index") != optional.end());
  CHECK(std::find(optional.begin(), optional.end(), "device_uuid") != optional.end());
  // The header and rows of such a file: every column but the two, in the old order.
  const std::string text = write_csv({measured_kernel_row(), reference_row()}, {});
  std::vector<std::string> columns = result_columns();
  std::string old_text;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) {
        fields.push_back(field);
        field.clear();
      } else {
        field += c;
      }
    }
    fields.push_back(field);
    std::string kept;
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (columns[i] != "device_index" && columns[i] != "device_uuid")
        kept += (kept.empty() ? "" : ",") + fields[i];
    old_text += kept + "\n";
  }
  CHECK_FALSE(contains(old_text, "device_index"));
  ResultsCsvParser parser("old.csv");
  std::vector<ResultRow> back = parser.feed(old_text);
  for (ResultRow& row : parser.finish())
    back.push_back(std::move(row));
  REQUIRE(back.size() == 2);
  CHECK_FALSE(back[0].device_index.has_value());
  CHECK(back[0].device_uuid.empty());
  CHECK(back[0].device == "NVIDIA H100 80GB HBM3");
  CHECK(back[0].median_ms == doctest::Approx(measured_kernel_row().median_ms));
  CHECK(parser.columns().size() == result_columns().size() - 2);
  // Any other column is still required.
  std::string no_seed = old_text;
  no_seed.replace(no_seed.find(",input_seed"), 11, "");
  CHECK(contains(error_of(no_seed, "old.csv"), "old.csv:1: the header lacks column 'input_seed'"));
}

TEST_CASE("read_results_file names a file it cannot open and reads one it can") {
  const auto directory = std::filesystem::temp_directory_path() / "flashscope_test_results";
  std::filesystem::create_directories(directory);
  const std::string missing = (directory / "missing.csv").string();
  std::filesystem::remove(missing);
  try {
    read_results_file(missing);
    FAIL("no error for a missing file");
  } catch (const ResultsFormatError& error) {
    CHECK(std::string(error.what()) == missing + ": cannot open the file for reading");
  }
  const std::string path = (directory / "ok.csv").string();
  {
    std::ofstream out(path, std::ios::binary);
    ResultsCsvWriter writer(out);
    writer.write(reference_row());
  }
  const std::vector<ResultRow> rows = read_results_file(path);
  REQUIRE(rows.size() == 1);
  check_equal(rows[0], reference_row());
}

// `explorer peak` rows: the step column names the ceiling, memory ceilings have no dtype and carry
// their bandwidth in gbytes_per_s.
ResultRow ceiling_row(const std::string& step, const std::string& dtype) {
  ResultRow row;
  row.subject = *RowSubject::from_text(step);
  row.subject.set_element_type(dtype_from_string(dtype));
  row.problem = Problem{.batch = 0, .seq_len = 0, .heads = 0, .heads_kv = 0, .d_head = 0};
  if (const auto element = dtype_from_string(dtype)) row.problem.dtype = *element;
  row.runs = 20;
  row.median_ms = 4.5;
  row.min_ms = 4.25;
  row.max_ms = 4.75;
  row.tflops = dtype.empty() ? 0 : 512.25;
  row.seed_attn_tflops = row.tflops;
  if (dtype.empty()) row.gbytes_per_s = 4321.5;
  row.verdict = Verdict::pass;
  row.device = "NVIDIA H200";
  row.sm_clock_mhz = 1755;
  row.cache_mode = "warm";
  row.git_commit = "abc";
  return row;
}

TEST_CASE("ceiling rows: peak:<benchmark> steps, no config, no dtype for memory ceilings") {
  const std::vector<ResultRow> rows = {ceiling_row("peak:mma.sync", "bf16"),
                                       ceiling_row("peak:hbm.copy", "")};
  std::istringstream in(write_csv(rows, {}));
  const std::vector<ResultRow> read = read_results_csv(in, "peak.csv");
  REQUIRE(read.size() == 2);
  check_equal(read[0], rows[0]);
  check_equal(read[1], rows[1]);
  CHECK(read[0].is_ceiling());
  CHECK(read[0].is_baseline_or_ceiling());
  CHECK_FALSE(read[0].step_number());
  CHECK(*read[1].gbytes_per_s == 4321.5);

  std::string with_config = write_csv({ceiling_row("peak:mma.sync", "fp16")}, {});
  with_config.replace(with_config.find("peak:mma.sync,,"), 15,
                      "peak:mma.sync,\"(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles\",");
  CHECK(contains(error_of(with_config),
                 "results.csv:2: column 'config': has a value on a ceiling row (peak:mma.sync)"));
  // Only ceilings may leave the dtype empty.
  std::string typeless_kernel = write_csv({reference_row()}, {});
  typeless_kernel.replace(typeless_kernel.find("fa2,,bf16"), 9, "fa2,,");
  CHECK(
      contains(error_of(typeless_kernel), "results.csv:2: column 'dtype': is empty but required"));
}

namespace {

// `text` without the named columns: what a file written before they existed looks like.
std::string without_columns(const std::string& text, const std::vector<std::string>& dropped) {
  std::istringstream in(text);
  std::string out;
  std::vector<bool> keep;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) {
        fields.push_back(field);
        field.clear();
      } else {
        field += c;
      }
    }
    fields.push_back(field);
    if (keep.empty())
      for (const std::string& name : fields)
        keep.push_back(std::find(dropped.begin(), dropped.end(), name) == dropped.end());
    std::string rebuilt;
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (keep[i]) rebuilt += (rebuilt.empty() ? "" : ",") + fields[i];
    out += rebuilt + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("a file without the provenance and clock columns still reads, warnings derived") {
  // The shipped results/h200 files predate these columns.
  CHECK(optional_result_columns() == std::vector<std::string>{"device_index",
                                                              "device_uuid",
                                                              "git_dirty",
                                                              "host",
                                                              "run_id",
                                                              "fa2_entry_point",
                                                              "locked_sm_clock_mhz",
                                                              "reference_pass",
                                                              "pct_fa2_cycles",
                                                              "pct_cudnn_cycles",
                                                              "warnings",
                                                              "gbytes_per_s",
                                                              "causal",
                                                              "heads_kv",
                                                              "pass",
                                                              "rounds",
                                                              "ci_low_ms",
                                                              "ci_high_ms",
                                                              "pct_fa2_low",
                                                              "pct_fa2_high",
                                                              "pct_cudnn_low",
                                                              "pct_cudnn_high",
                                                              "launch_pattern",
                                                              "stop_reason",
                                                              "sm_clock_min_mhz",
                                                              "sm_clock_max_mhz",
                                                              "power_mean_w",
                                                              "power_max_w",
                                                              "power_limit_w",
                                                              "temperature_max_c",
                                                              "clock_reasons",
                                                              "reference_variant",
                                                              "max_error_fp64",
                                                              "rms_error_fp64",
                                                              "reference_version"});
  ResultRow suspicious = measured_kernel_row();
  suspicious.l2_hit_pct = 101.024;
  suspicious.max_error_fp64 = 0.5;  // dropped with its column below
  const std::string old_text =
      without_columns(write_csv({suspicious, reference_row()}, {}), optional_result_columns());
  CHECK_FALSE(contains(old_text, "git_dirty"));
  std::istringstream in(old_text);
  const std::vector<ResultRow> rows = read_results_csv(in, "old.csv");
  REQUIRE(rows.size() == 2);
  CHECK_FALSE(rows[0].git_dirty.has_value());
  CHECK(rows[0].host.empty());
  CHECK_FALSE(rows[0].pct_fa2_cycles.has_value());
  CHECK_FALSE(rows[1].reference_pass.has_value());
  CHECK_FALSE(rows[0].max_error_fp64.has_value());
  CHECK(rows[0].l2_hit_pct == doctest::Approx(101.024));
  CHECK(contains(rows[0].warnings, "l2_hit_pct 101.024 is outside 0-100"));
  CHECK(rows[1].warnings.empty());

  // A required column is still required.
  const std::string no_device = without_columns(write_csv({reference_row()}, {}), {"device"});
  CHECK(error_of(no_device) == "results.csv:1: the header lacks column 'device'");
}

TEST_CASE("sanity warnings name the column, the value and the rule") {
  ResultRow row = measured_kernel_row();
  row.sm_clock_mhz = 1980;
  row.locked_sm_clock_mhz = 1980;
  CHECK(sanity_warnings(row).empty());
  row.l2_hit_pct = 100.0;
  CHECK(sanity_warnings(row).empty());  // the edge of the range is fine
  row.l2_hit_pct = 100.5;
  row.extra_metrics["smsp__warps_issue_stalled_short_scoreboard.pct"] = -1;
  row.extra_metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 103;
  row.extra_metrics["dram__bytes_read.sum"] = 5e12;  // not a ratio: any size is fine
  row.cycles = 0;
  row.cupti_duration_ms = -1;
  row.sm_clock_mhz = 1800;  // 9 % below the lock
  const std::vector<std::string> warnings = sanity_warnings(row);
  REQUIRE(warnings.size() == 6);
  CHECK(contains(warnings[0], "l2_hit_pct 100.5 is outside 0-100"));
  CHECK(contains(join_warnings(warnings),
                 "metric:smsp__warps_issue_stalled_short_scoreboard.pct -1 is outside 0-100"));
  CHECK(contains(join_warnings(warnings),
                 "metric:sm__throughput.avg.pct_of_peak_sustained_elapsed 103 is outside 0-100"));
  CHECK(contains(join_warnings(warnings), "cycles 0 is not positive"));
  CHECK(contains(join_warnings(warnings), "cupti_duration_ms -1 is not positive"));
  CHECK(contains(join_warnings(warnings), "sm_clock_mhz 1800 is 9 % below the locked 1980 MHz"));
  CHECK(join_warnings({"a", "b"}) == "a; b");
}

TEST_CASE("files written before gbytes_per_s existed still read") {
  const std::string text = write_csv({measured_kernel_row(), reference_row()}, {});
  const std::string old_format = without_columns(text, {"gbytes_per_s"});
  REQUIRE_FALSE(contains(old_format, "gbytes_per_s"));
  std::istringstream in(old_format);
  const std::vector<ResultRow> read = read_results_csv(in, "old.csv");
  REQUIRE(read.size() == 2);
  ResultRow expected = measured_kernel_row();
  expected.extra_metrics.clear();  // written without metric columns
  check_equal(read[0], expected);
  CHECK_FALSE(read[1].gbytes_per_s);
}

// Fuzz finding (docs/hardening.md): 21474836488.26 was written as "2.147484e+10", which reads as
// the integer 21474840000 and was then written as "21474840000": a file read and written again
// changed its text a second time.
TEST_CASE("fuzz finding: a number that is an integer at 7 digits is written as that integer") {
  ResultRow row = measured_kernel_row();
  row.max_ms = 21474836488.262368;
  row.extra_metrics = {{"dram__bytes_read.sum", 1500000000.5}};
  const std::string written = write_csv({row}, {"dram__bytes_read.sum"});
  CHECK(contains(written, ",21474840000,"));
  CHECK(contains(written, ",1500000000\n"));
  std::istringstream in(written);
  const std::vector<ResultRow> back = read_results_csv(in, "rewrite.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].max_ms == 21474840000.0);
  CHECK(write_csv(back, {"dram__bytes_read.sum"}) == written);
  // Numbers that keep a fraction at 7 digits are unchanged: 7 significant digits.
  ResultRow small = measured_kernel_row();
  small.median_ms = 2.3456789;
  CHECK(contains(write_csv({small}, {}), ",2.345679,"));
}
