// A small chart widget drawn with ImDrawList (ImPlot is not packaged for Debian): linear or
// log-2 axes with ticks and titles, bars, lines, markers, horizontal reference lines, a legend
// whose entries toggle their series, nearest-item hover and click, wheel zoom, drag pan and
// double-click reset. Zoom state lives per chart id, so views stay immediate-mode.
//
// Text never covers data or other text: the legend sits above the plot area and the reference
// lines' names right of it (the "frame"), a bar's value is lifted above any reference line that
// would strike it, and point labels are placed beside their points or in the column
// (label_layout.hpp).
#pragma once

#include <imgui.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "explorer/plot/scale.hpp"

namespace flashscope::plot {

struct Axis {
  std::string title;
  AxisScale scale = AxisScale::linear;
  Range fit;                     // shows all data; the view returns here on double-click
  std::vector<Tick> categories;  // fixed ticks (e.g. step numbers) instead of computed ones
  bool zoomable = true;
};

struct LegendEntry {
  std::string label;
  ImU32 colour;
  bool* shown;  // flipped when the entry is clicked; nullptr: not toggleable
};

struct Interaction {
  std::optional<int> hovered;  // caller's id of the item under the mouse
  std::optional<int> clicked;  // hovered item clicked (pressed and released without dragging)
};

// What sits around the plot area, outside the data: a column on its right for the reference
// lines' names and for point labels that find no room beside their point, and the legend, a strip
// of entries above the area.
struct Frame {
  float label_column = 0;  // px; 0: line names are drawn inside the area, at its left end
  std::span<LegendEntry> legend;
};

// A distinct colour for series or category `index` (cycles after ten).
ImU32 categorical_colour(std::size_t index, float alpha = 1.0f);

class Plot {
 public:
  // Lays out the chart at the cursor, applies this frame's zoom/pan input and draws the
  // background, grid and axes. Items follow; finish() completes the chart.
  Plot(const char* id, ImVec2 size, Axis x, Axis y, Frame frame = {});
  ~Plot();
  Plot(const Plot&) = delete;
  Plot& operator=(const Plot&) = delete;

  ImVec2 to_screen(double x, double y) const;
  Range x_view() const { return x_view_; }
  Range y_view() const { return y_view_; }

  // `item` identifies what the caller draws; it comes back in Interaction.
  // A bar from `base` (0 on a linear axis, the axis bottom on a log one) to `value`.
  void bar(double x_center, double width, double value, ImU32 colour, int item,
           std::optional<double> base = std::nullopt);
  void line(std::span<const double> xs, std::span<const double> ys, ImU32 colour,
            float thickness = 2.0f);
  void marker(double x, double y, ImU32 colour, float radius, int item);
  void ring(double x, double y, ImU32 colour, float radius, float thickness = 2.0f);
  // A line across the area; its label goes to the label column at the line's height (spread so
  // that no two names overlap), or, without a column, inside the area at its left end.
  void horizontal_line(double y, ImU32 colour, const std::string& label);
  // A dashed vertical line at x with `label` just right of it at the top: the border of a group
  // of categories (the Hopper track after step 16).
  void vertical_separator(double x, ImU32 colour, const std::string& label);
  // Text centred just above the data point (x, y), e.g. a bar's value; drawn when the chart
  // finishes, lifted above any horizontal line that would pass through it.
  void text_above(double x, double y, const std::string& text, ImU32 colour);
  // A label naming the point (x, y): placed when the chart finishes beside the point where it
  // covers no other label or labelled point, else in the label column, with a leader line.
  void point_label(double x, double y, const std::string& text, ImU32 colour);

  // The screen rectangles of the labels drawn by finish(), for tests of what a view drew.
  struct DrawnLabel {
    std::string text;
    ImVec2 min, max;
  };

  // Draws the labels, frame and legend, resolves hover and click. Call once, after every item.
  Interaction finish();
  const std::vector<DrawnLabel>& drawn_labels() const { return drawn_labels_; }

 private:
  void consider_hover(float distance_px, int item);
  bool is_drag_free_click() const;
  void draw_labels();
  bool draw_legend();  // true when the mouse is over it

  struct PendingText {
    ImVec2 anchor;  // screen point
    std::string text;
    ImU32 colour;
  };

  Axis x_, y_;
  Range x_view_, y_view_;
  ImVec2 widget_min_, widget_max_;  // whole widget, margins included
  ImVec2 area_min_, area_max_;      // plot area
  bool hovered_ = false;
  bool released_ = false;  // the widget's button was released over it this frame
  bool finished_ = false;
  Frame frame_;
  ImVec2 legend_min_;  // the legend strip's top left, above the plot area
  float legend_entry_width_ = 0;
  int legend_columns_ = 1;
  std::vector<PendingText> texts_above_;
  std::vector<PendingText> point_labels_;
  std::vector<PendingText> line_labels_;  // anchor: the line's right end
  std::vector<float> line_ys_;            // screen y of every horizontal line
  std::vector<DrawnLabel> drawn_labels_;
  std::optional<int> nearest_item_;
  float nearest_distance_ = 0;
  ImDrawList* draw_list_ = nullptr;
};

}  // namespace flashscope::plot
