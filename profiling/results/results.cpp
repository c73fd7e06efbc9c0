// The results CSV (docs/csv-schema.md): RFC 4180 quoting, one header, one record per ResultRow.
// Reading is strict: every problem is reported with the file, the line the record starts on and
// the column, because a silently misread number would end up in a plot.
#include "profiling/results/results.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>

#include "kernels/common/config.hpp"

namespace flashscope {

namespace {

constexpr std::string_view kMetricPrefix = "metric:";

// Column order of the file; docs/csv-schema.md describes each one.
enum Column : int {
  kStep,
  kConfig,
  kDtype,
  kDHead,
  kBatch,
  kHeads,
  kSeqLen,
  kRuns,
  kMedianMs,
  kMinMs,
  kMaxMs,
  kTflops,
  kSeedAttnTflops,
  kPctFa2,
  kPctCudnn,
  kRegisters,
  kSmemBytes,
  kLocalBytes,
  kCycles,
  kL2HitPct,
  kCuptiDurationMs,
  kVerdict,
  kMaxError,
  kStatus,
  kDevice,
  kDeviceIndex,
  kDeviceUuid,
  kSmClockMhz,
  kCacheMode,
  kGitCommit,
  // The provenance / clock block: optional on reading (older files lack it).
  kGitDirty,
  kHost,
  kRunId,
  kFa2EntryPoint,
  kLockedSmClockMhz,
  kReferencePass,
  kPctFa2Cycles,
  kPctCudnnCycles,
  kWarnings,
  kInputSeed,
  kGbytesPerS,
  kCausal,
  kColumnCount
};

// Columns older files lack: the device block (index, UUID) and the provenance / clock block.
constexpr bool is_optional_column(int column) {
  return column == kDeviceIndex || column == kDeviceUuid ||
         (column >= kGitDirty && column <= kWarnings) || column == kGbytesPerS || column == kCausal;
}

const std::array<std::string, kColumnCount> kColumnNames = {"step",
                                                            "config",
                                                            "dtype",
                                                            "d_head",
                                                            "batch",
                                                            "heads",
                                                            "seq_len",
                                                            "runs",
                                                            "median_ms",
                                                            "min_ms",
                                                            "max_ms",
                                                            "tflops",
                                                            "seed_attn_tflops",
                                                            "pct_fa2",
                                                            "pct_cudnn",
                                                            "registers",
                                                            "smem_bytes",
                                                            "local_bytes",
                                                            "cycles",
                                                            "l2_hit_pct",
                                                            "cupti_duration_ms",
                                                            "verdict",
                                                            "max_error",
                                                            "status",
                                                            "device",
                                                            "device_index",
                                                            "device_uuid",
                                                            "sm_clock_mhz",
                                                            "cache_mode",
                                                            "git_commit",
                                                            "git_dirty",
                                                            "host",
                                                            "run_id",
                                                            "fa2_entry_point",
                                                            "locked_sm_clock_mhz",
                                                            "reference_pass",
                                                            "pct_fa2_cycles",
                                                            "pct_cudnn_cycles",
                                                            "warnings",
                                                            "input_seed",
                                                            "gbytes_per_s",
                                                            "causal"};

// ---- Writing ------------------------------------------------------------------------------

bool needs_quotes(std::string_view field) {
  if (field.empty()) return false;
  if (field.front() == ' ' || field.back() == ' ') return true;
  return field.find_first_of(",\"\r\n") != std::string_view::npos;
}

void write_field(std::ostream& out, std::string_view field) {
  if (!needs_quotes(field)) {
    out << field;
    return;
  }
  out << '"';
  for (const char c : field) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

// Integral values as integers (cycles, seeds); others with 7 significant digits, which keeps
// sub-nanosecond resolution for millisecond times and round-trips through the reader. A value
// that rounds to an integer at 7 digits (2.147484e+10) is written as that integer, the way the
// rounded value itself is written, so a file read and written again keeps its text.
std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  const auto as_integer = [](double integral) {
    std::array<char, 32> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                      static_cast<long long>(integral));
    return std::string(buffer.data(), result.ptr);
  };
  constexpr double kIntegerLimit = 1e15;  // integers below this print exactly as integers
  if (value == std::rint(value) && std::fabs(value) < kIntegerLimit) return as_integer(value);
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::general, 7);
  double rounded = 0;
  const bool parsed = std::from_chars(buffer.data(), result.ptr, rounded).ec == std::errc();
  if (parsed && rounded == std::rint(rounded) && std::fabs(rounded) < kIntegerLimit)
    return as_integer(rounded);
  return std::string(buffer.data(), result.ptr);
}

