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

#if defined(__CUDACC__)
#define FS_HOST_DEVICE __host__ __device__
#else
#define FS_HOST_DEVICE
#endif

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

// CTAs of a persistent launch: as many as can be resident at once (SMs x CTAs per SM), but never
// more than there are tiles, so no CTA starts without work.
constexpr int persistent_grid_size(const TileSpace& space, int sm_count, int ctas_per_sm) {
  const int resident = sm_count * ctas_per_sm;
  return space.count() < resident ? space.count() : resident;
}

// The multiprocessor count of the current device, read once per device and process (a launch
// must not pay for a driver query). Throws CudaError when the device cannot be queried.
int current_device_sm_count();

}  // namespace flashscope::scheduling
