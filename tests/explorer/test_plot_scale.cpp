// Axis arithmetic of the explorer's plots: tick placement and labels, fitting, zoom and pan.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "explorer/plot/label_layout.hpp"
#include "explorer/plot/scale.hpp"

using namespace flashscope::plot;

namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& tick : ticks)
    out.push_back(tick.label);
  return out;
}

}  // namespace

TEST_CASE("linear ticks sit at 1, 2 or 5 times a power of ten") {
  CHECK(labels(linear_ticks({0, 100}, 6)) ==
        std::vector<std::string>{"0", "20", "40", "60", "80", "100"});
  CHECK(labels(linear_ticks({0, 1}, 3)) == std::vector<std::string>{"0", "0.5", "1.0"});
  CHECK(labels(linear_ticks({-3, 3}, 4)) == std::vector<std::string>{"-2", "0", "2"});
  CHECK(labels(linear_ticks({0.12, 0.18}, 4)) ==
        std::vector<std::string>{"0.12", "0.14", "0.16", "0.18"});
  for (const auto& range : {Range{0, 637.3}, Range{13.7, 14.2}, Range{-1e6, 5e6}}) {
    const auto ticks = linear_ticks(range, 8);
    CHECK(ticks.size() >= 2);
    CHECK(ticks.size() <= 8);
    for (const Tick& tick : ticks) {
      CHECK(tick.value >= range.min - 1e-9);
      CHECK(tick.value <= range.max + 1e-9);
    }
  }
}

TEST_CASE("large linear labels share one suffix per axis") {
  CHECK(labels(linear_ticks({0, 20000}, 5)) ==
        std::vector<std::string>{"0", "5k", "10k", "15k", "20k"});
  CHECK(labels(linear_ticks({1e7, 1.2e7}, 3)) == std::vector<std::string>{"10M", "11M", "12M"});
  CHECK(labels(linear_ticks({0, 1.5e6}, 4)) ==
        std::vector<std::string>{"0", "0.5M", "1.0M", "1.5M"});
  CHECK(format_tick(2.5e9, 5e8, 3e9) == "2.5G");
}

TEST_CASE("linear ticks of an empty or reversed range") {
  CHECK(linear_ticks({5, 5}, 6).empty());
  CHECK(linear_ticks({5, 1}, 6).empty());
  CHECK(linear_ticks({0, 1}, 1).empty());
}

TEST_CASE("log-2 ticks are powers of two labelled as integers") {
  CHECK(labels(log2_ticks({400, 20000}, 10)) ==
        std::vector<std::string>{"512", "1024", "2048", "4096", "8192", "16384"});
  // Too many powers: every 2^k-th one, aligned to multiples of the stride so pans do not
  // relabel.
  CHECK(labels(log2_ticks({1, 1 << 20}, 6)) ==
        std::vector<std::string>{"1", "16", "256", "4096", "65536", "1048576"});
  CHECK(labels(log2_ticks({0.2, 2}, 5)) == std::vector<std::string>{"0.25", "0.5", "1", "2"});
  CHECK(log2_ticks({0, 100}, 5).empty());  // a log axis has no zero
  CHECK(axis_ticks({512, 4096}, AxisScale::log2, 8).size() == 4);
}

TEST_CASE("fit_range pads the data and anchors bars at zero") {
  const double values[] = {100, 300};
  const Range linear = fit_range(values, AxisScale::linear, 0.1, false);
  CHECK(linear.min == doctest::Approx(80));
  CHECK(linear.max == doctest::Approx(320));
  const Range anchored = fit_range(values, AxisScale::linear, 0.1, true);
  CHECK(anchored.min == 0);
  CHECK(anchored.max == doctest::Approx(330));

  const double seq_lens[] = {512, 16384};
  const Range log_range = fit_range(seq_lens, AxisScale::log2, 0.1, false);
  CHECK(std::log2(log_range.min) == doctest::Approx(9 - 0.5));
  CHECK(std::log2(log_range.max) == doctest::Approx(14 + 0.5));
}

TEST_CASE("fit_range survives degenerate data") {
  const double single[] = {42};
  const Range around = fit_range(single, AxisScale::linear, 0.0, false);
  CHECK(around.min < 42);
  CHECK(around.max > 42);
  CHECK(fit_range({}, AxisScale::linear, 0.1, false) == Range{0, 1});
  const double non_positive[] = {0, -4};
  CHECK(fit_range(non_positive, AxisScale::log2, 0.1, false) == Range{1, 2});
  const double with_nan[] = {NAN, 10, 20};
  CHECK(fit_range(with_nan, AxisScale::linear, 0.0, false) == Range{10, 20});
}