template <typename T>
std::string format_optional(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_integral_v<T>)
    return std::to_string(*value);
  else
    return format_number(*value);
}

// ---- Reading ------------------------------------------------------------------------------

// A value as an error message quotes it: printable, with other bytes as \xHH, and cut short so
// that a megabyte-long field does not become a megabyte-long message.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string out;
  for (const char c : text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  if (text.size() > kShown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// Messages that quote a long config parse error keep their start and their end (the problem).
std::string clip_message(std::string message) {
  constexpr std::size_t kKept = 300;
  if (message.size() <= 2 * kKept + 100) return message;
  const std::size_t dropped = message.size() - 2 * kKept;
  return message.substr(0, kKept) + " ... (" + std::to_string(dropped) + " bytes) ... " +
         message.substr(message.size() - kKept);
}

// "1 GiB (1073741824 bytes)", or "700 bytes" for sizes that are not a whole KiB, MiB or GiB.
std::string describe_bytes(std::uint64_t bytes) {
  const std::string exact = std::to_string(bytes) + " bytes";
  for (const auto& [unit, shift] :
       {std::pair{"GiB", 30}, std::pair{"MiB", 20}, std::pair{"KiB", 10}})
    if (bytes >= (std::uint64_t{1} << shift) && bytes % (std::uint64_t{1} << shift) == 0)
      return std::to_string(bytes >> shift) + " " + unit + " (" + exact + ")";
  return exact;
}

constexpr std::string_view kLimitsDoc = " (docs/csv-schema.md, Limits)";

// One CSV record and the physical line it started on.
struct Record {
  std::vector<std::string> fields;
  long line = 0;
};

// RFC 4180 record splitter that accepts text in arbitrary chunks.
class RecordSplitter {
 public:
  RecordSplitter(const std::string& source, std::size_t max_record_bytes)
      : source_(source), max_record_bytes_(max_record_bytes) {}

  template <typename Sink>
  void feed(std::string_view text, Sink&& sink) {
    for (const char c : text) {
      if (line_ == 0) line_ = 1;
      // Every byte of a record counts, line breaks inside quotes too; the one ending it does not.
      if (c != '\n' || state_ == State::in_quotes) {
        if (++record_bytes_ > max_record_bytes_)
          fail(in_record_ ? record_line_ : line_,
               "the record is longer than " + describe_bytes(max_record_bytes_) +
                   ", the limit for one line" + std::string(kLimitsDoc));
      }
      if (state_ == State::in_quotes) {
        if (c == '"')
          state_ = State::after_quote;
        else {
          if (c == '\n') ++line_;
          field_ += c;
        }
        continue;
      }
      if (state_ == State::after_quote) {
        if (c == '"') {  // an escaped quote inside a quoted field
          field_ += '"';
          state_ = State::in_quotes;
          continue;
        }
        if (c != ',' && c != '\n' && c != '\r')
          fail(record_line_, "unexpected character '" + excerpt(std::string_view(&c, 1)) +
                                 "' after the closing quote of field " +
                                 std::to_string(fields_.size() + 1));
        state_ = State::field_start;
      }
      switch (c) {
        case ',':
          end_field();
          break;
        case '\r':
          break;  // CRLF line ends
        case '\n':
          record_bytes_ = 0;
          end_record(sink);
          ++line_;
          break;
        case '"':
          if (state_ != State::field_start || !field_.empty())
            fail(record_line_, "a quote inside the unquoted field " +
                                   std::to_string(fields_.size() + 1) +
                                   " (fields with quotes must be quoted as a whole)");
          begin_record_if_needed();
          state_ = State::in_quotes;
          break;
        default:
          begin_record_if_needed();
          field_ += c;
          state_ = State::unquoted;
      }
    }
  }

  template <typename Sink>
  void finish(Sink&& sink) {
    if (state_ == State::in_quotes)
      fail(record_line_, "the file ends inside a quoted field that opened on this line");
    // The writer ends every record with a line end, so text that stops without one was cut
    // short: its last field may be a prefix of the value written (4096 cut to 40), which would
    // read as a plausible number.
    if (in_record_)
      fail(record_line_,
           "the file ends inside this record (its last field has no line end after it): the file "
           "was cut short, and the record is refused rather than read with a partial value");
    (void)sink;
  }

  [[noreturn]] void fail(long line, const std::string& problem) const {
    throw ResultsFormatError(
        clip_message(source_ + ":" + std::to_string(std::max(line, 1L)) + ": " + problem));
  }
  // The line the next byte is on (1 before any).
  long line() const { return std::max(line_, 1L); }

 private:
  enum class State { field_start, unquoted, in_quotes, after_quote };

  void begin_record_if_needed() {
    if (!in_record_) {
      in_record_ = true;
      record_line_ = line_;
    }
  }
  void end_field() {
    begin_record_if_needed();
    fields_.push_back(std::move(field_));
    field_.clear();
    state_ = State::field_start;
  }
  template <typename Sink>
  void end_record(Sink&& sink) {
    if (!in_record_) return;  // blank line
    end_field();
    Record record{std::move(fields_), record_line_};
    fields_.clear();
    in_record_ = false;
    sink(std::move(record));
  }

  const std::string& source_;
  std::size_t max_record_bytes_;
  std::size_t record_bytes_ = 0;  // bytes of the current record so far
  State state_ = State::field_start;
  std::string field_;
  std::vector<std::string> fields_;
  bool in_record_ = false;
  long line_ = 0;
  long record_line_ = 0;
};

}  // namespace

std::optional<int> ResultRow::step_number() const {
  int value = 0;
  const auto [end, error] = std::from_chars(step.data(), step.data() + step.size(), value);
  if (step.empty() || error != std::errc() || end != step.data() + step.size()) return std::nullopt;
  return value;
}

std::string run_key(const ResultRow& row) {
  if (!row.run_id.empty()) return "run\n" + row.run_id;
  // The device too: rows of one commit measured on two GPUs (or two hosts whose files predate the
  // host column) are two runs that no table may mix.
  return row.host + "\n" + row.device + "\n" + row.git_commit +
         (row.git_dirty.value_or(false) ? "+dirty" : "");
}

std::string run_label(const ResultRow& row) {
  // Builds stamp 12 hex digits; a run stamped with a full hash is shown the same way.
  const bool full_hash = row.git_commit.size() == 40 &&
                         row.git_commit.find_first_not_of("0123456789abcdef") == std::string::npos;
  const std::string commit = (row.git_commit.empty() ? std::string("no commit")
                              : full_hash            ? row.git_commit.substr(0, 12)
                                                     : row.git_commit) +
                             (row.git_dirty.value_or(false) ? "+dirty" : "");
  if (!row.run_id.empty()) return row.run_id + ", " + commit;
  return row.host.empty() ? commit : row.host + ", " + commit;
}

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> columns(kColumnNames.begin(), kColumnNames.end());
  return columns;
}

