// Fuzz target: the results CSV reader (profiling/results/results.hpp) on arbitrary bytes, as
// `--results`, the GUI's Open box, `explorer report` and a sweep worker's pipe hand them over.
//
// Properties, for every input:
//  * reading gives rows or a ResultsFormatError (no other exception, no crash or hang), and the
//    error names the source;
//  * the incremental parser gives the same outcome however the bytes are cut into chunks (the
//    first byte picks the chunk size), and the same as read_results_csv on a stream;
//  * what was read, written back with ResultsCsvWriter, reads again and writes the same text:
//    writing is a fixed point of reading (numbers are rounded to 7 digits once, then stable);
//  * under smaller limits (the second byte picks them) the reader either gives the same rows or
//    stops with an error that names the limit;
//  * text that does not end with a line end (only '\r' may follow the last '\n') is refused:
//    its last record was cut short, in whichever field (issue 22), and so is every prefix of an
//    accepted text that ends inside its last record.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "profiling/results/results.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using flashscope::ResultRow;
using flashscope::ResultsCsvParser;
using flashscope::ResultsFormatError;
using flashscope::ResultsLimits;
using flashscope::fuzz::printable;

namespace {

constexpr const char* kSource = "fuzz.csv";

// Rows, or the error that stopped reading; `metrics` are the file's extra metric columns.
struct Outcome {
  std::vector<ResultRow> rows;
  std::vector<std::string> metrics;
  std::string error;  // empty: read
};

std::string write_rows(const std::vector<ResultRow>& rows,
                       const std::vector<std::string>& metrics) {
  std::ostringstream out;
  flashscope::ResultsCsvWriter writer(out, metrics);
  for (const ResultRow& row : rows)
    writer.write(row);
  return out.str();
}

// Feeds `text` in pieces of `chunk` bytes.
Outcome parse_in_chunks(std::string_view text, std::size_t chunk, const ResultsLimits& limits) {
  Outcome outcome;
  ResultsCsvParser parser(kSource, limits);
  try {
    for (std::size_t at = 0; at < text.size(); at += chunk)
      for (ResultRow& row : parser.feed(text.substr(at, chunk)))
        outcome.rows.push_back(std::move(row));
    for (ResultRow& row : parser.finish())
      outcome.rows.push_back(std::move(row));
  } catch (const ResultsFormatError& error) {
    outcome.error = error.what();
    FUZZ_CHECK(outcome.error.starts_with(kSource),
               "an error that does not name the source: " + printable(outcome.error));
  }
  outcome.metrics = parser.extra_metric_names();
  return outcome;
}

Outcome read_stream(std::string_view text) {
  Outcome outcome;
  std::istringstream in{std::string(text)};
  try {
    outcome.rows = flashscope::read_results_csv(in, kSource);
  } catch (const ResultsFormatError& error) {
    outcome.error = error.what();
  }
  return outcome;
}

std::string describe(const Outcome& outcome) {
  if (!outcome.error.empty()) return "error: " + printable(outcome.error);
  return std::to_string(outcome.rows.size()) + " rows:\n" +
         printable(write_rows(outcome.rows, outcome.metrics), 2000);
}

bool same(const Outcome& a, const Outcome& b) {
  if (a.error != b.error) return false;
  if (!a.error.empty()) return true;
  return write_rows(a.rows, a.metrics) == write_rows(b.rows, a.metrics);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ResultsLimits defaults;

  const Outcome whole = parse_in_chunks(text, text.size() + 1, defaults);
  const std::size_t chunk = size > 0 ? 1 + data[0] % 61 : 1;
  const Outcome chunked = parse_in_chunks(text, chunk, defaults);
  FUZZ_CHECK(same(whole, chunked), "fed whole: " + describe(whole) + "\nfed in chunks of " +
                                       std::to_string(chunk) + ": " + describe(chunked) +
                                       "\ninput: " + printable(text));
  const Outcome streamed = read_stream(text);
  FUZZ_CHECK(same(whole, streamed), "parser: " + describe(whole) + "\nread_results_csv: " +
                                        describe(streamed) + "\ninput: " + printable(text));

  if (whole.error.empty()) {
    const std::size_t last_line_end = text.rfind('\n');
    FUZZ_CHECK(last_line_end != std::string_view::npos &&
                   text.find_first_not_of('\r', last_line_end + 1) == std::string_view::npos,
               "a text whose last record has no line end was accepted: " + printable(text));
    // Cut inside the last record (any byte of it, line end excluded): refused, naming its line.
    const std::size_t record_start = text.rfind('\n', last_line_end - (last_line_end > 0));
    const std::size_t cut_from = record_start == std::string_view::npos ? 1 : record_start + 2;
    if (cut_from < last_line_end) {
      const std::size_t cut = cut_from + (size > 2 ? data[2] : 0) % (last_line_end - cut_from);
      const Outcome truncated = parse_in_chunks(text.substr(0, cut), chunk, defaults);
      FUZZ_CHECK(!truncated.error.empty(), "the input cut at byte " + std::to_string(cut) +
                                               " inside its last record reads as " +
                                               describe(truncated) + "\ninput: " + printable(text));
    }
    const std::string written = write_rows(whole.rows, whole.metrics);
    const Outcome again = parse_in_chunks(written, written.size() + 1, defaults);
    FUZZ_CHECK(again.error.empty(), "rows read from \"" + printable(text) +
                                        "\" were written as \"" + printable(written) +
                                        "\", which does not read: " + again.error);
    const std::string rewritten = write_rows(again.rows, again.metrics);
    if (rewritten != written) {
      std::size_t at = 0;
      while (at < written.size() && at < rewritten.size() && written[at] == rewritten[at])
        ++at;
      const std::size_t from = at > 120 ? at - 120 : 0;
      flashscope::fuzz::property_failed(
          "rows written, read and written again give the same text",
          "first difference at byte " + std::to_string(at) + ":\nwritten:   ..." +
              printable(std::string_view(written).substr(from), 240) + "\nrewritten: ..." +
              printable(std::string_view(rewritten).substr(from), 240) +
              "\ninput: " + printable(text));
    }
  }

  // Small limits: the same rows, or an error that says which limit was reached.
  if (size > 1) {
    ResultsLimits small;
    small.max_record_bytes = 16 + data[1] % 512;
    small.max_rows = data[1] % 8;
    small.max_file_bytes = small.max_record_bytes * 4;
    small.max_metric_columns = data[1] % 3;
    const Outcome limited = parse_in_chunks(text, chunk, small);
    if (limited.error.empty()) {
      FUZZ_CHECK(same(whole, limited), "under small limits: " + describe(limited) +
                                           "\nunder the defaults: " + describe(whole));
    } else if (limited.error != whole.error) {
      FUZZ_CHECK(limited.error.find("limit") != std::string::npos,
                 "under small limits an error that names no limit: " + printable(limited.error) +
                     "\nunder the defaults: " + describe(whole));
    }
  }
  return 0;
}
