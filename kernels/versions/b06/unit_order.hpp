// The order in which backward step B5's persistent main kernel takes its work units
// (backward-track.md §4, B5). Host-compilable: tests/common/test_backward_unit_order.cpp checks
// that every unit is handed out once and that each unit's dQ predecessors come before it.
#pragma once

#include "kernels/common/host_device.hpp"

namespace flashscope::b06 {

// One work unit of the persistent main kernel: a KV block of one (sample, head) sequence.
struct KvUnit {
  int kv_block;
  int head;
  int sample;
};

// The order in which the main kernel's CTAs take the units (the i-th unit taken is unit(i); a
// launch's CTA b takes unit b first, then whatever a global counter hands it, so each CTA takes
// units in increasing order). Under the causal mask KV block j has n_q_blocks - first_q_block(j)
// query blocks, most for j = 0: taking the lowest KV blocks first is the longest-processing-time
// order, and the light units (the last KV blocks) fill the grid's tail instead of a heavy one
// running alone at the end. Strictly by KV block over every sequence, though, the CTAs in flight
// would each work on another sequence, each streaming its own Q and dO and adding to its own dQ
// accumulator: at N = 8192 and d_head 128, 132 sequences of 4 MB each, far more than the L2
// holds. So the units come in sections of `sequences` consecutive sequences, just enough that a
// section has at least one unit a CTA (ceil(CTAs / KV blocks)), KV block by KV block within a
// section (heaviest first) and sequence by sequence within a KV block. Without the mask every
// unit weighs the same and the order only keeps the L2 footprint of a section.
//
// The order also makes every unit's dQ predecessors (the same sequence's lower KV blocks, which
// the deterministic option waits for) come before it; kernel.cuh's proof that those waits never
// deadlock rests on that.
struct KvUnitOrder {
  int n_kv_blocks;
  int n_heads;
  int batch;
  int sequences;  // per section

  FS_HOST_DEVICE static constexpr KvUnitOrder make(int n_kv_blocks, int n_heads, int batch,
                                                   int ctas) {
    const int total = n_heads * batch;
    int sequences = (ctas + n_kv_blocks - 1) / n_kv_blocks;
    if (sequences < 1) sequences = 1;
    if (sequences > total) sequences = total;
    return {n_kv_blocks, n_heads, batch, sequences};
  }
  FS_HOST_DEVICE constexpr int count() const { return n_kv_blocks * n_heads * batch; }
  FS_HOST_DEVICE constexpr KvUnit unit(int linear) const {
    const int section_units = sequences * n_kv_blocks;
    const int section = linear / section_units;
    const int in_section = linear - section * section_units;
    const int first_sequence = section * sequences;
    const int remaining = n_heads * batch - first_sequence;
    const int here = remaining < sequences ? remaining : sequences;  // the last section's may be
                                                                     // fewer
    const int sequence = first_sequence + in_section % here;
    return {in_section / here, sequence % n_heads, sequence / n_heads};
  }
};

}  // namespace flashscope::b06
