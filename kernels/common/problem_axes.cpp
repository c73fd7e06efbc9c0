#include "kernels/common/problem_axes.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/common/text.hpp"

namespace flashscope {

namespace {

[[noreturn]] void reject(const std::string& message) {
  throw std::invalid_argument(message);
}

// A count or size written as a plain decimal ("16", "4096"); the range is int's.
int parse_count(std::string_view value) {
  bool out_of_range = false;
  const auto parsed = text::parse_decimal(value, INT32_MAX, &out_of_range);
  if (out_of_range)
    reject(text::quoted(value) + " is out of range: at most " + std::to_string(INT32_MAX));
  if (!parsed)
    reject(text::quoted(value) +
           " is not a whole number written in decimal digits (no sign, no leading zero)");
  return static_cast<int>(*parsed);
}

std::string count_text(int value) {
  return std::to_string(value);
}

std::optional<std::string> positive(std::string_view what, int value) {
  if (value > 0) return std::nullopt;
  return std::string(what) + " " + std::to_string(value) + " is not positive";
}

std::string int_list(const IntList& values) {
  std::vector<std::string> items;
  for (const int value : values)
    items.push_back(std::to_string(value));
  return text::join(items, ", ");
}

// The kernels tile d_head in 64-column sub-tiles, and the references take d_head <= 256.
constexpr int kMaxDHead = 256;

// The table itself (a function-local static: other translation units' static initialisers, such
// as the results CSV's column table, read it).
const std::vector<AxisSpec>& axes_table() {
  static const std::vector<AxisSpec> axes = {
      {
          .axis = Axis::dtype,
          .name = "dtype",
          .label = "dtype",
          .sweep_flag = "--dtypes",
          .check_flag = "--dtype",
          .help =
              "fp16, bf16, e4m3 (short name fp8) or a list, e.g. fp16,bf16 (default: fp16,bf16; "
              "e4m3 is the FP8 track's input, docs/spec/fp8-track.md)",
          .check_help = "fp16, bf16 or e4m3 (fp8) (default: the config's, else fp16)",
          .workload = true,
          .optional_in_csv = false,
          .key_role = KeyRole::field,
          .get = [](const Problem& p) { return static_cast<int>(p.dtype); },
          .set = [](Problem& p, int value) { p.dtype = static_cast<DType>(value); },
          .text =
              [](int value) { return std::string(dtype_lower_name(static_cast<DType>(value))); },
          .parse =
              [](std::string_view value) {
                for (const DType dtype : kAllDTypes)
                  if (value == dtype_lower_name(dtype) || value == dtype_name(dtype))
                    return static_cast<int>(dtype);
                // The FP8 track's short name; the CSV still spells the value "e4m3" (text), so a
                // file with "fp8" is refused as not written back the same.
                if (value == "fp8") return static_cast<int>(DType::E4M3);
                reject(text::quoted(value) + " is not a dtype: " + dtype_choices_text());
              },
          .value_violation = [](int value) -> std::optional<std::string> {
            if (is_dtype(value)) return std::nullopt;
            return "dtype " + std::to_string(value) + " is not " + dtype_choices_text();
          },
          .derived = nullptr,
          // Not e4m3: it needs descaled 8-bit inputs and the FP8 steps, so a sweep measures it
          // when asked (--dtypes e4m3), and default plans (and their cell keys) stay as they were.
          .sweep_default =
              [] {
                return std::vector<int>{static_cast<int>(DType::FP16),
                                        static_cast<int>(DType::BF16)};
              },
          .suggested =
              [] {
                std::vector<int> values;
                for (const DType dtype : kAllDTypes)
                  values.push_back(static_cast<int>(dtype));
                return values;
              },
          .fragment = [](const Problem& p) { return std::string(dtype_lower_name(p.dtype)); },
          .value_label = [](const Problem& p) { return std::string(dtype_lower_name(p.dtype)); },
          .phrase =
              [](const Problem& p) {
                // The FP8 input reads as what it is to someone who knows it as "fp8".
                if (p.dtype == DType::E4M3) return std::string("e4m3 (FP8) input");
                return std::string(dtype_lower_name(p.dtype));
              },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (step.dtypes.contains(p.dtype)) return std::nullopt;
            std::vector<std::string> names;
            for (const DType dtype : step.dtypes)
              names.emplace_back(dtype_lower_name(dtype));
            return "runs " + text::join(names, " and ") + " inputs only, not " +
                   std::string(dtype_lower_name(p.dtype));
          },
      },
      {
          .axis = Axis::d_head,
          .name = "d_head",
          .label = "d_head",
          .sweep_flag = "--d-heads",
          .check_flag = "--d-head",
          .help = "head dimensions, e.g. 64,128,256 (default: 128); each step's configs run at "
                  "their own d_head, the references at every one listed",
          .check_help = "head dimension (default: the config's, else 128; without --config the "
                        "step's progression config at that d_head)",
          .workload = true,
          .optional_in_csv = false,
          .key_role = KeyRole::field,
          .get = [](const Problem& p) { return p.d_head; },
          .set = [](Problem& p, int value) { p.d_head = value; },
          .text = &count_text,
          .parse = &parse_count,
          .value_violation = [](int value) -> std::optional<std::string> {
            if (value > 0 && value % 64 == 0 && value <= kMaxDHead) return std::nullopt;
            return "d_head " + std::to_string(value) +
                   " is not a head dimension the kernels and references run: a multiple of 64 up "
                   "to " +
                   std::to_string(kMaxDHead) + " (64, 128, 256)";
          },
          .derived = nullptr,
          .sweep_default = [] { return std::vector<int>{128}; },
          .suggested =
              [] {
                return std::vector<int>{64, 128, 256};
              },
          .fragment =
              [](const Problem& p) {
                return p.d_head == 128 ? std::string() : "d=" + std::to_string(p.d_head);
              },
          .value_label = [](const Problem& p) { return std::to_string(p.d_head); },
          .phrase = [](const Problem& p) { return "d_head " + std::to_string(p.d_head); },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (step.d_heads.contains(p.d_head)) return std::nullopt;
            return "runs d_head " + int_list(step.d_heads) +
                   (step.d_heads.size() == 1 ? " only" : "");
          },
      },
      {
          .axis = Axis::batch,
          .name = "batch",
          .label = "batch",
          .sweep_flag = "--batch",
          .check_flag = "--batch",
          .help = "batch sizes (default: the seed's table, min(16, 65536 / N))",
          .check_help = "batch size (default: the seed's table, min(16, 65536 / N))",
          .workload = false,
          .optional_in_csv = false,
          .key_role = KeyRole::field,
          .get = [](const Problem& p) { return p.batch; },
          .set = [](Problem& p, int value) { p.batch = value; },
          .text = &count_text,
          .parse = &parse_count,
          .value_violation = [](int value) { return positive("batch", value); },
          .derived = [](const Problem& p) { return seed_batch_for(p.seq_len); },
          .sweep_default = nullptr,
          .suggested = [] { return std::vector<int>{}; },
          .fragment = [](const Problem&) { return std::string(); },
          .value_label = [](const Problem& p) { return std::to_string(p.batch); },
          .phrase = [](const Problem& p) { return "batch " + std::to_string(p.batch); },
          .refused_by = [](const StepDescriptor&, const Problem&) -> std::optional<std::string> {
            return std::nullopt;
          },
      },
      {
          .axis = Axis::heads,
          .name = "heads",
          .label = "heads",
          .sweep_flag = "--heads",
          .check_flag = "--heads",
          .help = "query head counts (default: 16)",
          .check_help = "query heads (default: 16)",
          .workload = true,
          .optional_in_csv = false,
          .key_role = KeyRole::field,
          .get = [](const Problem& p) { return p.heads; },
          .set = [](Problem& p, int value) { p.heads = value; },
          .text = &count_text,
          .parse = &parse_count,
          .value_violation = [](int value) { return positive("heads", value); },
          .derived = nullptr,
          .sweep_default = [] { return std::vector<int>{16}; },
          .suggested =
              [] {
                return std::vector<int>{16, 32, 64};
              },
          .fragment =
              [](const Problem& p) {
                return p.heads == 16 ? std::string() : "H=" + std::to_string(p.heads);
              },
          .value_label = [](const Problem& p) { return std::to_string(p.heads); },
          .phrase = [](const Problem& p) { return "heads " + std::to_string(p.heads); },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (step.static_head_counts.empty() || step.static_head_counts.contains(p.heads))
              return std::nullopt;
            return "is compiled for a static GMEM row stride of d_head x heads with heads in {" +
                   int_list(step.static_head_counts) + "}";
          },
      },
      {
          .axis = Axis::heads_kv,
          .name = "heads_kv",
          .label = "KV heads",
          .sweep_flag = "--heads-kv",
          .check_flag = "--heads-kv",
          .help = "K/V head counts for grouped-query attention, each a divisor of every --heads "
                  "(default: --heads, multi-head attention)",
          .check_help = "K/V heads, a divisor of --heads: grouped-query attention when fewer "
                        "(default: --heads)",
          .workload = true,
          .optional_in_csv = true,
          .key_role = KeyRole::tag,
          .get = [](const Problem& p) { return p.heads_kv; },
          .set = [](Problem& p, int value) { p.heads_kv = value; },
          .text = &count_text,
          .parse = &parse_count,
          .value_violation = [](int value) { return positive("heads_kv", value); },
          .derived = [](const Problem& p) { return p.heads; },
          .sweep_default = nullptr,
          .suggested =
              [] {
                return std::vector<int>{1, 8};
              },
          .fragment =
              [](const Problem& p) {
                return p.grouped() ? "kv=" + std::to_string(p.heads_kv) : std::string();
              },
          .value_label =
              [](const Problem& p) {
                if (!p.grouped()) return std::to_string(p.heads_kv) + " (multi-head)";
                return std::to_string(p.heads_kv) + " (groups of " +
                       std::to_string(p.group_size()) + ")";
              },
          .phrase = [](const Problem&) { return std::string("grouped-query attention"); },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (!p.grouped() || step.grouped_kv) return std::nullopt;
            return "runs multi-head attention only (heads_kv = heads), not heads_kv " +
                   std::to_string(p.heads_kv) + " for " + std::to_string(p.heads) + " heads";
          },
      },
      {
          .axis = Axis::causal,
          .name = "causal",
          .label = "causal",
          .sweep_flag = "--causal",
          .check_flag = "--causal",
          .help = "0 (no mask), 1 (causal: query i attends to keys j <= i) or 0,1 (default: 0)",
          .check_help = "the causal problem (query i attends to keys j <= i), checked against the "
                        "references with the mask (--causal or --causal=1; default: 0)",
          .is_switch = true,
          .workload = true,
          .optional_in_csv = true,
          .key_role = KeyRole::tag,
          .get = [](const Problem& p) { return p.causal ? 1 : 0; },
          .set = [](Problem& p, int value) { p.causal = value != 0; },
          .text = [](int value) { return std::string(value != 0 ? "1" : "0"); },
          .parse =
              [](std::string_view value) {
                if (value == "0") return 0;
                if (value == "1") return 1;
                reject(text::quoted(value) + " is not a mask value: 0 (no mask) or 1 (causal)");
              },
          .value_violation = [](int value) -> std::optional<std::string> {
            if (value == 0 || value == 1) return std::nullopt;
            return "causal " + std::to_string(value) + " is not 0 or 1";
          },
          .derived = nullptr,
          .sweep_default = [] { return std::vector<int>{0}; },
          .suggested =
              [] {
                return std::vector<int>{0, 1};
              },
          .fragment =
              [](const Problem& p) { return p.causal ? std::string("causal") : std::string(); },
          .value_label =
              [](const Problem& p) { return std::string(p.causal ? "causal" : "non-causal"); },
          .phrase = [](const Problem&) { return std::string("causal attention"); },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (!p.causal || step.causal) return std::nullopt;
            return "has no causal mask";
          },
      },
      {
          .axis = Axis::pass,
          .name = "pass",
          .label = "pass",
          .sweep_flag = "--pass",
          .check_flag = "--pass",
          .help = "forward, backward or forward,backward (default: forward); each step runs its "
                  "own pass, the references are measured for each",
          .check_help = "forward or backward (default: forward; the step's own pass)",
          .workload = true,
          .optional_in_csv = true,
          .key_role = KeyRole::tag,
          .get = [](const Problem& p) { return static_cast<int>(p.pass); },
          .set = [](Problem& p, int value) { p.pass = static_cast<Pass>(value); },
          .text = [](int value) { return std::string(pass_name(static_cast<Pass>(value))); },
          .parse =
              [](std::string_view value) {
                if (const auto pass = pass_from_string(value)) return static_cast<int>(*pass);
                reject(text::quoted(value) + " is not a pass: forward or backward");
              },
          .value_violation = [](int value) -> std::optional<std::string> {
            if (value == static_cast<int>(Pass::forward) ||
                value == static_cast<int>(Pass::backward))
              return std::nullopt;
            return "pass " + std::to_string(value) + " is not forward or backward";
          },
          .derived = nullptr,
          .sweep_default = [] { return std::vector<int>{static_cast<int>(Pass::forward)}; },
          .suggested =
              [] {
                return std::vector<int>{static_cast<int>(Pass::forward),
                                        static_cast<int>(Pass::backward)};
              },
          .fragment =
              [](const Problem& p) {
                return p.pass == Pass::backward ? std::string("backward") : std::string();
              },
          .value_label = [](const Problem& p) { return std::string(pass_name(p.pass)); },
          .phrase =
              [](const Problem& p) { return "the " + std::string(pass_name(p.pass)) + " pass"; },
          .refused_by = [](const StepDescriptor& step,
                           const Problem& p) -> std::optional<std::string> {
            if (step.pass == p.pass) return std::nullopt;
            return "is a " + std::string(pass_name(step.pass)) + " step, not a " +
                   std::string(pass_name(p.pass)) + " one";
          },
      },
      {
          .axis = Axis::seq_len,
          .name = "seq_len",
          .label = "N",
          .sweep_flag = "--seq-lens",
          .check_flag = "--seq-len",
          .help = "sequence lengths (default: the seed's 512,1024,2048,4096,8192,16384)",
          .check_help = "sequence length N (default: 2048)",
          .workload = false,
          .optional_in_csv = false,
          .key_role = KeyRole::field,
          .get = [](const Problem& p) { return p.seq_len; },
          .set = [](Problem& p, int value) { p.seq_len = value; },
          .text = &count_text,
          .parse = &parse_count,
          .value_violation = [](int value) { return positive("seq_len", value); },
          .derived = nullptr,
          .sweep_default = [] { return seed_seq_lens(); },
          .suggested = [] { return seed_seq_lens(); },
          .fragment = [](const Problem& p) { return "N=" + std::to_string(p.seq_len); },
          .value_label = [](const Problem& p) { return std::to_string(p.seq_len); },
          .phrase = [](const Problem& p) { return "seq_len " + std::to_string(p.seq_len); },
          .refused_by = [](const StepDescriptor&, const Problem&) -> std::optional<std::string> {
            return std::nullopt;
          },
      },
  };
  return axes;
}

}  // namespace