const std::vector<std::string>& optional_result_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names;
    for (int c = 0; c < kColumnCount; ++c)
      if (is_optional_column(c)) names.push_back(kColumnNames[static_cast<std::size_t>(c)]);
    return names;
  }();
  return columns;
}

std::vector<std::string> sanity_warnings(const ResultRow& row) {
  std::vector<std::string> warnings;
  const auto text = [](double value) { return format_number(value); };
  // lts__t_sector_hit_rate.pct needs two replay passes on GA100/GH100 (tests/profiling/
  // test_metric_names.cpp): with user replay its counters come from two different launches, so
  // the ratio can pass 100 % when the launches differ (docs/profiling.md, "Ratio metrics").
  if (row.l2_hit_pct && !(*row.l2_hit_pct >= 0 && *row.l2_hit_pct <= 100))
    warnings.push_back("l2_hit_pct " + text(*row.l2_hit_pct) +
                       " is outside 0-100: its counters need two replay passes, so its numerator "
                       "and denominator can come from two different launches");
  for (const auto& [name, value] : row.extra_metrics)
    if ((name.ends_with(".pct") || name.find(".pct_of_peak") != std::string::npos) &&
        !(value >= 0 && value <= 100))
      warnings.push_back("metric:" + name + " " + text(value) + " is outside 0-100");
  if (row.cycles && !(*row.cycles > 0))
    warnings.push_back("cycles " + text(*row.cycles) + " is not positive");
  if (row.cupti_duration_ms && !(*row.cupti_duration_ms > 0))
    warnings.push_back("cupti_duration_ms " + text(*row.cupti_duration_ms) + " is not positive");
  if (row.locked_sm_clock_mhz && row.sm_clock_mhz > 0) {
    const double off = (row.sm_clock_mhz - *row.locked_sm_clock_mhz) /
                       static_cast<double>(*row.locked_sm_clock_mhz);
    if (std::fabs(off) > 0.03)
      warnings.push_back("sm_clock_mhz " + std::to_string(row.sm_clock_mhz) + " is " +
                         std::to_string(static_cast<int>(std::lround(std::fabs(off) * 100))) +
                         " % " + (off < 0 ? "below" : "above") + " the locked " +
                         std::to_string(*row.locked_sm_clock_mhz) +
                         " MHz (power or thermal limit, or the lock did not hold)");
  }
  return warnings;
}