TEST_CASE("zoom keeps the anchor in place; pan shifts by a fraction of the span") {
  const Range zoomed = zoom_range({0, 100}, 25, 0.5, AxisScale::linear);
  CHECK(zoomed.min == doctest::Approx(12.5));
  CHECK(zoomed.max == doctest::Approx(62.5));
  const Range log_zoomed = zoom_range({256, 65536}, 4096, 0.5, AxisScale::log2);
  CHECK(log_zoomed.min == doctest::Approx(1024));
  CHECK(log_zoomed.max == doctest::Approx(16384));

  const Range panned = pan_range({0, 100}, 0.25, AxisScale::linear);
  CHECK(panned.min == doctest::Approx(25));
  CHECK(panned.max == doctest::Approx(125));
  const Range log_panned = pan_range({512, 2048}, -0.5, AxisScale::log2);
  CHECK(log_panned.min == doctest::Approx(256));
  CHECK(log_panned.max == doctest::Approx(1024));
}

TEST_CASE("axis space round trip") {
  CHECK(to_axis_space(4096, AxisScale::log2) == doctest::Approx(12));
  CHECK(from_axis_space(12, AxisScale::log2) == doctest::Approx(4096));
  CHECK(to_axis_space(-3, AxisScale::linear) == -3);
}

// Fuzz findings (docs/hardening.md): values a results CSV may hold, or a zoom, used to hang or
// hit undefined behaviour here.
TEST_CASE("fuzz finding: a span below the resolution of doubles gets a few ticks, not a hang") {
  // 1e16 and 1e16 + 2 are neighbouring doubles: a tick spacing of 0.5 cannot step between them.
  const double cycles[] = {1e16, 1e16 + 2};
  const Range range = fit_range(cycles, AxisScale::linear, 0.06, false);
  const std::vector<Tick> ticks = linear_ticks(range, 8);
  CHECK_FALSE(ticks.empty());
  CHECK(ticks.size() <= 8);
  for (std::size_t i = 1; i < ticks.size(); ++i)
    CHECK(ticks[i - 1].value < ticks[i].value);
}

TEST_CASE("fuzz finding: a log-2 axis with an infinite end gets no ticks instead of UB") {
  // Zooming a log-2 axis far out reaches an infinite end (exp2 of more than 1024), whose log2
  // was cast to int; so did fitting one to a value near the largest double.
  const Range zoomed_out = zoom_range({512, 16384}, 4096, 1e6, AxisScale::log2);
  REQUIRE(zoomed_out.max == INFINITY);
  CHECK(log2_ticks(zoomed_out, 8).empty());
  const double huge[] = {1, 1.7e308};
  CHECK(log2_ticks(fit_range(huge, AxisScale::log2, 0.05, false), 8).size() <= 8);
  // Finite ranges keep their ticks.
  CHECK(log2_ticks({512, 16384}, 8).size() == 6);
}

// ---- Label layout (explorer/plot/label_layout.hpp) --------------------------------------------

namespace {

bool any_overlap(const std::vector<Rect>& boxes) {
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      if (boxes[i].overlaps(boxes[j])) return true;
  return false;
}

// A deterministic spread of values in [0, 1).
float pseudo_random(unsigned& state) {
  state = state * 1664525u + 1013904223u;
  return static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
}

}  // namespace

TEST_CASE("spread_labels keeps a lone label at its anchor and separates crowded ones in order") {
  const std::vector<float> lone{140.0f};
  CHECK(spread_labels(lone, 16, 0, 400) == std::vector<float>{140.0f});
  // The roofline's case: steps 8-16 within four pixels of each other.
  const std::vector<float> crowded{300, 301, 299.5f, 302, 300.5f, 303, 301.5f, 299, 302.5f};
  const std::vector<float> centres = spread_labels(crowded, 16, 0, 700);
  for (std::size_t i = 0; i < crowded.size(); ++i)
    for (std::size_t j = 0; j < crowded.size(); ++j) {
      if (i == j) continue;
      if (crowded[i] < crowded[j]) CHECK(centres[i] < centres[j]);  // order kept
      CHECK(std::fabs(centres[i] - centres[j]) >= 16.0f - 1e-3f);   // no two overlap
    }
  // Centred on the crowd: the mean displacement is (close to) zero.
  double displacement = 0;
  for (std::size_t i = 0; i < crowded.size(); ++i)
    displacement += centres[i] - crowded[i];
  CHECK(std::fabs(displacement / crowded.size()) < 1.0);
}

