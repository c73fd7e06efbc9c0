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
#include <utility>

#include "kernels/common/config.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/step_descriptor.hpp"
#include "kernels/common/text.hpp"

namespace flashscope {

namespace {

constexpr std::string_view kMetricPrefix = "metric:";

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

// ---- Reading ------------------------------------------------------------------------------

// A value as an error message quotes it: printable, with other bytes as \xHH, and cut short so
// that a megabyte-long field does not become a megabyte-long message.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string out = text::escaped(text, kShown);
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

// ---- Typed values of the step, status, verdict, config and dtype columns --------------------

std::string_view baseline_key(Baseline baseline) {
  return baseline == Baseline::fa2 ? "fa2" : "cudnn";
}

std::string_view baseline_label(Baseline baseline) {
  return baseline == Baseline::fa2 ? "FA2" : "cuDNN";
}

std::optional<Baseline> baseline_from_key(std::string_view key) {
  for (const Baseline baseline : kBaselines)
    if (key == baseline_key(baseline)) return baseline;
  return std::nullopt;
}

std::optional<RowSubject> RowSubject::from_text(std::string_view text) {
  if (const auto baseline = baseline_from_key(text)) return RowSubject::baseline(*baseline);
  if (text.starts_with(kCeilingStepPrefix) && text.size() > kCeilingStepPrefix.size())
    return RowSubject::ceiling(std::string(text.substr(kCeilingStepPrefix.size())), std::nullopt);
  // Forward steps are "1", "2", …; backward steps "B1", "B2", … (numbered from
  // kFirstBackwardStep). Three digits at most: no step number is longer.
  const bool backward = text.starts_with('B');
  const std::string_view digits = backward ? text.substr(1) : text;
  const auto number = digits.size() <= 3 ? text::parse_decimal(digits, 999) : std::nullopt;
  if (!number || *number < 1) return std::nullopt;
  const int step = static_cast<int>(*number);
  if (!backward && is_backward_step_number(step)) return std::nullopt;  // "101" is spelt "B1"
  return RowSubject::kernel(backward ? kFirstBackwardStep + step - 1 : step);
}

std::optional<int> RowSubject::step() const {
  if (kind_ != RowKind::kernel) return std::nullopt;
  return step_;
}

std::optional<Baseline> RowSubject::which_baseline() const {
  if (kind_ != RowKind::baseline) return std::nullopt;
  return baseline_;
}

std::string RowSubject::text() const {
  switch (kind_) {
    case RowKind::kernel:
      return step_name(step_);
    case RowKind::baseline:
      return std::string(baseline_key(baseline_));
    case RowKind::ceiling:
      break;
  }
  return std::string(kCeilingStepPrefix) + benchmark_;
}

std::string RowSubject::label() const {
  switch (kind_) {
    case RowKind::kernel:
      return "step " + step_name(step_);
    case RowKind::baseline:
      return std::string(baseline_label(baseline_));
    case RowKind::ceiling:
      break;
  }
  return text();
}

namespace {
constexpr std::string_view kSkippedPrefix = "skipped: ";
constexpr std::string_view kFaultPrefix = "fault: ";
}  // namespace

std::string RowStatus::text() const {
  switch (kind) {
    case Kind::ok:
      return "ok";
    case Kind::skipped:
      return std::string(kSkippedPrefix) + reason;
    case Kind::fault:
      break;
  }
  return std::string(kFaultPrefix) + reason;
}

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return "pass";
    case Verdict::fail:
      return "fail";
    case Verdict::unchecked:
      break;
  }
  return "unchecked";
}

std::string config_text(const ResultRow& row) {
  return row.config ? to_short_form(*row.config) : std::string();
}

std::optional<DType> row_dtype(const ResultRow& row) {
  if (row.subject.is_ceiling()) return row.subject.element_type();
  return row.problem.dtype;
}

std::string dtype_text(const ResultRow& row) {
  const std::optional<DType> dtype = row_dtype(row);
  return dtype ? std::string(dtype_lower_name(*dtype)) : std::string();
}

// ---- The column table ---------------------------------------------------------------------

