#include "explorer/plot/label_layout.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace flashscope::plot {

bool Rect::overlaps(const Rect& other, float padding) const {
  return min_x - padding < other.max_x && other.min_x < max_x + padding &&
         min_y - padding < other.max_y && other.min_y < max_y + padding;
}

bool Rect::contains(const Rect& other) const {
  return other.min_x >= min_x && other.max_x <= max_x && other.min_y >= min_y &&
         other.max_y <= max_y;
}

std::vector<float> spread_labels(std::span<const float> anchors, float height, float low,
                                 float high) {
  const std::size_t count = anchors.size();
  std::vector<float> centres(count);
  if (count == 0) return centres;
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return anchors[a] < anchors[b]; });

  if (static_cast<float>(count) * height > high - low) {  // cannot fit: evenly, in order
    const float step = (high - low) / static_cast<float>(count);
    for (std::size_t i = 0; i < count; ++i)
      centres[order[i]] = low + step * (static_cast<float>(i) + 0.5f);
    return centres;
  }

  // Clusters of labels stacked edge to edge; the first label's centre minimises the squared
  // distance of every member to its anchor, clamped so the cluster stays inside [low, high].
  struct Cluster {
    std::size_t first = 0;  // index into `order`
    std::size_t size = 0;
    double offset_sum = 0;  // sum of (anchor - j · height) over its members j = 0..size-1
    float centre = 0;       // of its first label
  };
  const auto place = [&](Cluster& cluster) {
    const float ideal = static_cast<float>(cluster.offset_sum / static_cast<double>(cluster.size));
    const float top = low + height / 2;
    const float bottom = high - height / 2 - static_cast<float>(cluster.size - 1) * height;
    cluster.centre = std::clamp(ideal, top, std::max(top, bottom));
  };
  std::vector<Cluster> clusters;
  for (std::size_t i = 0; i < count; ++i) {
    Cluster cluster{i, 1, anchors[order[i]], 0};
    place(cluster);
    while (!clusters.empty()) {
      Cluster& previous = clusters.back();
      const float previous_end = previous.centre + static_cast<float>(previous.size) * height;
      if (previous_end <= cluster.centre + 1e-4f) break;
      // Merge: the members of `cluster` move down by previous.size places.
      previous.offset_sum += cluster.offset_sum - static_cast<double>(cluster.size) *
                                                      static_cast<double>(previous.size) * height;
      previous.size += cluster.size;
      cluster = previous;
      clusters.pop_back();
      place(cluster);
    }
    clusters.push_back(cluster);
  }
  for (const Cluster& cluster : clusters)
    for (std::size_t j = 0; j < cluster.size; ++j)
      centres[order[cluster.first + j]] = cluster.centre + static_cast<float>(j) * height;
  return centres;
}

namespace {

bool covers_marker(const Rect& box, const Point& centre, float radius) {
  const float nearest_x = std::clamp(centre.x, box.min_x, box.max_x);
  const float nearest_y = std::clamp(centre.y, box.min_y, box.max_y);
  return std::hypot(centre.x - nearest_x, centre.y - nearest_y) < radius + 1.0f;
}

// The box of a `width` × `height` label `distance` px beyond a marker of `radius` at `anchor`, in
// direction (dx, dy) (each -1, 0 or 1; y down).
Rect box_beside(Point anchor, float width, float height, float radius, float distance, int dx,
                int dy) {
  const float gap = radius + distance;
  float min_x = anchor.x - width / 2;
  float min_y = anchor.y - height / 2;
  if (dx > 0) min_x = anchor.x + gap;
  if (dx < 0) min_x = anchor.x - gap - width;
  if (dy > 0) min_y = anchor.y + gap;
  if (dy < 0) min_y = anchor.y - gap - height;
  if (dx != 0 && dy != 0) {  // diagonal: tuck the corner in towards the point
    const float tuck = gap * 0.3f;
    min_x += dx > 0 ? -tuck : tuck;
    min_y += dy > 0 ? -tuck : tuck;
  }
  return {min_x, min_y, min_x + width, min_y + height};
}

}  // namespace

std::vector<PlacedLabel> place_point_labels(std::span<const LabelRequest> labels, Rect area,
                                            float marker_radius, float column_x,
                                            std::span<const LabelRequest> column_only) {
  constexpr float kDistances[] = {3, 8, 16, 28, 44, 64, 90};
  constexpr float kLeaderFrom = 10;  // px beyond the marker from which a leader line is drawn
  constexpr float kPadding = 2;      // px kept free between two labels
  // East first (text reads from its point), then west, above, below, the diagonals.
  constexpr int kDirections[][2] = {{1, 0},  {-1, 0},  {0, -1}, {0, 1},
                                    {1, -1}, {-1, -1}, {1, 1},  {-1, 1}};
  std::vector<PlacedLabel> placed(labels.size() + column_only.size());
  std::vector<Rect> taken;
  std::vector<std::size_t> homeless;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const LabelRequest& label = labels[i];
    bool found = false;
    for (const float distance : kDistances) {
      for (const auto& direction : kDirections) {
        const Rect box = box_beside(label.anchor, label.width, label.height, marker_radius,
                                    distance, direction[0], direction[1]);
        if (!area.contains(box)) continue;
        if (std::any_of(taken.begin(), taken.end(),
                        [&](const Rect& other) { return box.overlaps(other, kPadding); }))
          continue;
        if (std::any_of(labels.begin(), labels.end(), [&](const LabelRequest& other) {
              return covers_marker(box, other.anchor, marker_radius);
            }))
          continue;
        placed[i] = {box, distance >= kLeaderFrom, false};
        taken.push_back(box);
        found = true;
        break;
      }
      if (found) break;
    }
    if (!found) homeless.push_back(i);
  }
  const auto request = [&](std::size_t i) -> const LabelRequest& {
    return i < labels.size() ? labels[i] : column_only[i - labels.size()];
  };
  for (std::size_t i = 0; i < column_only.size(); ++i)
    homeless.push_back(labels.size() + i);
  if (!homeless.empty()) {
    float height = 0;
    std::vector<float> anchors;
    for (const std::size_t i : homeless) {
      height = std::max(height, request(i).height + kPadding);
      anchors.push_back(request(i).anchor.y);
    }
    const std::vector<float> centres = spread_labels(anchors, height, area.min_y, area.max_y);
    for (std::size_t k = 0; k < homeless.size(); ++k) {
      const LabelRequest& label = request(homeless[k]);
      const float top = centres[k] - label.height / 2;
      placed[homeless[k]] = {{column_x, top, column_x + label.width, top + label.height},
                             homeless[k] < labels.size(),
                             true};
    }
  }
  return placed;
}

float clear_of_lines(float bottom, float height, std::span<const float> line_ys, float gap) {
  // Each move goes up past one line, so at most one pass per line is needed.
  for (std::size_t pass = 0; pass <= line_ys.size(); ++pass) {
    bool moved = false;
    for (const float y : line_ys) {
      if (y >= bottom - height - gap && y <= bottom + gap) {
        bottom = y - gap - 1.0f;
        moved = true;
      }
    }
    if (!moved) break;
  }
  return bottom;
}

}  // namespace flashscope::plot
