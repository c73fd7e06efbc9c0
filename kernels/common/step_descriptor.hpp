// The record a step declares about itself in kernels/versions/vNN/step.hpp: everything the host
// (configs/, the instantiation generator, launch validation, the explorer) needs to know about a
// step, in one place next to its kernel. kernels/versions/steps.hpp lists every descriptor;
// docs/adding-a-step.md walks through writing one. Plain C++ (no CUDA), constexpr data only.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "config.hpp"
#include "problem.hpp"

namespace flashscope {

// Backward steps are numbered from 101 so that they sort after, and never mix with, the forward
// steps 1, 2, …: step 101 is shown as "B1" everywhere a person reads it (the CSV's step column,
// views, messages); the number is only how the tools key it.
inline constexpr int kFirstBackwardStep = 101;
constexpr bool is_backward_step_number(int step) {
  return step >= kFirstBackwardStep;
}
// "7", "B1": a step as people and the CSV's step column spell it.
inline std::string step_name(int step) {
  return is_backward_step_number(step) ? "B" + std::to_string(step - kFirstBackwardStep + 1)
                                       : std::to_string(step);
}

// The two instruction families of the progression: steps on the Ampere track run mma.sync and
// cp.async configs (stages = 0) on sm_80+; steps on the Hopper track run wgmma configs
// (stages >= 1) and are compiled for sm_90a only. The family is independent of the pass: the
// backward track's first steps (B1, B2) are Ampere steps, its later ones Hopper steps
// (docs/spec/backward-track.md §4); `StepDescriptor::pass` keeps the two progressions apart.
enum class Track { ampere, hopper };

// A short constexpr list of small integers (head counts, d_head values, tune axis values).
class IntList {
 public:
  static constexpr std::size_t kCapacity = 8;

  constexpr IntList() = default;
  constexpr IntList(std::initializer_list<int> values) {
    if (values.size() > kCapacity) throw std::length_error("IntList holds at most 8 values");
    for (const int value : values)
      values_[size_++] = value;
  }

  constexpr const int* begin() const { return values_.data(); }
  constexpr const int* end() const { return values_.data() + size_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr bool contains(int value) const {
    for (const int item : *this)
      if (item == value) return true;
    return false;
  }

 private:
  std::array<int, kCapacity> values_{};
  std::size_t size_ = 0;
};

// The dtypes a step runs, in its picks' instantiation order: up to every dtype of kAllDTypes (an
// FP8 step runs e4m3 and, on its 16-bit path, fp16 and bf16: fp8-track.md §1).
class DTypeList {
 public:
  static constexpr std::size_t kCapacity = std::size(kAllDTypes);

  constexpr DTypeList() = default;
  constexpr DTypeList(std::initializer_list<DType> values) {
    if (values.size() > kCapacity)
      throw std::length_error("DTypeList holds at most as many dtypes as kAllDTypes lists");
    for (const DType value : values)
      values_[size_++] = value;
  }

  constexpr const DType* begin() const { return values_.data(); }
  constexpr const DType* end() const { return values_.data() + size_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr bool contains(DType value) const {
    for (const DType item : *this)
      if (item == value) return true;
    return false;
  }

 private:
  std::array<DType, kCapacity> values_{};
  std::size_t size_ = 0;
};

// The configs a step is measured with, in short form (spec §2.2); "" = not recorded. Steps 1–7
// and the Hopper track have a progression config; steps 8–16 the seed's per-GPU picks (spec §4.0);
// the Hopper picks are the fastest tune config flashscope measured on that GPU
// (docs/versions/NN.md gives each measurement).
struct StepPickTexts {
  std::string_view progression;
  std::string_view seed_a100;
  std::string_view seed_rtx3090;
  std::string_view hopper_h200;
  std::string_view hopper_h100;
  // The progression config at each head dimension of `StepDescriptor::d_heads` other than the
  // progression config's own ("" slots unused). The per-GPU picks above are all at that one
  // d_head: a pick at another d_head waits for a measurement.
  std::array<std::string_view, 4> progression_at_other_d_heads{};
  // Configs measured beside the progression config to show what a config feature costs (B5's
  // `deterministic`): the prog set builds them in each dtype and a prog sweep measures them; they
  // never stand for the step (headline_config, the Python module's default kernel).
  std::array<std::string_view, 2> variants{};
};

// A Hopper step's B_c and stages axes at one head dimension, where they differ from the step's
// own: the shared memory and the accumulator registers a tile needs grow with d_head, so each
// d_head has its own range of block shapes worth tuning (the filter rules H1 and H2 still apply).
struct HeadDimTuning {
  int d_head = 0;  // 0: an unused slot
  IntList B_c, stages;
};

// How a step is auto-tuned. An Ampere step is tuned over the seed's auto-tune space (spec §5.2,
// configs/config_sets.cpp) and leaves the axes empty; a Hopper step names its own axes
// (hopper-track.md §2), in nesting order after the dtype, and n_warps follows from B_r and
// whether the step has a producer warpgroup.
struct StepTuning {
  bool by_default = false;  // in default_tune_steps(): the seed re-tuned it (§5.6), or Hopper
  IntList B_r, B_c, stages, consumer_regs;
  int producer_warpgroups = 0;  // Hopper: 1 when the CTA has a producer warpgroup (steps 19+)
  // Per-d_head B_c and stages axes; a d_head without a slot is tuned over B_c and stages above.
  std::array<HeadDimTuning, 4> by_d_head{};