std::string join_warnings(const std::vector<std::string>& warnings) {
  std::string text;
  for (const std::string& warning : warnings)
    text += (text.empty() ? "" : "; ") + warning;
  return text;
}

ResultsCsvWriter::ResultsCsvWriter(std::ostream& out, std::vector<std::string> extra_metric_names)
    : out_(out), extra_metric_names_(std::move(extra_metric_names)) {
  bool first = true;
  for (const std::string& name : result_columns()) {
    if (!first) out_ << ',';
    first = false;
    write_field(out_, name);
  }
  for (const std::string& metric : extra_metric_names_) {
    out_ << ',';
    write_field(out_, std::string(kMetricPrefix) + metric);
  }
  out_ << '\n';
  out_.flush();
}

void ResultsCsvWriter::write(const ResultRow& row) {
  const bool measured = row.status == "ok";
  // Measurement columns are empty on rows that were skipped or faulted: a 0 there would be
  // indistinguishable from a real value in a spreadsheet.
  const auto measured_number = [measured](double value) {
    return measured ? format_number(value) : std::string();
  };
  std::array<std::string, kColumnCount> fields;
  fields[kStep] = row.step;
  fields[kConfig] = row.config;
  fields[kDtype] = row.dtype;
  fields[kDHead] = std::to_string(row.d_head);
  fields[kBatch] = std::to_string(row.batch);
  fields[kHeads] = std::to_string(row.heads);
  fields[kSeqLen] = std::to_string(row.seq_len);
  fields[kRuns] = measured ? std::to_string(row.runs) : "";
  fields[kMedianMs] = measured_number(row.median_ms);
  fields[kMinMs] = measured_number(row.min_ms);
  fields[kMaxMs] = measured_number(row.max_ms);
  fields[kTflops] = measured_number(row.tflops);
  fields[kSeedAttnTflops] = measured_number(row.seed_attn_tflops);
  fields[kPctFa2] = format_optional(row.pct_fa2);
  fields[kPctCudnn] = format_optional(row.pct_cudnn);
  fields[kRegisters] = format_optional(row.registers);
  fields[kSmemBytes] = format_optional(row.smem_bytes);
  fields[kLocalBytes] = format_optional(row.local_bytes);
  fields[kCycles] = format_optional(row.cycles);
  fields[kL2HitPct] = format_optional(row.l2_hit_pct);
  fields[kCuptiDurationMs] = format_optional(row.cupti_duration_ms);
  fields[kVerdict] = row.verdict;
  fields[kMaxError] = format_optional(row.max_error);
  fields[kStatus] = row.status;
  fields[kDevice] = row.device;
  fields[kDeviceIndex] = format_optional(row.device_index);
  fields[kDeviceUuid] = row.device_uuid;
  fields[kSmClockMhz] = row.sm_clock_mhz > 0 ? std::to_string(row.sm_clock_mhz) : "";
  fields[kCacheMode] = row.cache_mode;
  fields[kGitCommit] = row.git_commit;
  fields[kGitDirty] = row.git_dirty ? (*row.git_dirty ? "true" : "false") : "";
  fields[kHost] = row.host;
  fields[kRunId] = row.run_id;
  fields[kFa2EntryPoint] = row.fa2_entry_point;
  fields[kLockedSmClockMhz] = format_optional(row.locked_sm_clock_mhz);
  fields[kReferencePass] = format_optional(row.reference_pass);
  fields[kPctFa2Cycles] = format_optional(row.pct_fa2_cycles);
  fields[kPctCudnnCycles] = format_optional(row.pct_cudnn_cycles);
  fields[kWarnings] = row.warnings;
  fields[kInputSeed] = std::to_string(row.input_seed);
  fields[kGbytesPerS] = format_optional(row.gbytes_per_s);
  fields[kCausal] = row.causal ? "1" : "0";
  for (int i = 0; i < kColumnCount; ++i) {
    if (i > 0) out_ << ',';
    write_field(out_, fields[static_cast<std::size_t>(i)]);
  }
  for (const std::string& metric : extra_metric_names_) {
    out_ << ',';
    const auto found = row.extra_metrics.find(metric);
    if (found != row.extra_metrics.end()) write_field(out_, format_number(found->second));
  }
  out_ << '\n';
  out_.flush();
}