TEST_CASE("spread_labels stays inside its range and never overlaps when the labels fit") {
  unsigned seed = 7;
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t count = 1 + trial % 30;
    std::vector<float> anchors;
    for (std::size_t i = 0; i < count; ++i)
      anchors.push_back(-50 + 600 * pseudo_random(seed));  // some outside [0, 500]
    const std::vector<float> centres = spread_labels(anchors, 16, 0, 500);
    REQUIRE(centres.size() == count);
    std::vector<float> sorted = centres;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted.front() >= 8.0f - 1e-3f);
    CHECK(sorted.back() <= 492.0f + 1e-3f);
    for (std::size_t i = 1; i < sorted.size(); ++i)
      CHECK(sorted[i] - sorted[i - 1] >= 16.0f - 1e-3f);
  }
}

TEST_CASE("place_point_labels: no label overlaps another label or any point") {
  const Rect area{0, 0, 800, 600};
  unsigned seed = 11;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<LabelRequest> requests;
    const std::size_t count = 2 + trial % 24;
    // Half the trials crowd every point into a few pixels, as the roofline's steps are.
    const float spread = trial % 2 == 0 ? 12.0f : 700.0f;
    for (std::size_t i = 0; i < count; ++i)
      requests.push_back(
          {{50 + spread * pseudo_random(seed), 40 + spread * 0.7f * pseudo_random(seed)}, 56, 14});
    // Two horizontal lines' names share the column.
    const std::vector<LabelRequest> line_names{{{800, 300}, 80, 14}, {{800, 302}, 80, 14}};
    const std::vector<PlacedLabel> placed = place_point_labels(requests, area, 5, 810, line_names);
    REQUIRE(placed.size() == count + 2);
    CHECK(placed[count].in_column);
    CHECK(placed[count + 1].in_column);
    std::vector<Rect> boxes;
    for (std::size_t i = 0; i < count + 2; ++i) {
      if (i >= count) {
        boxes.push_back(placed[i].box);
        continue;
      }
      boxes.push_back(placed[i].box);
      CHECK(placed[i].box.width() == doctest::Approx(56));
      if (placed[i].in_column)
        CHECK(placed[i].box.min_x == doctest::Approx(810));
      else
        CHECK(area.contains(placed[i].box));
      for (const LabelRequest& other : requests) {  // no label hides a point's marker
        const float nx = std::clamp(other.anchor.x, placed[i].box.min_x, placed[i].box.max_x);
        const float ny = std::clamp(other.anchor.y, placed[i].box.min_y, placed[i].box.max_y);
        CHECK(std::hypot(other.anchor.x - nx, other.anchor.y - ny) >= 5.0f);
      }
    }
    CHECK_FALSE(any_overlap(boxes));
  }
}

TEST_CASE("place_point_labels puts a label next to a free point without a leader line") {
  const std::vector<LabelRequest> requests{{{100, 100}, 50, 14}};
  const std::vector<PlacedLabel> placed = place_point_labels(requests, {0, 0, 400, 300}, 5, 410);
  REQUIRE(placed.size() == 1);
  CHECK_FALSE(placed[0].leader);
  CHECK_FALSE(placed[0].in_column);
  CHECK(placed[0].box.min_x > 100);  // east of its point
  CHECK(placed[0].box.min_x < 112);
}

TEST_CASE("clear_of_lines lifts a bar label above every line through it") {
  const std::vector<float> lines{300, 285};
  // A 14 px label with its bottom at 305: the line at 300 crosses it, and the one at 285 crosses
  // it once lifted above the first.
  const float bottom = clear_of_lines(305, 14, lines, 2);
  for (const float y : lines)
    CHECK((y > bottom + 2 || y < bottom - 14 - 2));
  CHECK(bottom < 285);
  // A label clear of every line stays where it is.
  CHECK(clear_of_lines(250, 14, lines, 2) == 250);
}