const std::vector<AxisSpec>& problem_axes() {
  return axes_table();
}

const AxisSpec& axis_spec(Axis axis) {
  return axes_table().at(static_cast<std::size_t>(axis));
}

const AxisSpec* find_axis(std::string_view name) {
  for (const AxisSpec& spec : axes_table())
    if (spec.name == name) return &spec;
  return nullptr;
}

std::string problem_key(const Problem& problem) {
  std::vector<std::string> parts;
  for (const AxisSpec& spec : axes_table())
    if (spec.key_role == KeyRole::field) parts.push_back(spec.text(spec.get(problem)));
  for (const AxisSpec& spec : axes_table())
    if (spec.key_role == KeyRole::tag)
      if (std::string tag = spec.fragment(problem); !tag.empty()) parts.push_back(std::move(tag));
  return text::join(parts, "|");
}

std::string problem_record(const Problem& problem) {
  std::vector<std::string> parts;
  for (const AxisSpec& spec : axes_table())
    parts.push_back(std::string(spec.name) + "=" + spec.text(spec.get(problem)));
  return text::join(parts, " ");
}

Problem parse_problem_record(std::string_view record) {
  Problem problem;
  std::vector<bool> seen(axes_table().size(), false);
  for (const std::string& item : text::split_list(record, ' ')) {
    if (item.empty()) continue;
    const std::size_t equals = item.find('=');
    const AxisSpec* spec =
        equals == std::string::npos ? nullptr : find_axis(std::string_view(item).substr(0, equals));
    if (spec == nullptr)
      reject("problem record " + text::quoted(record) + ": " + text::quoted(item) +
             " is not <axis>=<value> with a known axis");
    const auto index = static_cast<std::size_t>(spec->axis);
    if (seen[index])
      reject("problem record " + text::quoted(record) + " names " + std::string(spec->name) +
             " twice");
    seen[index] = true;
    spec->set(problem, spec->parse(std::string_view(item).substr(equals + 1)));
  }
  for (const AxisSpec& spec : axes_table())
    if (!seen[static_cast<std::size_t>(spec.axis)])
      reject("problem record " + text::quoted(record) + " lacks " + std::string(spec.name));
  if (const auto violation = problem_violation(problem))
    reject("problem record " + text::quoted(record) + ": " + *violation);
  return problem;
}