// ---- ResultsCsvParser ---------------------------------------------------------------------

struct ResultsCsvParser::State {
  State(std::string source, const ResultsLimits& limits_)
      : source_name(std::move(source)),
        limits(limits_),
        splitter(source_name, limits.max_record_bytes) {}

  std::string source_name;
  ResultsLimits limits;
  RecordSplitter splitter;
  std::uint64_t bytes_fed = 0;
  std::size_t rows_read = 0;
  bool have_header = false;
  std::array<int, kColumnCount> column_index{};             // field position of each known column
  std::vector<std::pair<int, std::string>> metric_columns;  // field position, metric name
  std::vector<std::string> extra_metric_names;
  std::vector<std::string> header;
  std::size_t field_count = 0;

  // The header, or one data row (counted against limits.max_rows) appended to `rows`.
  void take(const Record& record, std::vector<ResultRow>& rows);

  void read_header(const Record& record) {
    column_index.fill(-1);
    std::set<std::string> seen;
    for (std::size_t i = 0; i < record.fields.size(); ++i) {
      const std::string& name = record.fields[i];
      if (!seen.insert(name).second)
        splitter.fail(record.line, "column '" + excerpt(name) + "' appears twice in the header");
      if (name.starts_with(kMetricPrefix)) {
        const std::string metric = name.substr(kMetricPrefix.size());
        if (metric.empty()) splitter.fail(record.line, "column 'metric:' names no metric");
        metric_columns.emplace_back(static_cast<int>(i), metric);
        extra_metric_names.push_back(metric);
        continue;
      }
      const auto known = std::find(kColumnNames.begin(), kColumnNames.end(), name);
      if (known == kColumnNames.end())
        splitter.fail(record.line, "unknown column '" + excerpt(name) +
                                       "' (not a flashscope results header; see "
                                       "docs/csv-schema.md)");
      column_index[static_cast<std::size_t>(known - kColumnNames.begin())] = static_cast<int>(i);
    }
    if (metric_columns.size() > limits.max_metric_columns)
      splitter.fail(record.line, "the header has " + std::to_string(metric_columns.size()) +
                                     " metric columns, over the limit of " +
                                     std::to_string(limits.max_metric_columns) +
                                     std::string(kLimitsDoc));
    for (int c = 0; c < kColumnCount; ++c)
      if (column_index[static_cast<std::size_t>(c)] < 0 && !is_optional_column(c))
        splitter.fail(record.line, "the header lacks column '" +
                                       kColumnNames[static_cast<std::size_t>(c)] + "'");
    field_count = record.fields.size();
    header = record.fields;
    have_header = true;
  }

