// The table of axes (kernels/common/problem_axes.hpp): each entry's spellings round-trip, the
// plain value of an axis added later leaves keys, labels and records of older problems as they
// were, problems travel as records, and the product of the values is expanded and checked as
// docs/adding-an-axis.md says.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels/common/problem_axes.hpp"

using namespace flashscope;

namespace {

Problem grouped(int heads, int heads_kv) {
  Problem p = multi_head_problem(DType::BF16, 4, 2048, heads, 128);
  p.heads_kv = heads_kv;
  return p;
}

std::optional<std::string> no_rules(int, const KernelConfig&) {
  return std::nullopt;
}

}  // namespace

TEST_CASE("every axis is in the table once, in Axis order, with its options and texts") {
  const auto& axes = problem_axes();
  std::set<std::string_view> names, flags;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const AxisSpec& spec = axes[i];
    CAPTURE(spec.name);
    CHECK(static_cast<std::size_t>(spec.axis) == i);
    CHECK(&axis_spec(spec.axis) == &spec);
    CHECK(find_axis(spec.name) == &spec);
    CHECK(names.insert(spec.name).second);
    CHECK(flags.insert(spec.sweep_flag).second);
    CHECK(spec.sweep_flag.starts_with("--"));
    CHECK_FALSE(spec.label.empty());
    CHECK_FALSE(spec.help.empty());
    // An axis is given on the command line, or derived from the others, or has a default.
    CHECK((spec.derived != nullptr || spec.sweep_default != nullptr));
    // Every value a chooser suggests, and every default, spells and parses back to itself.
    std::vector<int> values = spec.suggested ? spec.suggested() : std::vector<int>{};
    if (spec.sweep_default) {
      const std::vector<int> defaults = spec.sweep_default();
      values.insert(values.end(), defaults.begin(), defaults.end());
    }
    // A derived axis (batch, heads_kv) takes the value the rest of a problem gives it.
    if (spec.derived)
      values.push_back(spec.derived(multi_head_problem(DType::FP16, 8, 8192, 16, 64)));
    CHECK_FALSE(values.empty());
    for (const int value : values) {
      CAPTURE(value);
      CHECK(spec.parse(spec.text(value)) == value);
      CHECK_FALSE(spec.value_violation(value).has_value());
    }
  }
  CHECK(find_axis("no_such_axis") == nullptr);
}

TEST_CASE(
    "a plain problem's key, label and workload label are what they were before the new axes") {
  // The keys of plans made before heads_kv, causal and pass existed: shards and merges of those
  // plans must keep matching (docs/adding-an-axis.md, "Compatibility").
  const Problem plain = multi_head_problem(DType::FP16, 16, 4096, 16, 128);
  CHECK(problem_key(plain) == "fp16|128|16|16|4096");
  CHECK(problem_label(plain) == "fp16 N=4096");
  CHECK(workload_label(plain) == "fp16");
  // A value other than the plain one adds a tag after the fields, in table order.
  Problem tagged = grouped(32, 8);
  tagged.causal = true;
  CHECK(problem_key(tagged) == "bf16|128|4|32|2048|kv=8|causal");
  CHECK(problem_label(tagged) == "bf16 H=32 kv=8 causal N=2048");
  CHECK(workload_label(tagged) == "bf16 H=32 kv=8 causal");
  // Two problems that differ in one axis never share a key.
  CHECK(problem_key(grouped(32, 8)) != problem_key(grouped(32, 4)));
  CHECK(problem_key(grouped(32, 32)) != problem_key(grouped(32, 8)));
}

TEST_CASE("heads_kv: its labels, its default and the rule across axes") {
  const AxisSpec& kv = axis_spec(Axis::heads_kv);
  CHECK(kv.value_label(grouped(32, 8)) == "8 (groups of 4)");
  CHECK(kv.value_label(grouped(32, 32)) == "32 (multi-head)");
  CHECK(kv.fragment(grouped(32, 32)).empty());
  CHECK(kv.derived(grouped(32, 8)) == 32);
  CHECK(problem_violation(grouped(12, 8)).value_or("") ==
        "heads 12 is not a multiple of heads_kv 8: each K/V head serves a whole group of query "
        "heads (grouped-query attention)");
  CHECK(kv.value_violation(0).value_or("") == "heads_kv 0 is not positive");
  CHECK_THROWS_AS(kv.parse("eight"), std::invalid_argument);
}