namespace {

[[noreturn]] void reject(const std::string& problem) {
  throw std::invalid_argument(problem);
}

std::string in_quotes(std::string_view text) {
  return "'" + excerpt(text) + "'";
}

double number_from(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    reject(in_quotes(text) + " is not a number");
  return value;
}

int integer_from(std::string_view text) {
  if (text.empty()) reject("is empty but required");
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    reject(in_quotes(text) + " is not an integer");
  if (value < INT32_MIN || value > INT32_MAX) reject(in_quotes(text) + " is out of range");
  return static_cast<int>(value);
}

template <typename T>
std::optional<double> widen(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

// Column kinds shared by many columns, over the ResultRow member they hold.

template <std::string ResultRow::*member>
std::string write_text(const ResultRow& row) {
  return row.*member;
}
template <std::string ResultRow::*member>
void read_text(std::string_view text, ResultRow& row) {
  row.*member = std::string(text);
}

template <int ResultRow::*member>
std::string write_int(const ResultRow& row) {
  return std::to_string(row.*member);
}
template <int ResultRow::*member>
void read_int(std::string_view text, ResultRow& row) {
  row.*member = integer_from(text);
}
template <int ResultRow::*member>
std::optional<double> int_number(const ResultRow& row) {
  return row.*member;
}

template <typename T, std::optional<T> ResultRow::*member>
std::string write_optional(const ResultRow& row) {
  const std::optional<T>& value = row.*member;
  if (!value) return "";
  if constexpr (std::is_integral_v<T>)
    return std::to_string(*value);
  else
    return format_number(*value);
}
template <typename T, std::optional<T> ResultRow::*member>
void read_optional(std::string_view text, ResultRow& row) {
  if (text.empty()) {
    row.*member = std::nullopt;
  } else if constexpr (std::is_integral_v<T>) {
    row.*member = integer_from(text);
  } else {
    row.*member = number_from(text);
  }
}
template <typename T, std::optional<T> ResultRow::*member>
std::optional<double> optional_number(const ResultRow& row) {
  return widen(row.*member);
}

// Measurement columns are empty on rows that were skipped or faulted (a 0 there would be
// indistinguishable from a real value in a spreadsheet), and required on measured rows.
template <double ResultRow::*member>
std::string write_measurement(const ResultRow& row) {
  return row.status.ok() ? format_number(row.*member) : std::string();
}
template <double ResultRow::*member>
void read_measurement(std::string_view text, ResultRow& row) {
  if (!row.status.ok()) {
    if (!text.empty()) reject("has a value on a row whose status is not ok");
    row.*member = 0;
    return;
  }
  if (text.empty()) reject("is empty but the row's status is ok");
  row.*member = number_from(text);
}
template <double ResultRow::*member>
std::optional<double> measurement_number(const ResultRow& row) {
  return row.*member;
}

// The problem's columns, one per axis of the table (kernels/common/problem_axes.hpp): its name,
// whether older files may lack it, its label and its text all come from there. A value must be
// spelt exactly as the axis writes it (so a file read and written again keeps its text); an
// optional column that is absent reads as the axis derives it (heads_kv = heads) or as its plain
// value (no mask, forward). The dtype of a ceiling row is its subject's element type: empty for
// a memory ceiling, which moves bytes of no particular type.
template <Axis kAxis>
std::string write_axis(const ResultRow& row) {
  const AxisSpec& spec = axis_spec(kAxis);
  if (kAxis == Axis::dtype && row.subject.is_ceiling()) return dtype_text(row);
  return spec.text(spec.get(row.problem));
}
template <Axis kAxis>
void read_axis(std::string_view text, ResultRow& row) {
  const AxisSpec& spec = axis_spec(kAxis);
  if (kAxis == Axis::dtype && row.subject.is_ceiling() && text.empty()) {
    row.subject.set_element_type(std::nullopt);
    return;
  }
  if (text.empty()) {
    if (!spec.optional_in_csv) reject("is empty but required");
    spec.set(row.problem,
             spec.derived != nullptr ? spec.derived(row.problem) : spec.sweep_default().front());
    return;
  }
  int value = 0;
  try {
    value = spec.parse(text);
  } catch (const std::invalid_argument& error) {
    reject(std::string(error.what()) + (kAxis == Axis::dtype && row.subject.is_ceiling()
                                            ? " (or empty on a memory ceiling)"
                                            : ""));
  }
  if (const std::string written = spec.text(value); written != text)
    reject(in_quotes(text) + " is not written as " + in_quotes(written));
  spec.set(row.problem, value);
  if (kAxis == Axis::dtype && row.subject.is_ceiling())
    row.subject.set_element_type(static_cast<DType>(value));
}
template <Axis kAxis>
std::optional<double> axis_number(const ResultRow& row) {
  const AxisSpec& spec = axis_spec(kAxis);
  if (kAxis == Axis::dtype || kAxis == Axis::pass) return std::nullopt;  // not a quantity
  return spec.get(row.problem);
}

#define FLASHSCOPE_TEXT_COLUMN(field)                                         \
  ResultColumn::field, #field, false, #field, &write_text<&ResultRow::field>, \
      &read_text<&ResultRow::field>, nullptr
#define FLASHSCOPE_OPTIONAL_COLUMN(type, field, optional, label)                          \
  ResultColumn::field, #field, optional, label, &write_optional<type, &ResultRow::field>, \
      &read_optional<type, &ResultRow::field>, &optional_number<type, &ResultRow::field>
#define FLASHSCOPE_AXIS_COLUMN(axis)                                                     \
  ResultColumn::axis, axis_spec(Axis::axis).name, axis_spec(Axis::axis).optional_in_csv, \
      axis_spec(Axis::axis).label, &write_axis<Axis::axis>, &read_axis<Axis::axis>,      \
      (Axis::axis == Axis::dtype || Axis::axis == Axis::pass ? nullptr : &axis_number<Axis::axis>)
#define FLASHSCOPE_MEASUREMENT_COLUMN(field, label)                                 \
  ResultColumn::field, #field, false, label, &write_measurement<&ResultRow::field>, \
      &read_measurement<&ResultRow::field>, &measurement_number<&ResultRow::field>

const std::vector<ResultColumnSpec>& column_table() {
  static const std::vector<ResultColumnSpec> table = {
      {ResultColumn::step, "step", false, "step",
       [](const ResultRow& row) { return row.subject.text(); },
       [](std::string_view text, ResultRow& row) {
         if (text.empty()) reject("is empty but required");
         const auto subject = RowSubject::from_text(text);
         if (!subject)
           reject(in_quotes(text) +
                  " is not a step number (1 or more, no leading zero), fa2, cudnn or "
                  "peak:<benchmark>");
         row.subject = *subject;
       },
       nullptr},
      {ResultColumn::config, "config", false, "config", &config_text,
       [](std::string_view text, ResultRow& row) {
         row.config.reset();
         if (text.empty()) {
           if (row.subject.is_kernel())
             reject("is empty on a kernel row (step " + row.subject.text() + ")");
           return;
         }
         if (!row.subject.is_kernel())
           reject("has a value on a " +
                  std::string(row.subject.is_ceiling() ? "ceiling" : "baseline") + " row (" +
                  excerpt(row.subject.text()) + "), which has no config");
         try {
           row.config = parse_short_form(text);
         } catch (const ConfigParseError& error) {
           reject(error.what());
         }
         // Other spellings parse_short_form accepts (a markdown table row) would not be written
         // back as read.
         if (const std::string written = to_short_form(*row.config); written != text)
           reject(in_quotes(text) + " is not written as the short form " + in_quotes(written));
       },
       nullptr},
      {FLASHSCOPE_AXIS_COLUMN(dtype)},
      {FLASHSCOPE_AXIS_COLUMN(d_head)},
      {FLASHSCOPE_AXIS_COLUMN(batch)},
      {FLASHSCOPE_AXIS_COLUMN(heads)},
      {FLASHSCOPE_AXIS_COLUMN(seq_len)},
      {ResultColumn::runs, "runs", false, "runs",
       [](const ResultRow& row) { return row.status.ok() ? std::to_string(row.runs) : ""; },
       [](std::string_view text, ResultRow& row) {
         if (!row.status.ok() && !text.empty())
           reject("has a value on a row whose status is not ok");
         if (row.status.ok() && text.empty()) reject("is empty but the row's status is ok");
         row.runs = text.empty() ? 0 : integer_from(text);
       },
       &int_number<&ResultRow::runs>},
      {FLASHSCOPE_MEASUREMENT_COLUMN(median_ms, "median ms")},
      {FLASHSCOPE_MEASUREMENT_COLUMN(min_ms, "min ms")},
      {FLASHSCOPE_MEASUREMENT_COLUMN(max_ms, "max ms")},
      {FLASHSCOPE_MEASUREMENT_COLUMN(tflops, "TFLOP/s")},
      {FLASHSCOPE_MEASUREMENT_COLUMN(seed_attn_tflops, "seed attention TFLOP/s")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_fa2, false, "% of FA2")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_cudnn, false, "% of cuDNN")},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, registers, false, "registers / thread")},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, smem_bytes, false, "shared memory (bytes / CTA)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, local_bytes, false, "local memory (bytes / thread)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, cycles, false, "cycles")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, l2_hit_pct, false, "L2 hit %")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, cupti_duration_ms, false, "CUPTI duration ms")},
      {ResultColumn::verdict, "verdict", false, "verdict",
       [](const ResultRow& row) { return std::string(verdict_name(row.verdict)); },
       [](std::string_view text, ResultRow& row) {
         for (const Verdict verdict : {Verdict::pass, Verdict::fail, Verdict::unchecked})
           if (text == verdict_name(verdict)) {
             row.verdict = verdict;
             return;
           }
         reject(in_quotes(text) + " is not pass, fail or unchecked");
       },
       nullptr},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, max_error, false, "max error")},
      {ResultColumn::status, "status", false, "status",
       [](const ResultRow& row) { return row.status.text(); },
       [](std::string_view text, ResultRow& row) {
         if (text == "ok")
           row.status = {};
         else if (text.starts_with(kFaultPrefix))
           row.status = RowStatus::fault(std::string(text.substr(kFaultPrefix.size())));
         else if (text.starts_with(kSkippedPrefix))
           row.status = RowStatus::skipped(std::string(text.substr(kSkippedPrefix.size())));
         else
           reject(in_quotes(text) + " is not ok, 'fault: <reason>' or 'skipped: <reason>'");
       },
       nullptr},
      {FLASHSCOPE_TEXT_COLUMN(device)},
      {ResultColumn::device_index, "device_index", true, "GPU index",
       &write_optional<int, &ResultRow::device_index>,
       [](std::string_view text, ResultRow& row) {
         read_optional<int, &ResultRow::device_index>(text, row);
         if (row.device_index && *row.device_index < 0)
           reject(in_quotes(text) + " is not a device index (0 or more)");
       },
       &optional_number<int, &ResultRow::device_index>},
      {ResultColumn::device_uuid, "device_uuid", true, "GPU UUID",
       &write_text<&ResultRow::device_uuid>, &read_text<&ResultRow::device_uuid>, nullptr},
      {ResultColumn::sm_clock_mhz, "sm_clock_mhz", false, "SM clock (MHz)",
       [](const ResultRow& row) {
         return row.sm_clock_mhz > 0 ? std::to_string(row.sm_clock_mhz) : std::string();
       },
       [](std::string_view text, ResultRow& row) {
         row.sm_clock_mhz = text.empty() ? 0 : integer_from(text);
       },
       [](const ResultRow& row) {
         return row.sm_clock_mhz > 0 ? std::optional<double>(row.sm_clock_mhz) : std::nullopt;
       }},
      {ResultColumn::cache_mode, "cache_mode", false, "cache mode",
       &write_text<&ResultRow::cache_mode>,
       [](std::string_view text, ResultRow& row) {
         if (text != "warm" && text != "cold" && !text.empty())
           reject(in_quotes(text) + " is not warm or cold");
         row.cache_mode = std::string(text);
       },
       nullptr},
      {FLASHSCOPE_TEXT_COLUMN(git_commit)},
      // The provenance / clock block: optional on reading (older files lack it).
      {ResultColumn::git_dirty, "git_dirty", true, "dirty tree",
       [](const ResultRow& row) {
         return row.git_dirty ? std::string(*row.git_dirty ? "true" : "false") : std::string();
       },
       [](std::string_view text, ResultRow& row) {
         if (text == "true")
           row.git_dirty = true;
         else if (text == "false")
           row.git_dirty = false;
         else if (text.empty())
           row.git_dirty = std::nullopt;
         else
           reject(in_quotes(text) + " is not true, false or empty (unknown)");
       },
       nullptr},
      {ResultColumn::host, "host", true, "host", &write_text<&ResultRow::host>,
       &read_text<&ResultRow::host>, nullptr},
      {ResultColumn::run_id, "run_id", true, "run", &write_text<&ResultRow::run_id>,
       &read_text<&ResultRow::run_id>, nullptr},
      {ResultColumn::fa2_entry_point, "fa2_entry_point", true, "FA2 entry point",
       &write_text<&ResultRow::fa2_entry_point>, &read_text<&ResultRow::fa2_entry_point>, nullptr},
      {ResultColumn::locked_sm_clock_mhz, "locked_sm_clock_mhz", true, "locked SM clock (MHz)",
       &write_optional<int, &ResultRow::locked_sm_clock_mhz>,
       [](std::string_view text, ResultRow& row) {
         read_optional<int, &ResultRow::locked_sm_clock_mhz>(text, row);
         if (row.locked_sm_clock_mhz && *row.locked_sm_clock_mhz <= 0)
           reject(in_quotes(text) + " is not a positive clock");
       },
       &optional_number<int, &ResultRow::locked_sm_clock_mhz>},
      {ResultColumn::reference_pass, "reference_pass", true, "reference pass",
       &write_optional<int, &ResultRow::reference_pass>,
       [](std::string_view text, ResultRow& row) {
         read_optional<int, &ResultRow::reference_pass>(text, row);
         if (row.reference_pass && (*row.reference_pass < 1 || row.subject.is_kernel()))
           reject(in_quotes(text) +
                  " must be empty on kernel rows and 1 or more on reference rows");
       },
       &optional_number<int, &ResultRow::reference_pass>},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_fa2_cycles, true, "% of FA2 by cycles")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_cudnn_cycles, true, "% of cuDNN by cycles")},
      {ResultColumn::warnings, "warnings", true, "warnings", &write_text<&ResultRow::warnings>,
       &read_text<&ResultRow::warnings>, nullptr},
      {ResultColumn::input_seed, "input_seed", false, "input seed",
       [](const ResultRow& row) { return std::to_string(row.input_seed); },
       [](std::string_view text, ResultRow& row) {
         const auto [end, error] =
             std::from_chars(text.data(), text.data() + text.size(), row.input_seed);
         if (text.empty() || error != std::errc() || end != text.data() + text.size())
           reject(in_quotes(text) + " is not an unsigned integer");
       },
       nullptr},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, gbytes_per_s, true, "GB/s")},
      {FLASHSCOPE_AXIS_COLUMN(causal)},
      {FLASHSCOPE_AXIS_COLUMN(heads_kv)},
      {FLASHSCOPE_AXIS_COLUMN(pass)},
      // Interleaved measurement and the GPU's state while it ran: optional on reading.
      {FLASHSCOPE_OPTIONAL_COLUMN(int, rounds, true, "rounds")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, ci_low_ms, true, "median ms, 95 % low")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, ci_high_ms, true, "median ms, 95 % high")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_fa2_low, true, "% of FA2, 95 % low")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_fa2_high, true, "% of FA2, 95 % high")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_cudnn_low, true, "% of cuDNN, 95 % low")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, pct_cudnn_high, true, "% of cuDNN, 95 % high")},
      {ResultColumn::launch_pattern, "launch_pattern", true, "launch pattern",
       &write_text<&ResultRow::launch_pattern>,
       [](std::string_view text, ResultRow& row) {
         if (!text.empty() && text != "graph" && text != "stream" && text != "gapped")
           reject(in_quotes(text) + " is not graph, stream, gapped or empty");
         row.launch_pattern = std::string(text);
       },
       nullptr},
      {ResultColumn::stop_reason, "stop_reason", true, "rounds stopped by",
       &write_text<&ResultRow::stop_reason>, &read_text<&ResultRow::stop_reason>, nullptr},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, sm_clock_min_mhz, true, "SM clock min (MHz)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, sm_clock_max_mhz, true, "SM clock max (MHz)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, power_mean_w, true, "power mean (W)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, power_max_w, true, "power max (W)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, power_limit_w, true, "power limit (W)")},
      {FLASHSCOPE_OPTIONAL_COLUMN(int, temperature_max_c, true, "temperature max (C)")},
      {ResultColumn::clock_reasons, "clock_reasons", true, "clock held by",
       &write_text<&ResultRow::clock_reasons>, &read_text<&ResultRow::clock_reasons>, nullptr},
      {ResultColumn::reference_variant, "reference_variant", true, "reference variant",
       &write_text<&ResultRow::reference_variant>, &read_text<&ResultRow::reference_variant>,
       nullptr},
      // The FP8 track's error beside the verdict: optional on reading (older files lack it).
      {FLASHSCOPE_OPTIONAL_COLUMN(double, max_error_fp64, true, "max error vs fp64")},
      {FLASHSCOPE_OPTIONAL_COLUMN(double, rms_error_fp64, true, "RMS error vs fp64")},
      {ResultColumn::reference_version, "reference_version", true, "reference library",
       &write_text<&ResultRow::reference_version>,
       [](std::string_view text, ResultRow& row) {
         if (!text.empty() && !row.subject.is_baseline())
           reject(in_quotes(text) + ": only a reference row (fa2, cudnn) names a library version");
         row.reference_version = std::string(text);
       },
       nullptr},
  };
  return table;
}

