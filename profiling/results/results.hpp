// The results model: one row per measured (step, config, dtype, seq_len) or reference. The
// headless sweep (`explorer --csv`) writes it and the GUI reads it; docs/csv-schema.md
// documents every column.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"

namespace flashscope {

// The speed baselines a kernel row is compared with (profiling/baselines); not the correctness
// reference of kernels/common/reference.hpp.
enum class Baseline { fa2, cudnn };
inline constexpr Baseline kBaselines[] = {Baseline::fa2, Baseline::cudnn};
std::string_view baseline_key(Baseline baseline);    // the step column's text: "fa2", "cudnn"
std::string_view baseline_label(Baseline baseline);  // for people: "FA2", "cuDNN"
std::optional<Baseline> baseline_from_key(std::string_view key);

// The step column's prefix of a device ceiling (`explorer peak`): "peak:mma.sync", "peak:wgmma",
// "peak:hbm.read", "peak:hbm.copy".
inline constexpr std::string_view kCeilingStepPrefix = "peak:";

enum class RowKind { kernel, baseline, ceiling };

// What a row measured: step N's kernel, a speed baseline, or a device ceiling (its benchmark
// name). The order is the step column's: kernels by step number, then FA2, cuDNN, then the
// ceilings by name.
class RowSubject {
 public:
  RowSubject() = default;  // step 1's kernel
  static RowSubject kernel(int step) { return RowSubject(RowKind::kernel, step, {}, {}); }
  static RowSubject baseline(Baseline baseline) {
    return RowSubject(RowKind::baseline, 0, baseline, {});
  }
  // A ceiling measures a benchmark of some element type (mma.sync in fp16), or moves untyped
  // bytes (hbm.read: no element type, an empty dtype column).
  static RowSubject ceiling(std::string benchmark, std::optional<DType> element_type) {
    return RowSubject(RowKind::ceiling, 0, {}, std::move(benchmark), element_type);
  }
  // The step column's text ("7", "B1", "fa2", "peak:wgmma") read back; nullopt for any other
  // text, including a step number with a sign or leading zeros, which would not be written back
  // as read. A ceiling read this way has no element type until the dtype column gives it one.
  static std::optional<RowSubject> from_text(std::string_view text);

  RowKind kind() const { return kind_; }
  bool is_kernel() const { return kind_ == RowKind::kernel; }
  bool is_baseline() const { return kind_ == RowKind::baseline; }
  bool is_ceiling() const { return kind_ == RowKind::ceiling; }
  std::optional<int> step() const;                             // kernels only
  std::optional<Baseline> which_baseline() const;              // baselines only
  const std::string& benchmark() const { return benchmark_; }  // ceilings: "wgmma"; else empty
  std::optional<DType> element_type() const { return element_type_; }  // ceilings only
  void set_element_type(std::optional<DType> type) { element_type_ = type; }

  std::string text() const;   // the step column: "7", "B1", "fa2", "peak:wgmma"
  std::string label() const;  // for people: "step 7", "step B1", "FA2", "cuDNN", "peak:wgmma"

  auto operator<=>(const RowSubject&) const = default;
  bool operator==(const RowSubject&) const = default;

 private:
  RowSubject(RowKind kind, int step, Baseline baseline, std::string benchmark,
             std::optional<DType> element_type = std::nullopt)
      : kind_(kind),
        step_(step),
        baseline_(baseline),
        benchmark_(std::move(benchmark)),
        element_type_(element_type) {}
  // Declared in comparison order; the members a kind does not use keep their defaults.
  RowKind kind_ = RowKind::kernel;
  int step_ = 1;
  Baseline baseline_ = Baseline::fa2;
  std::string benchmark_;
  std::optional<DType> element_type_;
};

// How a row's measurement ended: "ok", or "skipped: <reason>" / "fault: <reason>".
struct RowStatus {
  enum class Kind { ok, skipped, fault };
  Kind kind = Kind::ok;
  std::string reason;  // empty when ok