TEST_CASE("dtype: e4m3 (short name fp8) spells, parses, keys and is refused by name") {
  const AxisSpec& dtype = axis_spec(Axis::dtype);
  const int e4m3 = static_cast<int>(DType::E4M3);
  CHECK(dtype.text(e4m3) == "e4m3");
  CHECK(dtype.parse("e4m3") == e4m3);
  CHECK(dtype.parse("E4M3") == e4m3);
  // The short name reads as e4m3 and writes as e4m3: the CSV never holds "fp8".
  CHECK(dtype.parse("fp8") == e4m3);
  CHECK_THROWS_WITH_AS(dtype.parse("fp32"), "'fp32' is not a dtype: fp16, bf16 or e4m3 (fp8)",
                       std::invalid_argument);
  CHECK(dtype.value_violation(6).value_or("") == "dtype 6 is not fp16, bf16 or e4m3 (fp8)");
  // Offered by the GUI's run panel (suggested), not measured by default: default plans and their
  // cell keys stay as they were.
  const std::vector<int> suggested = dtype.suggested();
  CHECK(std::find(suggested.begin(), suggested.end(), e4m3) != suggested.end());
  const std::vector<int> defaults = dtype.sweep_default();
  CHECK(std::find(defaults.begin(), defaults.end(), e4m3) == defaults.end());
  const Problem fp8 = multi_head_problem(DType::E4M3, 16, 4096, 16, 128);
  CHECK_FALSE(problem_violation(fp8));
  CHECK(problem_key(fp8) == "e4m3|128|16|16|4096");
  CHECK(problem_label(fp8) == "e4m3 N=4096");
  CHECK(parse_problem_record(problem_record(fp8)) == fp8);
  CHECK(dtype.phrase(fp8) == "e4m3 (FP8) input");
  // A step's descriptor lists the dtypes it runs; the refusal names them.
  StepDescriptor step{.number = 99,
                      .title = "test step",
                      .track = Track::hopper,
                      .source_folder = "v99",
                      .cpp_namespace = "v99",
                      .rules = &no_rules};
  CHECK(dtype.refused_by(step, fp8).value_or("") == "runs fp16 and bf16 inputs only, not e4m3");
  const std::optional<AxisRefusal> refusal = first_refused_axis(step, fp8);
  REQUIRE(refusal);
  CHECK(refusal->axis == &dtype);
  step.dtypes = {DType::E4M3, DType::FP16, DType::BF16};
  CHECK_FALSE(dtype.refused_by(step, fp8));
  CHECK_FALSE(first_refused_axis(step, fp8));
}

TEST_CASE("a problem travels as a record and back, and a bad record is refused by name") {
  Problem p = grouped(64, 8);
  p.causal = true;
  const std::string record = problem_record(p);
  CHECK(record ==
        "dtype=bf16 d_head=128 batch=4 heads=64 heads_kv=8 causal=1 pass=forward seq_len=2048");
  CHECK(parse_problem_record(record) == p);
  CHECK_THROWS_WITH(parse_problem_record("dtype=fp16"), doctest::Contains("lacks d_head"));
  CHECK_THROWS_WITH(parse_problem_record(record + " heads=8"),
                    doctest::Contains("names heads twice"));
  CHECK_THROWS_WITH(parse_problem_record("shape=1 " + record),
                    doctest::Contains("'shape=1' is not <axis>=<value> with a known axis"));
  const std::string bad_group =
      "dtype=fp16 d_head=128 batch=1 heads=12 heads_kv=8 causal=0 pass=forward seq_len=512";
  CHECK_THROWS_WITH(parse_problem_record(bad_group),
                    doctest::Contains("heads 12 is not a multiple of heads_kv 8"));
}

TEST_CASE("the product of the values: derived axes follow the others, bad combinations are named") {
  AxisValues values{{Axis::dtype, {static_cast<int>(DType::FP16)}},
                    {Axis::heads, {16, 32}},
                    {Axis::seq_len, {512, 16384}}};
  std::vector<Problem> problems = expand_problems(values);
  REQUIRE(problems.size() == 4);
  for (const Problem& p : problems) {
    CHECK(p.heads_kv == p.heads);  // derived: multi-head attention
    CHECK(p.batch == seed_batch_for(p.seq_len));
    CHECK(p.d_head == 128);
  }
  CHECK(problems[0].seq_len == 512);  // seq_len innermost
  CHECK(problems[1].seq_len == 16384);
  values[Axis::heads_kv] = {8};
  problems = expand_problems(values);
  for (const Problem& p : problems)
    CHECK(p.heads_kv == 8);
  values[Axis::heads] = {12};
  const std::vector<std::string> found = axis_value_problems(values);
  REQUIRE_FALSE(found.empty());
  CHECK(
      found.front().starts_with("--heads-kv / --heads: heads 12 is not a multiple of heads_kv 8"));
  CHECK_THROWS_AS(expand_problems(values), std::invalid_argument);
  values[Axis::heads] = {16, 16};
  CHECK_FALSE(axis_value_problems(values).empty());  // a value given twice
}
