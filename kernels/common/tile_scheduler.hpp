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
// window of the numbering (good for the L2, see TileSpace). It needs no global state, but a CTA
// whose SM runs a little slower still has to finish its full share (DynamicTileScheduler below
// balances that); a schedule for uneven tiles (the causal triangle) would order the numbering.
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

// The global state of a dynamic persistent schedule, one per launch in flight: the tiles handed
// out beyond each CTA's first, and the CTAs that have taken their last tile. Zero before a launch;
// the launch's last CTA zeroes it again for the next one (DynamicTileScheduler::retire).
struct TileCounter {
  unsigned int next;
  unsigned int retired_ctas;
};

#if defined(__CUDACC__)
// Dynamic persistent schedule: CTA b starts with tile b, and every further tile is the next one
// of a counter all CTAs draw from, so a CTA whose tiles ran faster (a nearer L2 slice, fewer
// stalls) takes more of them, and the CTAs finish together instead of each after its fixed share.
// One thread per CTA calls fetch_next and, after its last fetch, retire.
class DynamicTileScheduler {
 public:
  __device__ DynamicTileScheduler(const TileSpace& space, TileCounter* counter)
      : space_(space), counter_(counter) {}

  __device__ int first_tile() const { return static_cast<int>(blockIdx.x); }
  __device__ bool is_tile(int linear) const { return linear < space_.count(); }
  __device__ AttentionTile tile(int linear) const { return space_.tile(linear); }
  // The next tile number; one past the last means "no more tiles" (is_tile is false).
  __device__ int fetch_next() const {
    return static_cast<int>(gridDim.x + atomicAdd(&counter_->next, 1u));
  }
  // After this CTA's last fetch: the CTA that retires last knows every fetch of the launch is
  // done and zeroes the counter, so the next launch on the stream finds it fresh.
  __device__ void retire() const {
    __threadfence();
    if (atomicAdd(&counter_->retired_ctas, 1u) == gridDim.x - 1) {
      atomicExch(&counter_->next, 0u);
      atomicExch(&counter_->retired_ctas, 0u);
    }
  }

 private:
  TileSpace space_;
  TileCounter* counter_;
};
#endif

// A zeroed TileCounter in device memory of the current device for the next launch. Counters come
// from a pool of kTileCounterSlots per device, allocated (and zeroed) at the first call, so
// launches in flight at the same time on different streams use different counters as long as
// fewer than that many are in flight at once. The first call allocates: make it outside a CUDA
// graph capture. Throws CudaError when the allocation fails.
inline constexpr int kTileCounterSlots = 256;
TileCounter* next_tile_counter();

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