  static RowStatus skipped(std::string reason) { return {Kind::skipped, std::move(reason)}; }
  static RowStatus fault(std::string reason) { return {Kind::fault, std::move(reason)}; }
  bool ok() const { return kind == Kind::ok; }
  bool is_skipped() const { return kind == Kind::skipped; }
  bool is_fault() const { return kind == Kind::fault; }
  std::string text() const;  // the status column
  bool operator==(const RowStatus&) const = default;
};

// The correctness check of a row: its output against the fp32 reference, or not checked.
enum class Verdict { unchecked, pass, fail };
std::string_view verdict_name(Verdict verdict);  // the verdict column: "pass", "fail", "unchecked"

struct ResultRow {
  RowSubject subject;                  // the step column
  std::optional<KernelConfig> config;  // kernels only; written as the short form with d_head
  // What was computed: one column per axis of the table (kernels/common/problem_axes.hpp). Rows
  // of two different workloads (dtype, d_head, heads, heads_kv, mask, pass) are never compared
  // with each other. A ceiling row measures no problem: its shape fields are 0 and its element
  // type is its subject's.
  Problem problem;
  int runs = 0;
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double tflops = 0;                 // 4·B·H·N²·d / median
  double seed_attn_tflops = 0;       // B·H·(4·N²·d + 6·N²) / median (the seed's column)
  std::optional<double> pct_fa2;     // FA2 median / this median · 100, same dtype and shape
  std::optional<double> pct_cudnn;   // likewise for cuDNN
  std::optional<int> registers;      // per thread, from cudaFuncGetAttributes
  std::optional<int> smem_bytes;     // dynamic + static shared memory per CTA
  std::optional<int> local_bytes;    // local memory (spills) per thread
  std::optional<double> cycles;      // sm__cycles_elapsed.max
  std::optional<double> l2_hit_pct;  // lts__t_sector_hit_rate.pct
  std::optional<double> cupti_duration_ms;  // gpu__time_duration.sum of the profiled launch
  Verdict verdict = Verdict::unchecked;
  std::optional<double> max_error;  // max |O - R_32|
  RowStatus status;
  std::string device;               // e.g. "NVIDIA H100 80GB HBM3"
  std::optional<int> device_index;  // CUDA device index in the measuring process
  std::string device_uuid;          // "GPU-…", as nvidia-smi -L spells it; "" if unknown
  int sm_clock_mhz = 0;             // SM clock seen during the measurement
  std::string cache_mode;           // "warm" or "cold"
  std::string git_commit;
  // Provenance and clock-aware comparisons (docs/csv-schema.md, the block after git_commit).
  // Files written before these columns existed still read: the fields stay empty.
  std::optional<bool> git_dirty;  // uncommitted changes in the tree the binary was built from
  std::string host;               // the measuring machine (gethostname)
  std::string run_id;             // one sweep: "<host> <UTC start>" unless --run-id named it
  std::string fa2_entry_point;    // how PyTorch's FA2 was reached: "in_place" / "sdpa_op"
  std::optional<int> locked_sm_clock_mhz;  // SM clock locked by the caller (--locked-sm-clock)
  std::optional<int> reference_pass;       // baseline rows: 1 before the shape's kernels, 2 after
  std::optional<double> pct_fa2_cycles;    // FA2 cycles / this row's cycles · 100
  std::optional<double> pct_cudnn_cycles;  // likewise for cuDNN
  std::string warnings;  // sanity findings ("; "-separated), e.g. a ratio metric above 100 %
  std::uint64_t input_seed = 0;        // Q/K/V seed (explorer check --seed reproduces the inputs)
  std::optional<double> gbytes_per_s;  // memory ceilings: bytes moved / median, in 10^9 B/s
  // Interleaved measurement (docs/profiling.md, "Interleaved measurement and intervals"): the
  // row's contender was timed in rounds alternating with every other kernel and reference of its
  // problem; median_ms is the median of its per-round times, with the 95 % order-statistic
  // interval below, and pct_* the median of the per-round ratios, with theirs. Files written
  // before these columns existed (sequential timing) leave them empty.
  std::optional<int> rounds;        // timed rounds of the row's cell
  std::optional<double> ci_low_ms;  // 95 % interval of median_ms
  std::optional<double> ci_high_ms;
  std::optional<double> pct_fa2_low;  // 95 % interval of pct_fa2
  std::optional<double> pct_fa2_high;
  std::optional<double> pct_cudnn_low;  // 95 % interval of pct_cudnn
  std::optional<double> pct_cudnn_high;
  std::string launch_pattern;  // how a batch was launched: "graph", "stream" or "gapped"
  std::string stop_reason;     // why the rounds stopped: "target", "max rounds", "time cap"
  // The GPU while the cell's rounds ran (NVML); sm_clock_mhz above is the median clock.
  std::optional<int> sm_clock_min_mhz;
  std::optional<int> sm_clock_max_mhz;
  std::optional<double> power_mean_w;
  std::optional<double> power_max_w;
  std::optional<double> power_limit_w;  // the enforced power limit
  std::optional<int> temperature_max_c;
  std::string clock_reasons;  // what held the clock down: "power cap", "HW slowdown", ... (" + ")
  // A reference row's way in (BaselineAttention::variant()): FA2 "in_place" / "sdpa_op", cuDNN
  // "unified" / "composite" (flashscope's own graph) or "torch_cudnn" (PyTorch's cuDNN backward).
  std::string reference_variant;
  // e4m3 rows (kernels and cuDNN FP8 alike): max and RMS of |O - R_ref| on the rows the
  // fp8-track.md §2 check sampled, R_ref the fp64 attention on the dequantized inputs. Empty on
  // 16-bit rows and in files written before the columns existed.
  std::optional<double> max_error_fp64;
  std::optional<double> rms_error_fp64;
  // A reference row's library and its version, e.g. "cuDNN 9.19.0" or "PyTorch 2.11.0" (FA2 is
  // the one PyTorch ships), as loaded by the measuring process: two cuDNN releases differ by up to
  // 15 % on one problem, so a % of cuDNN means little without it. Empty on kernel and ceiling rows
  // and in files written before the column existed.
  std::string reference_version;
  std::map<std::string, double> extra_metrics;  // user-named CUPTI metrics