#undef FLASHSCOPE_TEXT_COLUMN
#undef FLASHSCOPE_OPTIONAL_COLUMN
#undef FLASHSCOPE_MEASUREMENT_COLUMN
#undef FLASHSCOPE_AXIS_COLUMN

constexpr std::size_t kColumnCount = static_cast<std::size_t>(ResultColumn::reference_version) + 1;

// The step and status columns first: the rules of the config, dtype, measurement and
// reference_pass columns depend on them.
const std::vector<std::size_t>& read_order() {
  static const std::vector<std::size_t> order = [] {
    std::vector<std::size_t> columns = {static_cast<std::size_t>(ResultColumn::step),
                                        static_cast<std::size_t>(ResultColumn::status)};
    for (std::size_t c = 0; c < kColumnCount; ++c)
      if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    return columns;
  }();
  return order;
}

}  // namespace

const std::vector<ResultColumnSpec>& result_column_table() {
  return column_table();
}

const ResultColumnSpec& result_column(ResultColumn column) {
  return column_table().at(static_cast<std::size_t>(column));
}

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names;
    for (const ResultColumnSpec& spec : column_table())
      names.emplace_back(spec.name);
    return names;
  }();
  return columns;
}

const std::vector<std::string>& optional_result_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names;
    for (const ResultColumnSpec& spec : column_table())
      if (spec.optional) names.emplace_back(spec.name);
    return names;
  }();
  return columns;
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
  bool first = true;
  for (const ResultColumnSpec& spec : column_table()) {
    if (!first) out_ << ',';
    first = false;
    write_field(out_, spec.write(row));
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
  // A UTF-8 byte-order mark (as spreadsheet programs write) is skipped at the start of the text
  // only: until three bytes have arrived the start is held here, undecided.
  bool start_decided = false;
  std::string start_bytes;
  bool have_header = false;
  std::array<int, kColumnCount> column_index{};             // field position of each column
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
      const auto known =
          std::find_if(column_table().begin(), column_table().end(),
                       [&](const ResultColumnSpec& spec) { return spec.name == name; });
      if (known == column_table().end())
        splitter.fail(record.line, "unknown column '" + excerpt(name) +
                                       "' (not a flashscope results header; see "
                                       "docs/csv-schema.md)");
      column_index[static_cast<std::size_t>(known - column_table().begin())] = static_cast<int>(i);
    }
    if (metric_columns.size() > limits.max_metric_columns)
      splitter.fail(record.line, "the header has " + std::to_string(metric_columns.size()) +
                                     " metric columns, over the limit of " +
                                     std::to_string(limits.max_metric_columns) +
                                     std::string(kLimitsDoc));
    for (std::size_t c = 0; c < kColumnCount; ++c)
      if (column_index[c] < 0 && !column_table()[c].optional)
        splitter.fail(record.line,
                      "the header lacks column '" + std::string(column_table()[c].name) + "'");
    field_count = record.fields.size();
    header = record.fields;
    have_header = true;
  }

  ResultRow read_row(const Record& record) const {
    if (record.fields.size() != field_count)
      splitter.fail(record.line, "the record has " + std::to_string(record.fields.size()) +
                                     " fields but the header has " + std::to_string(field_count));
    const auto field = [&](std::size_t c) -> std::string_view {
      const int index = column_index[c];
      return index < 0 ? std::string_view() : record.fields[static_cast<std::size_t>(index)];
    };
    const auto fail = [&](std::size_t c, const std::string& problem) {
      splitter.fail(record.line,
                    "column '" + std::string(column_table()[c].name) + "': " + problem);
    };
    ResultRow row;
    for (const std::size_t c : read_order()) {
      try {
        column_table()[c].read(field(c), row);
      } catch (const std::invalid_argument& error) {
        fail(c, error.what());
      }
    }
    if (row.status.ok() && !(row.min_ms <= row.median_ms && row.median_ms <= row.max_ms)) {
      const auto text = [&](ResultColumn c) { return excerpt(field(static_cast<std::size_t>(c))); };
      fail(static_cast<std::size_t>(ResultColumn::median_ms),
           "median " + text(ResultColumn::median_ms) + " ms lies outside [min " +
               text(ResultColumn::min_ms) + ", max " + text(ResultColumn::max_ms) + "]");
    }
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
    if (column_index[static_cast<std::size_t>(ResultColumn::warnings)] < 0)
      row.warnings = join_warnings(sanity_warnings(row));
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
  std::string start;
  if (!state.start_decided) {
    constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
    start = state.start_bytes + std::string(text);
    if (start.size() < kByteOrderMark.size() && kByteOrderMark.starts_with(start)) {
      state.start_bytes = std::move(start);
      return rows;
    }
    state.start_decided = true;
    state.start_bytes.clear();
    if (start.starts_with(kByteOrderMark)) start.erase(0, kByteOrderMark.size());
    text = start;
  }
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
  if (!state.start_decided) {  // one or two bytes of a byte-order mark, and nothing more
    state.start_decided = true;
    rows = feed(std::exchange(state.start_bytes, {}));
  }
  state.splitter.finish([&](Record record) { state.take(record, rows); });
  if (!state.have_header)
    throw ResultsFormatError(state.source_name + ": empty file (no header line)");
  return rows;
}

const std::vector<std::string>& ResultsCsvParser::extra_metric_names() const {
  return state_->extra_metric_names;
}

const std::string& ResultsCsvParser::source_name() const {
  return state_->source_name;
}

const std::vector<std::string>& ResultsCsvParser::columns() const {
  return state_->header;
}

std::vector<ResultRow> read_results_csv(std::istream& in, ResultsCsvParser& parser) {
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
  if (in.bad()) throw ResultsFormatError(parser.source_name() + ": read error");
  for (ResultRow& row : parser.finish())
    rows.push_back(std::move(row));
  return rows;
}

std::vector<ResultRow> read_results_csv(std::istream& in, const std::string& source_name,
                                        const ResultsLimits& limits) {
  ResultsCsvParser parser(source_name, limits);
  return read_results_csv(in, parser);
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
