// The persistent tile scheduler (kernels/common/tile_scheduler.hpp) on the host: every tile of a
// launch is handed to exactly one CTA, whatever the grid, and the numbering keeps the order of
// steps 1–21's (query block, head, sample) grid.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "kernels/common/persistent_grid_limit.hpp"
#include "kernels/common/tile_scheduler.hpp"

using namespace flashscope::scheduling;

TEST_CASE("tile numbering: query block fastest, then head, then sample") {
  const TileSpace space{4, 3, 2};
  CHECK(space.count() == 24);
  const AttentionTile first = space.tile(0);
  CHECK((first.query_block == 0 && first.head == 0 && first.sample == 0));
  const AttentionTile fifth = space.tile(5);  // query block 1 of head 1
  CHECK((fifth.query_block == 1 && fifth.head == 1 && fifth.sample == 0));
  const AttentionTile last = space.tile(23);
  CHECK((last.query_block == 3 && last.head == 2 && last.sample == 1));
}

TEST_CASE("a persistent grid covers every tile exactly once") {
  // The shapes of the step-22 correctness matrix: fewer tiles than SMs, a count that is not a
  // multiple of the grid, and many more tiles than SMs.
  const TileSpace spaces[] = {{1, 1, 1}, {9, 7, 3}, {128, 64, 1}, {4, 16, 16}};
  for (const TileSpace& space : spaces) {
    for (const int sms : {1, 7, 132}) {
      const int grid = persistent_grid_size(space, sms, 1);
      CAPTURE(space.count());
      CAPTURE(sms);
      CHECK(grid == (space.count() < sms ? space.count() : sms));
      std::vector<int> seen(static_cast<std::size_t>(space.count()), 0);
      int fewest = space.count(), most = 0;
      for (int cta = 0; cta < grid; ++cta) {
        int tiles = 0;
        for (PersistentTileScheduler scheduler(space, cta, grid); scheduler.has_tile();
             scheduler.advance()) {
          const AttentionTile tile = scheduler.tile();
          const int linear =
              (tile.sample * space.n_heads + tile.head) * space.n_query_blocks + tile.query_block;
          CHECK(linear == scheduler.linear_index());
          ++seen[static_cast<std::size_t>(linear)];
          ++tiles;
          CHECK(scheduler.has_next_tile() == (scheduler.linear_index() + grid < space.count()));
        }
        fewest = tiles < fewest ? tiles : fewest;
        most = tiles > most ? tiles : most;
      }
      for (const int count : seen)
        CHECK(count == 1);
      CHECK(most - fewest <= 1);  // static round robin: balanced to one tile
      CHECK(fewest >= 1);         // no CTA starts without work
    }
  }
}

namespace {

// KV blocks of query block q under the causal mask at B_c = B_r: q + 1.
int causal_cost(const AttentionTile& tile) {
  return tile.query_block + 1;
}

struct Coverage {
  std::vector<int> seen;
  int fewest_blocks = 1 << 30, most_blocks = 0;
};

template <typename MakeScheduler>
Coverage cover(const TileSpace& space, int grid, MakeScheduler make) {
  Coverage coverage;
  coverage.seen.assign(static_cast<std::size_t>(space.count()), 0);
  for (int cta = 0; cta < grid; ++cta) {
    int blocks = 0;
    for (auto scheduler = make(cta); scheduler.has_tile(); scheduler.advance()) {
      const AttentionTile tile = scheduler.tile();
      REQUIRE(tile.query_block >= 0);
      REQUIRE(tile.query_block < space.n_query_blocks);
      const int linear =
          (tile.sample * space.n_heads + tile.head) * space.n_query_blocks + tile.query_block;
      ++coverage.seen[static_cast<std::size_t>(linear)];
      blocks += causal_cost(tile);
    }
    coverage.fewest_blocks = blocks < coverage.fewest_blocks ? blocks : coverage.fewest_blocks;
    coverage.most_blocks = blocks > coverage.most_blocks ? blocks : coverage.most_blocks;
  }
  return coverage;
}

}  // namespace