  std::optional<int> step_number() const { return subject.step(); }  // kernels only
  bool is_baseline_or_ceiling() const { return !subject.is_kernel(); }
  bool is_ceiling() const { return subject.is_ceiling(); }
};

// The text of the config and dtype columns: the short form with d_head, "fp16" / "bf16"; empty
// when the row has none (a config on baseline and ceiling rows, a dtype on memory ceilings).
std::string config_text(const ResultRow& row);
std::string dtype_text(const ResultRow& row);
// The row's element type: its problem's dtype, or a ceiling's element type (none for memory).
std::optional<DType> row_dtype(const ResultRow& row);

// A file or line that is not a results CSV; the message names the file, line and problem.
class ResultsFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The measuring campaign a row belongs to: its sweep (run_id), or for files written before that
// column its host and the commit (and dirty state) it was built from. Rows of different runs were
// measured at other times, on other machines or with other code, and are compared only on
// purpose (the explorer never mixes them silently). run_label is the same for people:
// "gpu-7 2026-11-21T06:45:03Z, 3babb06a1b2c+dirty", or "3babb06a1b2c" for an old file.
std::string run_key(const ResultRow& row);
std::string run_label(const ResultRow& row);

// The columns of the results CSV in file order (docs/csv-schema.md describes each one). Extra
// CUPTI metrics follow them as "metric:<name>".
enum class ResultColumn : int {
  step,
  config,
  dtype,
  d_head,
  batch,
  heads,
  seq_len,
  runs,
  median_ms,
  min_ms,
  max_ms,
  tflops,
  seed_attn_tflops,
  pct_fa2,
  pct_cudnn,
  registers,
  smem_bytes,
  local_bytes,
  cycles,
  l2_hit_pct,
  cupti_duration_ms,
  verdict,
  max_error,
  status,
  device,
  device_index,
  device_uuid,
  sm_clock_mhz,
  cache_mode,
  git_commit,
  git_dirty,
  host,
  run_id,
  fa2_entry_point,
  locked_sm_clock_mhz,
  reference_pass,
  pct_fa2_cycles,
  pct_cudnn_cycles,
  warnings,
  input_seed,
  gbytes_per_s,
  causal,
  heads_kv,
  pass,
  rounds,
  ci_low_ms,
  ci_high_ms,
  pct_fa2_low,
  pct_fa2_high,
  pct_cudnn_low,
  pct_cudnn_high,
  launch_pattern,
  stop_reason,
  sm_clock_min_mhz,
  sm_clock_max_mhz,
  power_mean_w,
  power_max_w,
  power_limit_w,
  temperature_max_c,
  clock_reasons,
  reference_variant,
  max_error_fp64,
  rms_error_fp64,
  reference_version,
};

// One column: the single place that knows its header name, whether older files may lack it,
// and how its text maps to the typed row and back. The writer, the reader and the explorer's
// fields all go through this table; read and write are exact inverses, so a file read and
// written again keeps its text.
struct ResultColumnSpec {
  ResultColumn column;
  std::string_view name;   // the header's text
  bool optional;           // older files may lack it; a missing column reads as an empty field
  std::string_view label;  // for people (table headers, axis titles), with the unit
  std::string (*write)(const ResultRow& row);
  // Sets the row's field from the column's text. Throws std::invalid_argument naming the value
  // and the rule; the reader adds the file, line and column. The step and status columns are
  // read first, as the rules of the others depend on them.
  void (*read)(std::string_view text, ResultRow& row);
  // The value a view plots or sorts by (nullopt where the row has none); nullptr for text
  // columns.
  std::optional<double> (*number)(const ResultRow& row);
};

// Every column, in file order (table[i].column == ResultColumn(i)).
const std::vector<ResultColumnSpec>& result_column_table();
const ResultColumnSpec& result_column(ResultColumn column);

// Column names in output order (extra metrics follow as "metric:<name>").
const std::vector<std::string>& result_columns();

// Columns a reader accepts missing from a header (added after the first shipped datasets);
// a missing one reads as empty, and a missing `warnings` is derived with sanity_warnings().
const std::vector<std::string>& optional_result_columns();

// Values that cannot be right, each as one sentence naming the column and its range: a ratio
// metric (l2_hit_pct, an extra metric ending in ".pct") outside 0–100, a non-positive cycle
// count or duration, an SM clock more than 3 % away from the clock the row says was locked.
// The writer stores them in the `warnings` column; the numbers themselves are kept as measured.
std::vector<std::string> sanity_warnings(const ResultRow& row);
std::string join_warnings(const std::vector<std::string>& warnings);  // "; "-separated

// What one results CSV may hold (docs/csv-schema.md, "Limits"). Reading stops at the first byte
// past a limit with a ResultsFormatError that names it, so a huge or hostile file costs a bounded
// amount of memory and time instead of exhausting the machine. Tests and tools may lower them.
struct ResultsLimits {
  std::uint64_t max_file_bytes = std::uint64_t{1} << 30;  // 1 GiB
  // One record: a line, or several joined by line breaks inside a quoted field; 1 MiB.
  std::size_t max_record_bytes = std::size_t{1} << 20;
  std::size_t max_rows = 1'000'000;     // records after the header
  std::size_t max_metric_columns = 64;  // "metric:<name>" columns of the header
};

// Writes a header then rows; `extra_metric_names` fixes the extra columns' order.
class ResultsCsvWriter {
 public:
  ResultsCsvWriter(std::ostream& out, std::vector<std::string> extra_metric_names = {});
  void write(const ResultRow& row);  // flushes, so a crash loses no finished row