  ResultRow read_row(const Record& record) const {
    if (record.fields.size() != field_count)
      splitter.fail(record.line, "the record has " + std::to_string(record.fields.size()) +
                                     " fields but the header has " + std::to_string(field_count));
    static const std::string kAbsent;  // an optional column the header lacks
    const auto field = [&](Column c) -> const std::string& {
      const int index = column_index[static_cast<std::size_t>(c)];
      return index < 0 ? kAbsent : record.fields[static_cast<std::size_t>(index)];
    };
    const auto fail = [&](Column c, const std::string& problem) {
      splitter.fail(record.line,
                    "column '" + kColumnNames[static_cast<std::size_t>(c)] + "': " + problem);
    };
    const auto parse_double_text = [&](Column c, const std::string& text) {
      double value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size())
        fail(c, "'" + excerpt(text) + "' is not a number");
      return value;
    };
    const auto parse_long = [&](Column c) {
      const std::string& text = field(c);
      long long value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty()) fail(c, "is empty but required");
      if (error != std::errc() || end != text.data() + text.size())
        fail(c, "'" + excerpt(text) + "' is not an integer");
      return value;
    };
    const auto parse_int = [&](Column c) {
      const long long value = parse_long(c);
      if (value < INT32_MIN || value > INT32_MAX)
        fail(c, "'" + excerpt(field(c)) + "' is out of range");
      return static_cast<int>(value);
    };
    const auto optional_double = [&](Column c) -> std::optional<double> {
      if (field(c).empty()) return std::nullopt;
      return parse_double_text(c, field(c));
    };
    const auto optional_int = [&](Column c) -> std::optional<int> {
      if (field(c).empty()) return std::nullopt;
      return parse_int(c);
    };

    ResultRow row;
    row.step = field(kStep);
    if (row.step.empty()) fail(kStep, "is empty but required");
    row.config = field(kConfig);
    if (!row.config.empty()) {
      try {
        parse_short_form(row.config);
      } catch (const ConfigParseError& error) {
        fail(kConfig, error.what());
      }
    } else if (!row.is_baseline_or_ceiling()) {
      fail(kConfig, "is empty on a kernel row (step " + excerpt(row.step) + ")");
    }
    if (row.is_ceiling() && !row.config.empty())
      fail(kConfig,
           "has a value on a ceiling row (" + excerpt(row.step) + "), which has no config");
    row.dtype = field(kDtype);
    // Memory ceilings move bytes of no particular type.
    const bool typeless = row.is_ceiling() && row.dtype.empty();
    if (row.dtype != "fp16" && row.dtype != "bf16" && !typeless)
      fail(kDtype, "'" + excerpt(row.dtype) + "' is not fp16 or bf16" +
                       (row.is_ceiling() ? " (or empty on a memory ceiling)" : ""));
    row.d_head = parse_int(kDHead);
    row.batch = parse_int(kBatch);
    row.heads = parse_int(kHeads);
    row.seq_len = parse_int(kSeqLen);
    row.status = field(kStatus);
    if (row.status != "ok" && !row.status.starts_with("fault: ") &&
        !row.status.starts_with("skipped: "))
      fail(kStatus,
           "'" + excerpt(row.status) + "' is not ok, 'fault: <reason>' or 'skipped: <reason>'");
    const bool measured = row.status == "ok";
    // Measurement columns: required on measured rows, empty otherwise.
    const auto measurement = [&](Column c) {
      if (!measured) {
        if (!field(c).empty()) fail(c, "has a value on a row whose status is not ok");
        return 0.0;
      }
      if (field(c).empty()) fail(c, "is empty but the row's status is ok");
      return parse_double_text(c, field(c));
    };
    row.runs = measured ? parse_int(kRuns) : static_cast<int>(measurement(kRuns));
    row.median_ms = measurement(kMedianMs);
    row.min_ms = measurement(kMinMs);
    row.max_ms = measurement(kMaxMs);
    row.tflops = measurement(kTflops);
    row.seed_attn_tflops = measurement(kSeedAttnTflops);
    if (measured && !(row.min_ms <= row.median_ms && row.median_ms <= row.max_ms))
      fail(kMedianMs, "median " + excerpt(field(kMedianMs)) + " ms lies outside [min " +
                          excerpt(field(kMinMs)) + ", max " + excerpt(field(kMaxMs)) + "]");
    row.pct_fa2 = optional_double(kPctFa2);
    row.pct_cudnn = optional_double(kPctCudnn);
    row.registers = optional_int(kRegisters);
    row.smem_bytes = optional_int(kSmemBytes);
    row.local_bytes = optional_int(kLocalBytes);
    row.cycles = optional_double(kCycles);
    row.l2_hit_pct = optional_double(kL2HitPct);
    row.cupti_duration_ms = optional_double(kCuptiDurationMs);
    row.verdict = field(kVerdict);
    if (row.verdict != "pass" && row.verdict != "fail" && row.verdict != "unchecked")
      fail(kVerdict, "'" + excerpt(row.verdict) + "' is not pass, fail or unchecked");
    row.max_error = optional_double(kMaxError);
    row.device = field(kDevice);
    row.device_index = optional_int(kDeviceIndex);
    if (row.device_index && *row.device_index < 0)
      fail(kDeviceIndex,
           "'" + excerpt(field(kDeviceIndex)) + "' is not a device index (0 or more)");
    row.device_uuid = field(kDeviceUuid);
    if (!field(kSmClockMhz).empty()) row.sm_clock_mhz = parse_int(kSmClockMhz);
    row.cache_mode = field(kCacheMode);
    if (row.cache_mode != "warm" && row.cache_mode != "cold" && !row.cache_mode.empty())
      fail(kCacheMode, "'" + excerpt(row.cache_mode) + "' is not warm or cold");
    row.git_commit = field(kGitCommit);
    if (field(kGitDirty) == "true")
      row.git_dirty = true;
    else if (field(kGitDirty) == "false")
      row.git_dirty = false;
    else if (!field(kGitDirty).empty())
      fail(kGitDirty, "'" + excerpt(field(kGitDirty)) + "' is not true, false or empty (unknown)");
    row.host = field(kHost);
    row.run_id = field(kRunId);
    row.fa2_entry_point = field(kFa2EntryPoint);
    row.locked_sm_clock_mhz = optional_int(kLockedSmClockMhz);
    if (row.locked_sm_clock_mhz && *row.locked_sm_clock_mhz <= 0)
      fail(kLockedSmClockMhz,
           "'" + excerpt(field(kLockedSmClockMhz)) + "' is not a positive clock");
    row.reference_pass = optional_int(kReferencePass);
    if (row.reference_pass && (*row.reference_pass < 1 || !row.is_baseline_or_ceiling()))
      fail(kReferencePass, "'" + excerpt(field(kReferencePass)) +
                               "' must be empty on kernel rows and 1 or more on reference rows");
    row.pct_fa2_cycles = optional_double(kPctFa2Cycles);
    row.pct_cudnn_cycles = optional_double(kPctCudnnCycles);
    {
      const std::string& text = field(kInputSeed);
      const auto [end, error] =
          std::from_chars(text.data(), text.data() + text.size(), row.input_seed);
      if (text.empty() || error != std::errc() || end != text.data() + text.size())
        fail(kInputSeed, "'" + excerpt(text) + "' is not an unsigned integer");
    }
    row.gbytes_per_s = optional_double(kGbytesPerS);
    // Files written before the causal workload existed measured the non-causal problem only.
    if (field(kCausal) == "1")
      row.causal = true;
    else if (!field(kCausal).empty() && field(kCausal) != "0")
      fail(kCausal, "'" + excerpt(field(kCausal)) + "' is not 0 (no mask) or 1 (causal)");
    for (const auto& [index, metric] : metric_columns) {
      const std::string& text = record.fields[static_cast<std::size_t>(index)];
      if (text.empty()) continue;
      double value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size())
        splitter.fail(record.line, "column 'metric:" + excerpt(metric) + "': '" + excerpt(text) +
                                       "' is not a number");
      row.extra_metrics[metric] = value;
    }
    // Files from before the warnings column get the same checks the writer's rows got.
    row.warnings =
        column_index[kWarnings] >= 0 ? field(kWarnings) : join_warnings(sanity_warnings(row));
    return row;
  }
};

