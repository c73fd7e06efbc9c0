// Where a chart's text goes so that no label covers another label, a data point or a line: GUI-free
// (screen pixels in, screen pixels out, y growing downwards), so the no-overlap promise is
// unit-tested headless (tests/explorer/test_plot_scale.cpp).
//
//  - spread_labels: a column of equal-height labels, each as close to its anchor as the others
//    allow (the reference lines' names beside a chart, the roofline's crowded steps);
//  - place_point_labels: a label beside each data point, searched outwards from the point, or in
//    that column when no spot near the point is free;
//  - clear_of_lines: a bar's value lifted above any horizontal line that would strike through it.
#pragma once

#include <span>
#include <vector>

namespace flashscope::plot {

struct Rect {
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  float width() const { return max_x - min_x; }
  float height() const { return max_y - min_y; }
  // True when the two rectangles share more than an edge, after growing this one by `padding`.
  bool overlaps(const Rect& other, float padding = 0) const;
  bool contains(const Rect& other) const;
};

struct Point {
  float x = 0, y = 0;
};

// Centres for labels of equal `height` wanting to sit at `anchors` (any order), inside
// [low, high]: the result keeps the anchors' order, neighbours are at least `height` apart, and
// each cluster of touching labels is centred on its anchors' mean (least total displacement).
// When n · height exceeds high − low the labels cannot all fit; they are then spaced evenly over
// the range (and overlap), which callers avoid by giving the column enough height.
std::vector<float> spread_labels(std::span<const float> anchors, float height, float low,
                                 float high);

struct LabelRequest {
  Point anchor;  // the data point the label names
  float width = 0;
  float height = 0;
};

struct PlacedLabel {
  Rect box;
  bool leader = false;     // away from its point: draw a leader line from the point to the box
  bool in_column = false;  // no free spot near the point: in the column right of the area
};

// A box for every label: inside `area` near its anchor, overlapping no other label and no
// anchor's marker (a circle of `marker_radius`), tried at growing distances in eight directions;
// a label with no such spot goes to a column starting at x = `column_x`, spread over the area's
// height with spread_labels, together with `column_only` (e.g. the names of horizontal lines,
// anchored at the line's height). Labels are placed in input order, so earlier ones get the
// nearer spots. The result holds the labels, then the column_only ones.
std::vector<PlacedLabel> place_point_labels(std::span<const LabelRequest> labels, Rect area,
                                            float marker_radius, float column_x,
                                            std::span<const LabelRequest> column_only = {});

// The bottom edge for a label `height` tall that wants its bottom at `bottom`, moved up until no
// line of `line_ys` passes through it or within `gap` of it.
float clear_of_lines(float bottom, float height, std::span<const float> line_ys, float gap);

}  // namespace flashscope::plot