 private:
  std::ostream& out_;
  std::vector<std::string> extra_metric_names_;
};

// Incremental reader for rows that arrive in pieces (a sweep worker's pipe): feed() any chunk of
// text and get back the rows it completed. The first record must be the header.
class ResultsCsvParser {
 public:
  explicit ResultsCsvParser(std::string source_name, ResultsLimits limits = {});
  ~ResultsCsvParser();
  ResultsCsvParser(ResultsCsvParser&&) noexcept;
  ResultsCsvParser& operator=(ResultsCsvParser&&) noexcept;

  std::vector<ResultRow> feed(std::string_view text);  // throws ResultsFormatError
  // The end of the text: throws if it ended inside a record (the writer ends every record with
  // a line end, so a last record without one was cut short, anywhere in any field), inside a
  // quoted field, or before the header. Returns no rows today; kept for callers that stream.
  std::vector<ResultRow> finish();
  const std::vector<std::string>& extra_metric_names() const;
  // The header's column names in file order (empty before the header has been read).
  const std::vector<std::string>& columns() const;
  // The name error messages give the text (a path, "worker 3").
  const std::string& source_name() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Reads a CSV written by ResultsCsvWriter. `source_name` is used in error messages.
std::vector<ResultRow> read_results_csv(std::istream& in, const std::string& source_name,
                                        const ResultsLimits& limits = {});
// The same through a parser the caller keeps, to ask it for the header afterwards (columns(),
// extra_metric_names()): feeds it the whole stream in chunks, then finish(). Throws
// ResultsFormatError naming the parser's source on a read error.
std::vector<ResultRow> read_results_csv(std::istream& in, ResultsCsvParser& parser);
// A file over limits.max_file_bytes is rejected before any of it is read.
std::vector<ResultRow> read_results_file(const std::string& path, const ResultsLimits& limits = {});

}  // namespace flashscope
