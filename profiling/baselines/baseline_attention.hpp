// The speed baselines: external attention implementations that flashscope times next to its own
// kernels, FlashAttention-2 as PyTorch ships it ("fa2") and cuDNN's fused SDPA ("cudnn"); the
// forward, and where a baseline has it, the backward (a problem with pass = backward).
// Both are optional at build time; built_baselines() says which this binary has.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/config.hpp"
#include "kernels/common/problem.hpp"

namespace flashscope {

// An external attention forward on contiguous tensors in the layout of our kernels (Q and O
// [batch, seq_len, heads, d_head], K and V [batch, seq_len, heads_kv, d_head]), softmax scale
// 1/sqrt(d_head), fp16 or bf16 in and out (a baseline with an FP8 forward also e4m3 in, bf16 out:
// run_e4m3); with the causal mask (query i attends to keys j <= i)
// when the prepared problem's `causal` is set, grouped-query attention when its heads_kv < heads.
// The buffers of one backward (docs/spec/backward-track.md §1): the forward's inputs and output,
// dO, the forward's fp32 natural-log row log-sum-exp [batch, heads, seq_len], and the gradients to
// write, laid out as the forward's tensors.
struct BaselineBackwardBuffers {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* d_o;
  const float* lse;
  void* dq;
  void* dk;
  void* dv;
};

// The fp32 descales of e4m3 inputs (docs/spec/fp8-track.md §1), device pointers: q [batch, heads],
// k and v [batch, heads_kv], row-major. An element's real value is its descale x its stored value.
struct BaselineDescales {
  const float* q;
  const float* k;
  const float* v;
};

class BaselineAttention {
 public:
  virtual ~BaselineAttention() = default;

  virtual std::string_view name() const = 0;  // "fa2" or "cudnn"
  // What exactly runs, e.g. "cuDNN 9.19.0 SDPA forward, backend API, unified graph, engine 9,
  // workspace 256 B". The engine is known only after prepare().
  virtual std::string description() const = 0;
  // The library that computes it and its version as this process loaded it, e.g. "cuDNN 9.19.0"
  // or "PyTorch 2.11.0": the results' reference_version column.
  virtual std::string version() const = 0;
  // Which way in ran, as a short token recorded in the results (the fa2_entry_point column):
  // FA2 "in_place" or "sdpa_op" (the latter also copies O inside the timed region), cuDNN's
  // graph form "unified" or "composite" (known after prepare()).
  virtual std::string variant() const = 0;

  // Builds plans/graphs for this problem on the current device (not timed). Throws
  // BaselineUnavailable, with the reason, if the problem is one it does not run.
  virtual void prepare(const Problem& problem) = 0;

  // Enqueues one forward on `stream`; the caller times it with events. q, k, v and o are device
  // pointers laid out as prepared. Throws std::logic_error if prepare() has not succeeded.
  virtual void run(const void* q, const void* k, const void* v, void* o, cudaStream_t stream) = 0;

  // The forward of a problem prepared with dtype e4m3: q, k, v hold e4m3 codes, o is bf16
  // (output_dtype; deliver_e4m3_output says where it may land elsewhere), `descales` their scales.
  // A baseline without an FP8 forward refuses such a problem in prepare() (BaselineUnavailable), so
  // this is only reached after an e4m3 prepare; it may throw BaselineUnavailable on its first call
  // when the descales are ones it cannot take (the harness makes that call untimed, in its check).
  virtual void run_e4m3(const void* q, const void* k, const void* v, void* o,
                        const BaselineDescales& descales, cudaStream_t stream) {
    (void)q;
    (void)k;
    (void)v;
    (void)o;
    (void)descales;
    (void)stream;
    throw std::logic_error(std::string(name()) + ": run_e4m3() without an e4m3 prepare()");
  }

  // Writes O of the last run_e4m3() into `o` as bf16 where the baseline computes it in another
  // form (cuDNN's FP8 attention on Hopper writes O in e4m3 into a buffer of its own). The harness
  // calls it after the checked launch only, never between timed launches. Default: nothing.
  virtual void deliver_e4m3_output(void* o, cudaStream_t stream) {
    (void)o;
    (void)stream;
  }

  // Enqueues one whole backward (everything after the forward) for a problem prepared with
  // pass = backward. A baseline without a backward refuses such a problem in prepare()
  // (BaselineUnavailable, with the reason), so this is only reached after a backward prepare.
  virtual void run_backward(const BaselineBackwardBuffers& buffers, cudaStream_t stream) {
    (void)buffers;
    (void)stream;
    throw std::logic_error(std::string(name()) + ": run_backward() without a backward prepare()");
  }

  // Writes the gradients of the last run_backward() into `buffers` where the baseline computes
  // them into memory of its own (a framework op that allocates its results and has no out= form).
  // The harness calls it after the checked launch only, never between timed launches, so the
  // copies are neither timed nor skipped by the check. Default: nothing (written in place).
  virtual void deliver_backward_outputs(const BaselineBackwardBuffers& buffers,
                                        cudaStream_t stream) {
    (void)buffers;
    (void)stream;
  }
};

class BaselineUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Names of the baselines compiled into this binary, in a fixed order ("fa2", "cudnn").
std::vector<std::string> built_baselines();

// Every name make_baseline() knows, built or not.
std::vector<std::string> known_baselines();

// Throws BaselineUnavailable for a known baseline that is not built (saying why CMake left it
// out) and for an unknown name (listing the known ones). Needs no GPU.
std::unique_ptr<BaselineAttention> make_baseline(std::string_view name);

}  // namespace flashscope