std::string problem_label(const Problem& problem) {
  std::vector<std::string> parts;
  for (const AxisSpec& spec : axes_table())
    if (std::string fragment = spec.fragment(problem); !fragment.empty())
      parts.push_back(std::move(fragment));
  return text::join(parts, " ");
}

std::string workload_label(const Problem& problem) {
  std::vector<std::string> parts;
  for (const AxisSpec& spec : axes_table())
    if (spec.workload)
      if (std::string fragment = spec.fragment(problem); !fragment.empty())
        parts.push_back(std::move(fragment));
  return text::join(parts, " ");
}

Problem workload_of(const Problem& problem) {
  Problem workload = problem;
  for (const AxisSpec& spec : axes_table())
    if (!spec.workload) spec.set(workload, 0);
  return workload;
}

std::optional<AxisRefusal> first_refused_axis(const StepDescriptor& step, const Problem& problem) {
  for (const AxisSpec& spec : axes_table())
    if (auto reason = spec.refused_by(step, problem)) return AxisRefusal{&spec, std::move(*reason)};
  return std::nullopt;
}

namespace {

// The values each axis iterates: the given ones, else its default; a derived axis without given
// values iterates nothing (it is computed per problem).
std::vector<int> iterated_values(const AxisValues& values, const AxisSpec& spec) {
  if (const auto found = values.find(spec.axis); found != values.end()) return found->second;
  if (spec.derived != nullptr) return {};
  return spec.sweep_default();
}

}  // namespace

