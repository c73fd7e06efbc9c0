// The attention problem: one value that says what is computed, independent of which kernel
// computes it or how fast. Every layer carries it whole — launch validation, the references, the
// sweep's plan items and units, result rows, filters, reports, the GUI and the Python module — and
// no code re-lists its fields: the table of axes (problem_axes.hpp) is the one place that knows
// them, their text, their CSV columns and which steps run which values.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/common/config.hpp"

namespace flashscope {

// Which pass of attention (Pass, declared in config.hpp): the forward computes O (and optionally
// the row log-sum-exp); the backward computes dQ, dK, dV from Q, K, V, O, dO and the log-sum-exp
// (docs/spec/backward-track.md).
std::string_view pass_name(Pass pass);                        // "forward" / "backward"
std::optional<Pass> pass_from_string(std::string_view text);  // the names above, exactly

struct Problem {
  DType dtype = DType::FP16;
  int batch = 1;
  int seq_len = 0;  // queries and keys have one length (bottom-right causal alignment is moot)
  int heads = 1;    // query heads
  // K and V heads. Equal to `heads` is multi-head attention; fewer is grouped-query attention:
  // query head h reads K/V head h / (heads / heads_kv), so `heads` must be a multiple of it.
  int heads_kv = 1;
  int d_head = 128;
  // Query i attends to keys j <= i: another problem than the same shape without the mask, with
  // other outputs and half the work.
  bool causal = false;
  Pass pass = Pass::forward;

  // The order of the table of axes is not this one; this only has to be a total order.
  auto operator<=>(const Problem&) const = default;
  bool operator==(const Problem&) const = default;

  // Query heads per K/V head (1 for multi-head attention). Only meaningful for a problem that
  // passes problem_violation().
  int group_size() const { return heads_kv > 0 ? heads / heads_kv : 0; }
  bool grouped() const { return heads_kv != heads; }
  // Elements of Q (and O, dO, dQ): [batch, seq_len, heads, d_head].
  std::int64_t query_elements() const {
    return static_cast<std::int64_t>(batch) * seq_len * heads * d_head;
  }
  // Elements of K and V (and dK, dV): [batch, seq_len, heads_kv, d_head].
  std::int64_t key_value_elements() const {
    return static_cast<std::int64_t>(batch) * seq_len * heads_kv * d_head;
  }
};

// A multi-head problem (heads_kv = heads): the shape every step 1–25 runs.
Problem multi_head_problem(DType dtype, int batch, int seq_len, int heads, int d_head,
                           bool causal = false);

// The first rule the problem breaks, as a sentence naming the value ("heads 12 is not a multiple
// of heads_kv 8 ..."); nullopt for a well-formed problem. Kernel-independent: which kernels run it
// is launch validation's business.
std::optional<std::string> problem_violation(const Problem& problem);

// FLOP of one problem (docs/spec/kernel-progression.md §1.3, backward-track.md §1): the forward's
// two GEMMs count 4·B·H·N²·d, the backward's five 10·B·H·N²·d (2.5 × the forward); the causal
// problem counts half (the masked triangle is work not done). The K/V head count does not change
// the arithmetic: every query head still meets every key.
double matmul_flops(const Problem& problem);
// Exponentials of one problem: one per score the softmax keeps, B·H·N² (half with the mask, as
// the FLOP count), in either pass (a backward step recomputes each probability once). With the
// FLOP count it gives a row's ex2 rate: TFLOP/s × softmax_exponentials / matmul_flops.
double softmax_exponentials(const Problem& problem);
// The seed's "Attn TFLOP/s" count of a forward problem, B·H·(4·N²·d + 6·N²), halved with the
// mask; a backward problem counts as matmul_flops (the seed had no backward).
double seed_attention_flops(const Problem& problem);

}  // namespace flashscope
