// Backward step B5's order of work units (kernels/versions/b05/unit_order.hpp) on the host: every
// (KV block, head, sample) unit is handed out exactly once, the heaviest KV blocks of a section
// first, and every unit's dQ predecessors (the same sequence's lower KV blocks, which the
// deterministic option waits for) come before it, the property kernel.cuh's deadlock proof needs.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/versions/b05/unit_order.hpp"

using flashscope::b05::KvUnit;
using flashscope::b05::KvUnitOrder;

namespace {

struct Shape {
  int n_kv_blocks, n_heads, batch;
};

}  // namespace

TEST_CASE("B5 hands out every KV block unit once, its predecessors first") {
  // One unit; fewer units than SMs; a section count that does not divide the sequences (the last
  // section short); the sweep's N = 512 (4 KV blocks, 16 x 64 sequences) and N = 16384 (128 KV
  // blocks, 16 sequences).
  const Shape shapes[] = {{1, 1, 1}, {13, 5, 1}, {8, 3, 3}, {4, 16, 64}, {128, 16, 1}, {2, 7, 5}};
  for (const Shape& shape : shapes) {
    for (const int ctas : {1, 7, 132}) {
      const KvUnitOrder order =
          KvUnitOrder::make(shape.n_kv_blocks, shape.n_heads, shape.batch, ctas);
      CAPTURE(shape.n_kv_blocks);
      CAPTURE(shape.n_heads);
      CAPTURE(shape.batch);
      CAPTURE(ctas);
      REQUIRE(order.count() == shape.n_kv_blocks * shape.n_heads * shape.batch);
      const int sequences = shape.n_heads * shape.batch;
      // A section holds at least one unit a CTA where there are enough sequences.
      CHECK(order.sequences >= 1);
      CHECK(order.sequences <= sequences);
      if (order.sequences < sequences) CHECK(order.sequences * shape.n_kv_blocks >= ctas);
      // position[sequence][kv_block]: where the unit comes in the order.
      std::vector<std::vector<int>> position(
          static_cast<std::size_t>(sequences),
          std::vector<int>(static_cast<std::size_t>(shape.n_kv_blocks), -1));
      int previous_section = -1, previous_kv_block = 0;
      for (int linear = 0; linear < order.count(); ++linear) {
        const KvUnit unit = order.unit(linear);
        REQUIRE(unit.kv_block >= 0);
        REQUIRE(unit.kv_block < shape.n_kv_blocks);
        REQUIRE(unit.head >= 0);
        REQUIRE(unit.head < shape.n_heads);
        REQUIRE(unit.sample >= 0);
        REQUIRE(unit.sample < shape.batch);
        const int sequence = unit.sample * shape.n_heads + unit.head;
        int& slot =
            position[static_cast<std::size_t>(sequence)][static_cast<std::size_t>(unit.kv_block)];
        CHECK_MESSAGE(slot == -1, "unit handed out twice");
        slot = linear;
        // Within a section the KV blocks never go back (heaviest first under the mask).
        const int section = sequence / order.sequences;
        if (section == previous_section) CHECK(unit.kv_block >= previous_kv_block);
        previous_section = section;
        previous_kv_block = unit.kv_block;
      }
      for (const auto& sequence : position)
        for (int kv_block = 0; kv_block < shape.n_kv_blocks; ++kv_block) {
          REQUIRE(sequence[static_cast<std::size_t>(kv_block)] >= 0);
          if (kv_block > 0)
            CHECK(sequence[static_cast<std::size_t>(kv_block - 1)] <
                  sequence[static_cast<std::size_t>(kv_block)]);
        }
    }
  }
}

TEST_CASE("B5's first units are the lowest KV blocks of the first sequences") {
  // N = 8192 at d_head 128: 64 KV blocks a sequence, 8 x 16 sequences, 132 SMs: three sequences
  // a section (192 units), KV block 0 of sequences 0, 1 and 2 first.
  const KvUnitOrder order = KvUnitOrder::make(64, 16, 8, 132);
  CHECK(order.sequences == 3);
  const KvUnit first = order.unit(0), second = order.unit(1), fourth = order.unit(3);
  CHECK((first.kv_block == 0 && first.head == 0 && first.sample == 0));
  CHECK((second.kv_block == 0 && second.head == 1 && second.sample == 0));
  CHECK((fourth.kv_block == 1 && fourth.head == 0 && fourth.sample == 0));
  const KvUnit next_section = order.unit(192);
  CHECK((next_section.kv_block == 0 && next_section.head == 3 && next_section.sample == 0));
}