std::vector<std::string> axis_value_problems(const AxisValues& values) {
  std::vector<std::string> problems;
  for (const auto& [axis, list] : values) {
    const AxisSpec& spec = axis_spec(axis);
    const std::string flag(spec.sweep_flag);
    if (list.empty()) problems.push_back(flag + ": at least one value is needed");
    std::vector<int> seen;
    for (const int value : list) {
      if (const auto violation = spec.value_violation(value))
        problems.push_back(flag + ": " + *violation);
      if (std::find(seen.begin(), seen.end(), value) != seen.end())
        problems.push_back(flag + ": " + spec.text(value) + " is listed twice");
      seen.push_back(value);
    }
  }
  if (!problems.empty()) return problems;
  // Combinations across axes (heads and heads_kv): each distinct rule once.
  std::vector<Problem> partial(1);
  for (const AxisSpec& spec : problem_axes()) {
    const std::vector<int> list = iterated_values(values, spec);
    if (list.empty()) continue;
    std::vector<Problem> next;
    for (const Problem& problem : partial)
      for (const int value : list) {
        Problem more = problem;
        spec.set(more, value);
        next.push_back(more);
      }
    partial = std::move(next);
  }
  for (Problem& problem : partial) {
    for (const AxisSpec& spec : problem_axes())
      if (spec.derived != nullptr && !values.contains(spec.axis))
        spec.set(problem, spec.derived(problem));
    if (problem.seq_len <= 0) problem.seq_len = 1;  // only the cross-axis rules are asked here
    if (const auto violation = problem_violation(problem)) {
      std::string message = std::string(axis_spec(Axis::heads_kv).sweep_flag) + " / " +
                            std::string(axis_spec(Axis::heads).sweep_flag) + ": " + *violation;
      if (std::find(problems.begin(), problems.end(), message) == problems.end())
        problems.push_back(std::move(message));
    }
  }
  return problems;
}

std::vector<Problem> expand_problems(const AxisValues& values) {
  if (const std::vector<std::string> problems = axis_value_problems(values); !problems.empty())
    throw std::invalid_argument(text::join(problems, "\n"));
  std::vector<Problem> problems(1);
  for (const AxisSpec& spec : problem_axes()) {
    const std::vector<int> list = iterated_values(values, spec);
    if (list.empty()) continue;
    std::vector<Problem> next;
    for (const Problem& problem : problems)
      for (const int value : list) {
        Problem more = problem;
        spec.set(more, value);
        next.push_back(more);
      }
    problems = std::move(next);
  }
  for (Problem& problem : problems)
    for (const AxisSpec& spec : problem_axes())
      if (spec.derived != nullptr && !values.contains(spec.axis))
        spec.set(problem, spec.derived(problem));
  return problems;
}

const std::vector<int>& seed_seq_lens() {
  static const std::vector<int> lengths = {512, 1024, 2048, 4096, 8192, 16384};
  return lengths;
}

int seed_batch_for(int seq_len) {
  if (seq_len <= 0) return 1;
  return std::clamp(65536 / seq_len, 1, 16);
}

}  // namespace flashscope
