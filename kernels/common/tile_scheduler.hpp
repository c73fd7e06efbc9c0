// Which CTA computes which output tile. Steps 1–21 launch one CTA per tile — grid (query blocks,
// heads, batch) — and read their tile from blockIdx inside the kernel. From step 22 the kernels
// are persistent: about one CTA per SM loops over the tiles a scheduler hands it, so that one
// tile's epilogue and the next tile's loads overlap and no CTA is launched (and its prologue
// exposed) per tile. The scheduler is this unit; the kernel only asks it for its next tile.
//
// Host-compilable (the host tests check that every tile is handed out exactly once); the kernels
// construct the scheduler from blockIdx.x and gridDim.x.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace flashscope::scheduling {

// One output tile: B_r query rows of one (sample, head).
struct AttentionTile {
  int query_block;
  int head;
  int sample;
};

// The tiles of one launch, numbered 0 .. count() - 1 with the query block fastest, then the head,
// then the sample: the order in which steps 1–21's grid (x, y, z) issued its CTAs, so consecutive
// tiles share the K and V of one head, which the L2 then serves to every CTA of the head.
struct TileSpace {
  int n_query_blocks;
  int n_heads;
  int batch;

  FS_HOST_DEVICE constexpr int count() const { return n_query_blocks * n_heads * batch; }
  FS_HOST_DEVICE constexpr AttentionTile tile(int linear) const {
    const int query_block = linear % n_query_blocks;
    const int head_and_sample = linear / n_query_blocks;
    return {query_block, head_and_sample % n_heads, head_and_sample / n_heads};
  }
};

// Static persistent schedule: CTA b of a grid of g takes tiles b, b + g, b + 2g, ... Every CTA
// gets ceil or floor(count / g) tiles, and the tiles in flight at any moment are a contiguous
// window of the numbering (good for the L2, see TileSpace). The work is known before the launch,
// so no atomic counter is needed; a schedule for uneven tiles (the causal triangle) would order
// the numbering instead.
class PersistentTileScheduler {
 public:
  FS_HOST_DEVICE constexpr PersistentTileScheduler(const TileSpace& space, int first_tile,
                                                   int cta_count)
      : space_(space), linear_(first_tile), stride_(cta_count) {}

  FS_HOST_DEVICE constexpr bool has_tile() const { return linear_ < space_.count(); }
  FS_HOST_DEVICE constexpr AttentionTile tile() const { return space_.tile(linear_); }
  FS_HOST_DEVICE constexpr int linear_index() const { return linear_; }
  // Whether the tile after the current one exists (the producer prefetches into it).
  FS_HOST_DEVICE constexpr bool has_next_tile() const { return linear_ + stride_ < space_.count(); }
  FS_HOST_DEVICE constexpr void advance() { linear_ += stride_; }

 private:
  TileSpace space_;
  int linear_;
  int stride_;
};

// A static persistent schedule for the causal triangle (step 24). Under the causal mask query
// block q of n needs q + 1 of n KV blocks (at B_c = B_r), so the tiles of PersistentTileScheduler
// are unequal: a CTA's share depends on which query blocks its stride lands on, and the CTAs that
// drew the long ones finish last while the others idle. This schedule hands out work units of
// equal cost instead: unit u of a (sample, head) pairs the heaviest remaining query block with
// the lightest -- blocks n - 1 - u and u, heavy first -- so every unit costs n + 1 blocks (an odd
// n leaves the middle block alone, half a unit). CTA b takes units b, b + g, ... as
// PersistentTileScheduler takes tiles, and runs the two tiles of a unit one after the other.
// Unpaired (`pair_query_blocks` false: a launch without the mask, whose tiles are equal) it hands
// out PersistentTileScheduler's tiles in its order.
class PairedTileScheduler {
 public:
  FS_HOST_DEVICE constexpr PairedTileScheduler(const TileSpace& space, bool pair_query_blocks,
                                               int first_unit, int cta_count)
      : space_(space),
        units_per_head_(pair_query_blocks ? (space.n_query_blocks + 1) / 2 : space.n_query_blocks),
        paired_(pair_query_blocks),
        unit_(first_unit),
        stride_(cta_count) {}

  // Work units of a launch: what persistent_grid_size must not exceed.
  FS_HOST_DEVICE static constexpr int unit_count(const TileSpace& space, bool pair_query_blocks) {
    return (pair_query_blocks ? (space.n_query_blocks + 1) / 2 : space.n_query_blocks) *
           space.n_heads * space.batch;
  }

  FS_HOST_DEVICE constexpr bool has_tile() const {
    return unit_ < units_per_head_ * space_.n_heads * space_.batch;
  }
  FS_HOST_DEVICE constexpr AttentionTile tile() const {
    const int pair = unit_ % units_per_head_;
    const int head_and_sample = unit_ / units_per_head_;
    const int query_block =
        !paired_ ? pair : (light_half_ ? pair : space_.n_query_blocks - 1 - pair);
    return {query_block, head_and_sample % space_.n_heads, head_and_sample / space_.n_heads};
  }
  FS_HOST_DEVICE constexpr void advance() {
    const int pair = unit_ % units_per_head_;
    if (paired_ && !light_half_ && pair != space_.n_query_blocks - 1 - pair) {
      light_half_ = true;  // the unit's light tile next
      return;
    }
    light_half_ = false;
    unit_ += stride_;
  }

 private:
  TileSpace space_;
  int units_per_head_;
  bool paired_;
  int unit_;
  int stride_;
  bool light_half_ = false;
};

// CTAs of a persistent launch: as many as can be resident at once (SMs x CTAs per SM), but never
// more than there are tiles, so no CTA starts without work.
constexpr int persistent_grid_size(const TileSpace& space, int sm_count, int ctas_per_sm) {
  const int resident = sm_count * ctas_per_sm;
  return space.count() < resident ? space.count() : resident;
}
// The same for a schedule of `work_units` units (PairedTileScheduler::unit_count).
constexpr int persistent_grid_size(int work_units, int sm_count, int ctas_per_sm) {
  const int resident = sm_count * ctas_per_sm;
  return work_units < resident ? work_units : resident;
}

// The multiprocessor count of the current device, read once per device and process (a launch
// must not pay for a driver query). Throws CudaError when the device cannot be queried.
int current_device_sm_count();

}  // namespace flashscope::scheduling