ResultsCsvParser::ResultsCsvParser(std::string source_name, ResultsLimits limits)
    : state_(std::make_unique<State>(std::move(source_name), limits)) {}
ResultsCsvParser::~ResultsCsvParser() = default;
ResultsCsvParser::ResultsCsvParser(ResultsCsvParser&&) noexcept = default;
ResultsCsvParser& ResultsCsvParser::operator=(ResultsCsvParser&&) noexcept = default;

void ResultsCsvParser::State::take(const Record& record, std::vector<ResultRow>& rows) {
  if (!have_header) {
    read_header(record);
    return;
  }
  if (rows_read == limits.max_rows)
    splitter.fail(record.line, "more than " + std::to_string(limits.max_rows) +
                                   " rows, the limit for one file" + std::string(kLimitsDoc));
  rows.push_back(read_row(record));
  ++rows_read;
}

std::vector<ResultRow> ResultsCsvParser::feed(std::string_view text) {
  std::vector<ResultRow> rows;
  State& state = *state_;
  const auto sink = [&](Record record) { state.take(record, rows); };
  // Bytes up to the size limit are read first, so the error comes at the same byte however the
  // text arrives, after any problem that lies before it.
  const std::uint64_t allowed = state.limits.max_file_bytes - state.bytes_fed;
  if (text.size() > allowed) {
    state.splitter.feed(text.substr(0, static_cast<std::size_t>(allowed)), sink);
    state.bytes_fed = state.limits.max_file_bytes;
    state.splitter.fail(state.splitter.line(),
                        "the text goes on past " + describe_bytes(state.limits.max_file_bytes) +
                            ", the limit for one file" + std::string(kLimitsDoc));
  }
  state.bytes_fed += text.size();
  state.splitter.feed(text, sink);
  return rows;
}

