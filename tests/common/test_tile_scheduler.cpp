// The persistent tile scheduler (kernels/common/tile_scheduler.hpp) on the host: every tile of a
// launch is handed to exactly one CTA, whatever the grid, and the numbering keeps the order of
// steps 1–21's (query block, head, sample) grid.
#include <doctest/doctest.h>

#include <vector>

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
