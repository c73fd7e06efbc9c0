// A small chart widget drawn with ImDrawList (ImPlot is not packaged for Debian): linear or
// log-2 axes with ticks and titles, bars, lines, markers, horizontal reference lines, a legend
// whose entries toggle their series, nearest-item hover and click, wheel zoom, drag pan and
// double-click reset. Zoom state lives per chart id, so views stay immediate-mode.
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

// A distinct colour for series or category `index` (cycles after ten).
ImU32 categorical_colour(std::size_t index, float alpha = 1.0f);

class Plot {
 public:
  // Lays out the chart at the cursor, applies this frame's zoom/pan input and draws the
  // background, grid and axes. Items follow; finish() completes the chart.
  Plot(const char* id, ImVec2 size, Axis x, Axis y);
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
  void horizontal_line(double y, ImU32 colour, const std::string& label);
  // A dashed vertical line at x with `label` just right of it at the top: the border of a group
  // of categories (the Hopper track after step 16).
  void vertical_separator(double x, ImU32 colour, const std::string& label);
  // Text centred just above the data point (x, y), e.g. a bar's value.
  void text_above(double x, double y, const std::string& text, ImU32 colour);

  // Drawn, when the chart finishes, in the corner of the plot area that covers the fewest
  // drawn items.
  void legend(std::span<LegendEntry> entries);

  // Draws the frame and legend, resolves hover and click. Call once, after every item.
  Interaction finish();

 private:
  void consider_hover(float distance_px, int item);
  bool is_drag_free_click() const;
  ImVec2 legend_position(ImVec2 size) const;

  Axis x_, y_;
  Range x_view_, y_view_;
  ImVec2 widget_min_, widget_max_;  // whole widget, margins included
  ImVec2 area_min_, area_max_;      // plot area
  bool hovered_ = false;
  bool released_ = false;  // the widget's button was released over it this frame
  bool finished_ = false;
  std::span<LegendEntry> legend_;
  std::vector<ImVec2> occupied_;  // screen points of drawn items, to keep the legend off them
  std::optional<int> nearest_item_;
  float nearest_distance_ = 0;
  ImDrawList* draw_list_ = nullptr;
};

}  // namespace flashscope::plot