  constexpr const IntList& B_c_at(int d_head) const {
    for (const HeadDimTuning& axes : by_d_head)
      if (axes.d_head == d_head && !axes.B_c.empty()) return axes.B_c;
    return B_c;
  }
  constexpr const IntList& stages_at(int d_head) const {
    for (const HeadDimTuning& axes : by_d_head)
      if (axes.d_head == d_head && !axes.stages.empty()) return axes.stages;
    return stages;
  }
};

// A step's known-bad combinations (spec §7, hopper-track.md §3): the message of the first rule
// that `config` breaks on step `step`, or nullopt when the step's code runs it. Only configs of
// the step's track that pass static_config_violation reach it (launch_validation.cpp checks
// those first).
using StepRuleFunction = std::optional<std::string> (*)(int step, const KernelConfig& config);

// Deliberately not default-constructible and not constructible from nullptr: a descriptor that
// leaves `.rules` out, or sets it to nullptr, does not compile. Every step states its rules
// (kernels/common/step_rules.hpp holds the rule sets several steps share).
class StepRules {
 public:
  constexpr StepRules(StepRuleFunction function) : function_(function) {}  // NOLINT: implicit
  StepRules(std::nullptr_t) = delete;

  std::optional<std::string> operator()(int step, const KernelConfig& config) const {
    return function_(step, config);
  }
  constexpr StepRuleFunction function() const { return function_; }

 private:
  StepRuleFunction function_;
};

// A step's rules on the problem a config runs, beyond its axes (a group of query heads that must
// fit one tile): the message of the first rule `problem` breaks for `config`, or nullopt. Launch
// validation applies it after the step's axes and config rules; most steps have none.
using StepProblemRuleFunction = std::optional<std::string> (*)(int step, const KernelConfig& config,
                                                               const Problem& problem);

// A step that runs some problems with another of its configs than the one that stands for it
// (step 32: B_r = 128 instead of 192 under the mask at short N): the config the step launches
// `problem` with in place of `config` (a progression config of the step, in the problem's dtype and
// d_head), or nullopt to keep `config`. The chosen config must be one the step builds (a pick or
// a variant). The sweep's prog plan and `explorer check` apply it (configs::config_for_problem), so
// a row's config column names the kernel that ran; most steps have none.
using StepProblemConfigFunction = std::optional<KernelConfig> (*)(const KernelConfig& config,
                                                                  const Problem& problem);

// How the generator instantiates the step: each generated translation unit includes
// kernels/versions/<source_folder>/<kernel_header> and calls
// flashscope::<cpp_namespace>::<register_function><config, static head count...>(registry, step),
// which builds the registry entry and with it the step's launcher
// (kernels/common/kernel_entry.cuh).
struct StepKernel {
  std::string_view header = "kernel.cuh";
  std::string_view register_function = "register_kernel";
};

struct StepDescriptor {
  int number;
  std::string_view title;  // the seed's iteration name (spec §1.5) or the Hopper step's technique
  Track track;
  // The pass the step computes: the forward (O, steps 1, 2, ...) or the backward (dQ, dK, dV from
  // O, dO and the log-sum-exp; steps B1, B2, ..., numbered from 101 so that the two progressions
  // never share a number). A backward step registers a backward launcher
  // (KernelEntry::launch_backward, kernels/common/kernel_entry.cuh: make_backward_kernel_entry).
  Pass pass = Pass::forward;
  std::string_view source_folder;  // under kernels/versions/
  std::string_view cpp_namespace;  // inside flashscope::
  // The dtypes and head dimensions configs/ instantiates the step's picks and tune set in. A
  // config or problem of another dtype or d_head is refused by launch validation
  // (unsupported_combination, the axes' refused_by), naming the steps that declare it.
  DTypeList dtypes = {DType::FP16, DType::BF16};
  IntList d_heads = {128};
  // Whether the kernel applies the causal mask when ForwardArgs::causal is 1 (and still runs the
  // non-causal problem when it is 0). Launch validation refuses a causal launch of a step
  // without it, naming the steps that have it; KernelEntry::supports_causal copies it.
  bool causal = false;
  // Whether the kernel runs grouped-query attention: K and V with fewer heads than Q
  // (ForwardArgs::n_kv_heads < n_heads). Launch validation refuses a grouped problem on a step
  // without it, naming the steps that have it.
  bool grouped_kv = false;
  // Whether the kernel writes the row log-sum-exp to ForwardArgs::softmax_lse when that pointer is
  // set (the backward pass needs it); a step without it refuses a launch that asks for it.
  bool writes_lse = false;
  // Whether the kernel runs sequence lengths that are not multiples of B_r and B_c (the last
  // blocks partial: rows past the end zero-filled on the way in, masked and not written back;
  // backward steps B1 and B2). Launch validation requires the multiples of a step without it.
  bool partial_blocks = false;
  // Whether the kernel has the deterministic option (KernelConfig::deterministic: each query
  // block's dQ contributions added in one fixed order; backward-track.md §4, B5). Launch
  // validation refuses a deterministic config on a step without it, naming the steps that have it.
  bool deterministic_dq = false;
  // Whether the kernel reads e4m3 descales per block of sequence positions (ForwardArgs::
  // q_descale_rows, kv_descale_rows; fp8-track.md §4.2, step 31) rather than one per (sample,
  // head). Launch validation refuses block descales on a step without it, naming the steps that
  // have it.
  bool block_descales = false;
  // Head counts a step with a compile-time GMEM row stride is instantiated for (step 16:
  // stride = d_head · heads); empty = any head count.
  IntList static_head_counts;
  StepPickTexts picks;
  StepTuning tuning;
  StepRules rules;
  StepProblemRuleFunction problem_rules = nullptr;
  StepProblemConfigFunction problem_config = nullptr;
  StepKernel kernel;
};

}  // namespace flashscope
