// The table of axes: every field of the attention problem (problem.hpp) declared once, with its
// name, its spelling on the command line and in the results CSV, how a file written before it
// existed reads, how it labels units, keys and views, and which steps run which values (from their
// descriptors). The sweep's options, plan, cell keys and unit names, the CSV reader and writer, the
// merge/compare/drift pairings, report block names, the GUI's selectors and run panel, `explorer
// check` and the Python module's argument checks all iterate this table; adding an axis is an
// entry here plus the kernels that run it (docs/adding-an-axis.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/problem.hpp"
#include "kernels/common/step_descriptor.hpp"

namespace flashscope {

// In the table's order: the order of a plan cell key's fields and of the sweep's nested loops
// (seq_len innermost; batch follows N).
enum class Axis : int { dtype, d_head, batch, heads, heads_kv, causal, pass, seq_len };

// How an axis appears in a plan cell key ("step|config|fp16|128|16|16|4096|causal"): a field
// written for every value, or a tag written only when the value is not the axis's plain one, so
// that the keys of problems that existed before the axis — hence shards and merges of older
// plans — are unchanged.
enum class KeyRole { field, tag };

struct AxisSpec {
  Axis axis;
  std::string_view name;   // the CSV column and the identifier used by views and Python
  std::string_view label;  // for people: "d_head", "KV heads"
  // The sweep option taking a comma-separated list of values ("--heads-kv 8,16"), and the
  // single-value option of `explorer check` ("" where check takes the value from elsewhere: the
  // dtype and d_head come from the config).
  std::string_view sweep_flag;
  std::string_view check_flag;
  std::string_view help;        // the sweep option's values and default
  std::string_view check_help;  // the check option's value and default
  // A switch (0 or 1): its check option may be given without a value, meaning 1 (--causal).
  bool is_switch = false;
  // A workload axis partitions every view: rows of two values are different problems, never
  // aggregated together (a view shows one value at a time). seq_len is the x axis and batch
  // follows it, so they are not.
  bool workload;
  // Files written before the axis existed lack its CSV column; an absent column reads as
  // `derived` (or as the plain value).
  bool optional_in_csv;
  KeyRole key_role;

  int (*get)(const Problem& problem);
  void (*set)(Problem& problem, int value);
  // The spelling of a value on the command line and in the CSV ("fp16", "64", "1", "backward"),
  // and its inverse, which throws std::invalid_argument naming the text and the rule.
  std::string (*text)(int value);
  int (*parse)(std::string_view text);
  // The rule a value breaks on its own (d_head 96: not a multiple of 64), nullopt when none;
  // rules across axes are problem_violation()'s.
  std::optional<std::string> (*value_violation)(int value);
  // The value an axis takes when it is not given: from the rest of the problem (heads_kv =
  // heads, batch = the seed's batch for N), or nullptr where the sweep has a fixed default.
  int (*derived)(const Problem& problem);
  // The sweep's default values where `derived` is nullptr (dtype: fp16, bf16; d_head: 128 ...).
  std::vector<int> (*sweep_default)();
  // The values a chooser (the GUI's run panel) offers besides the derived one; a user may still
  // type any other on the command line.
  std::vector<int> (*suggested)();
  // The fragment a unit name, a row label and a report block name carry for this axis' value:
  // "fp16", "d=64", "H=32", "kv=8", "causal", "backward", "N=4096"; empty for the plain value
  // (d_head 128, 16 heads, no grouping, no mask, forward), so older names are unchanged.
  std::string (*fragment)(const Problem& problem);
  // The value as a selector lists it, given the rest of the problem: "128", "non-causal",
  // "8 (groups of 4)", "backward".
  std::string (*value_label)(const Problem& problem);
  // The value in a sentence: "causal attention", "d_head 64", "grouped-query attention",
  // "the backward pass" — what "runs on steps …" is said of.
  std::string (*phrase)(const Problem& problem);
  // Why `step` cannot run this axis' value of `problem` (the descriptor does not declare it), as
  // the end of a sentence starting with the step: "has no causal mask"; nullopt when it can.
  std::optional<std::string> (*refused_by)(const StepDescriptor& step, const Problem& problem);
};

// Values chosen per axis (by the command line, the GUI's run panel, a test), typed and in the
// order given; an axis without an entry takes its sweep default or is derived.
using AxisValues = std::map<Axis, std::vector<int>>;

// Every axis, in the order of `Axis`.
const std::vector<AxisSpec>& problem_axes();
const AxisSpec& axis_spec(Axis axis);
// The axis whose name is `name`, or nullptr.
const AxisSpec* find_axis(std::string_view name);

// A problem's plan-cell-key part: the `field` axes in table order, then the non-empty tags of the
// `tag` axes, '|'-separated: "fp16|128|16|16|4096", "fp16|128|16|32|4096|kv=8|causal".
std::string problem_key(const Problem& problem);
// Every axis as name=text, space-separated, in table order ("dtype=fp16 d_head=128 batch=16
// heads=16 heads_kv=16 causal=0 pass=forward seq_len=4096"): how a problem travels as data (the
// sweep parent's plan to its workers). parse_problem_record is its inverse and throws
// std::invalid_argument naming the text and the rule (a missing or repeated axis, a bad value,
// a problem that breaks problem_violation).
std::string problem_record(const Problem& problem);
Problem parse_problem_record(std::string_view record);
// For people: the fragments of every axis, space-separated ("fp16 d=64 causal N=4096").
std::string problem_label(const Problem& problem);
// The fragments of the workload axes only ("bf16 H=32 kv=8 causal"), "" for plain values except
// the dtype, which always shows.
std::string workload_label(const Problem& problem);
// The problem with its non-workload axes (seq_len, batch) cleared: what views partition by.
Problem workload_of(const Problem& problem);

// The first axis whose value of `problem` `step` refuses, with the reason ("has no causal mask");
// nullopt when it runs every axis' value. configs/ turns it into a sentence naming the steps that
// do run the value (configs::step_refusal_message).
struct AxisRefusal {
  const AxisSpec* axis;
  std::string reason;
};
std::optional<AxisRefusal> first_refused_axis(const StepDescriptor& step, const Problem& problem);

// The problems of the product of every axis' values (the given ones, else the axis' sweep
// default), nested in table order with seq_len innermost; a derived axis without given values is
// computed from the others (batch from N, heads_kv = heads). Throws std::invalid_argument naming
// the option and the rule for an empty or repeated value list, a value that breaks its axis' rule
// and a combination that breaks problem_violation (--heads-kv 8 with --heads 12).
std::vector<Problem> expand_problems(const AxisValues& values);
// The same checks without expanding: one message per problem, "--heads-kv: ..." first the flag.
std::vector<std::string> axis_value_problems(const AxisValues& values);

// The sequence lengths the seed measured and its batch for each (spec §1.2): batch(N) =
// min(16, 65536 / N) = 16, 16, 16, 16, 8, 4 for N = 512 … 16384.
const std::vector<int>& seed_seq_lens();
int seed_batch_for(int seq_len);

}  // namespace flashscope