std::vector<ResultRow> ResultsCsvParser::finish() {
  State& state = *state_;
  std::vector<ResultRow> rows;
  state.splitter.finish([&](Record record) { state.take(record, rows); });
  if (!state.have_header)
    throw ResultsFormatError(state.source_name + ": empty file (no header line)");
  return rows;
}

const std::vector<std::string>& ResultsCsvParser::extra_metric_names() const {
  return state_->extra_metric_names;
}

const std::vector<std::string>& ResultsCsvParser::columns() const {
  return state_->header;
}

std::vector<ResultRow> read_results_csv(std::istream& in, const std::string& source_name,
                                        const ResultsLimits& limits) {
  ResultsCsvParser parser(source_name, limits);
  std::vector<ResultRow> rows;
  std::string chunk(1 << 16, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::streamsize count = in.gcount();
    if (count <= 0) break;
    for (ResultRow& row :
         parser.feed(std::string_view(chunk.data(), static_cast<std::size_t>(count))))
      rows.push_back(std::move(row));
  }
  if (in.bad()) throw ResultsFormatError(source_name + ": read error");
  for (ResultRow& row : parser.finish())
    rows.push_back(std::move(row));
  return rows;
}

std::vector<ResultRow> read_results_file(const std::string& path, const ResultsLimits& limits) {
  // A regular file's size is known up front; pipes and devices meet the same limit as they are
  // read.
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) {
    const std::uintmax_t bytes = std::filesystem::file_size(path, error);
    if (!error && bytes > limits.max_file_bytes)
      throw ResultsFormatError(path + ": the file holds " + describe_bytes(bytes) +
                               ", over the limit of " + describe_bytes(limits.max_file_bytes) +
                               " for one results CSV" + std::string(kLimitsDoc));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultsFormatError(path + ": cannot open the file for reading");
  return read_results_csv(in, path, limits);
}

}  // namespace flashscope