TEST_CASE("the paired schedule covers every tile once and balances the causal triangle") {
  // Even and odd query-block counts, grids smaller and larger than the unit count.
  const TileSpace spaces[] = {{1, 1, 1}, {2, 1, 1}, {9, 7, 3}, {32, 16, 16}, {128, 16, 4}};
  for (const TileSpace& space : spaces) {
    for (const int sms : {1, 7, 132}) {
      CAPTURE(space.n_query_blocks);
      CAPTURE(sms);
      const int units = PairedTileScheduler::unit_count(space, true);
      CHECK(units == (space.n_query_blocks + 1) / 2 * space.n_heads * space.batch);
      const int grid = persistent_grid_size(units, sms, 1);
      const Coverage paired =
          cover(space, grid, [&](int cta) { return PairedTileScheduler(space, true, cta, grid); });
      for (const int count : paired.seen)
        CHECK(count == 1);
      // Every unit costs n + 1 blocks (the odd middle one less): CTAs differ by one unit at most.
      CHECK(paired.most_blocks - paired.fewest_blocks <= space.n_query_blocks + 1);
      CHECK(paired.fewest_blocks >= 1);

      // Unpaired, it is the round robin of PersistentTileScheduler, tile for tile.
      const int tile_grid = persistent_grid_size(space, sms, 1);
      CHECK(PairedTileScheduler::unit_count(space, false) == space.count());
      for (int cta = 0; cta < tile_grid; ++cta) {
        PairedTileScheduler unpaired(space, false, cta, tile_grid);
        for (PersistentTileScheduler round_robin(space, cta, tile_grid); round_robin.has_tile();
             round_robin.advance(), unpaired.advance()) {
          REQUIRE(unpaired.has_tile());
          CHECK(unpaired.tile().query_block == round_robin.tile().query_block);
          CHECK(unpaired.tile().head == round_robin.tile().head);
          CHECK(unpaired.tile().sample == round_robin.tile().sample);
        }
        CHECK_FALSE(unpaired.has_tile());
      }
    }
  }
}

TEST_CASE("a paired unit runs its heavy tile first, then its light one") {
  const TileSpace space{5, 1, 1};  // units: (4, 0), (3, 1), (2)
  PairedTileScheduler scheduler(space, true, 0, 1);
  std::vector<int> order;
  for (; scheduler.has_tile(); scheduler.advance())
    order.push_back(scheduler.tile().query_block);
  CHECK(order == std::vector<int>{4, 0, 3, 1, 2});
}

TEST_CASE("on the causal triangle the paired schedule ends with less imbalance than round robin") {
  // N = 4096 at B_r = 128 (32 query blocks), B = 16, H = 16, on 132 SMs: the shape the step-24
  // bars are set at. Round robin gives some CTAs clearly more blocks than others.
  const TileSpace space{32, 16, 16};
  const int grid = 132;
  const Coverage round_robin =
      cover(space, grid, [&](int cta) { return PersistentTileScheduler(space, cta, grid); });
  const Coverage paired =
      cover(space, grid, [&](int cta) { return PairedTileScheduler(space, true, cta, grid); });
  CAPTURE(round_robin.most_blocks);
  CAPTURE(paired.most_blocks);
  CHECK(paired.most_blocks < round_robin.most_blocks);
  CHECK(paired.most_blocks - paired.fewest_blocks <
        round_robin.most_blocks - round_robin.fewest_blocks);
}

TEST_CASE("the persistent grid's multiprocessor cap is set, read back and refused when negative") {
  // explorer check --persistent-ctas sets it; current_device_sm_count() (which needs a GPU)
  // returns the smaller of it and the device's count.
  CHECK(persistent_sm_limit() == 0);
  limit_persistent_sms(2);
  CHECK(persistent_sm_limit() == 2);
  CHECK_THROWS_WITH_AS(limit_persistent_sms(-1),
                       "a persistent grid's multiprocessor cap is 0 (none) or more, not -1",
                       std::invalid_argument);
  CHECK(persistent_sm_limit() == 2);  // a refused cap leaves the last one
  limit_persistent_sms(0);
  CHECK(persistent_sm_limit() == 0);
}
