#include "explorer/plot/plot.hpp"

#include <imgui_internal.h>  // SetItemUsingMouseWheel: keeps the wheel for zooming

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "explorer/plot/label_layout.hpp"

namespace flashscope::plot {

namespace {

constexpr float kHoverRadius = 6.0f;         // px beyond a marker that still counts as over it
constexpr float kClickDragThreshold = 4.0f;  // px of movement that turns a click into a pan
constexpr float kWheelZoomStep = 0.85f;      // view span factor per wheel notch
constexpr float kGridSpacingX = 90.0f;       // px between x ticks, roughly
constexpr float kGridSpacingY = 42.0f;

const ImU32 kGrid = IM_COL32(70, 74, 82, 255);
const ImU32 kFrame = IM_COL32(130, 134, 142, 255);
const ImU32 kText = IM_COL32(210, 212, 218, 255);

// The zoom/pan state that outlives a frame. A view follows its data's fit range until the
// user zooms or pans, and returns to following it when the data changes or on double-click.
struct ViewState {
  Range fit_x, fit_y;
  Range x, y;
  bool user_view = false;
};

std::unordered_map<ImGuiID, ViewState>& view_states() {
  static std::unordered_map<ImGuiID, ViewState> states;
  return states;
}

double lerp(double a, double b, double t) {
  return a + (b - a) * t;
}

}  // namespace

ImU32 categorical_colour(std::size_t index, float alpha) {
  // Tableau 10: distinguishable on a dark background and by most colour-blind readers.
  static constexpr unsigned kPalette[10][3] = {
      {78, 121, 167}, {242, 142, 43},  {225, 87, 89},   {118, 183, 178}, {89, 161, 79},
      {237, 201, 72}, {176, 122, 161}, {255, 157, 167}, {156, 117, 95},  {186, 176, 172}};
  const auto& rgb = kPalette[index % 10];
  return IM_COL32(rgb[0], rgb[1], rgb[2], static_cast<int>(alpha * 255));
}

Plot::Plot(const char* id, ImVec2 size, Axis x, Axis y, Frame frame)
    : x_(std::move(x)), y_(std::move(y)), frame_(frame) {
  draw_list_ = ImGui::GetWindowDrawList();
  const ImVec2 available = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = std::max(available.x + size.x, 120.0f);
  if (size.y <= 0) size.y = std::max(available.y + size.y, 100.0f);
  widget_min_ = ImGui::GetCursorScreenPos();
  widget_max_ = ImVec2(widget_min_.x + size.x, widget_min_.y + size.y);

  released_ = ImGui::InvisibleButton(id, size);
  hovered_ = ImGui::IsItemHovered();
  const bool dragging = ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left);
  ImGui::SetItemUsingMouseWheel();

  ViewState& state = view_states()[ImGui::GetItemID()];
  if (!state.user_view || state.fit_x != x_.fit || state.fit_y != y_.fit) {
    state = ViewState{x_.fit, y_.fit, x_.fit, y_.fit, false};
  }

  // Margins depend on the y labels' width, which depends on the view: use this frame's view.
  const float line = ImGui::GetTextLineHeight();
  const float rough_height = size.y - 3 * line - 12;
  const int y_tick_count = std::max(2, static_cast<int>(rough_height / kGridSpacingY));
  std::vector<Tick> y_ticks =
      y_.categories.empty() ? axis_ticks(state.y, y_.scale, y_tick_count) : y_.categories;
  float label_width = 0;
  for (const Tick& tick : y_ticks)
    label_width = std::max(label_width, ImGui::CalcTextSize(tick.label.c_str()).x);
  // The legend: a strip of equal-width entries above the plot area, as many rows as it needs.
  float legend_height = 0;
  if (!frame_.legend.empty()) {
    for (const LegendEntry& entry : frame_.legend)
      legend_entry_width_ =
          std::max(legend_entry_width_, ImGui::CalcTextSize(entry.label.c_str()).x);
    legend_entry_width_ += line * 0.8f + 22;
    const float strip_width = size.x - label_width - 30;
    legend_columns_ = std::clamp(static_cast<int>(strip_width / legend_entry_width_), 1,
                                 static_cast<int>(frame_.legend.size()));
    const int rows =
        (static_cast<int>(frame_.legend.size()) + legend_columns_ - 1) / legend_columns_;
    legend_height = static_cast<float>(rows) * (line + 3) + 8;
  }
  const float right_frame = frame_.label_column > 0 ? frame_.label_column + 8 : 0;
  legend_min_ = ImVec2(widget_min_.x + label_width + 10, widget_min_.y + line + 6);
  area_min_ = ImVec2(widget_min_.x + label_width + 10,
                     widget_min_.y + line + 8 + (legend_height > 0 ? legend_height + 6 : 0));
  area_max_ = ImVec2(widget_max_.x - 16 - right_frame, widget_max_.y - 2 * line - 10);
  if (area_max_.x <= area_min_.x + 10 || area_max_.y <= area_min_.y + 10) {
    area_max_ =
        ImVec2(std::max(area_max_.x, area_min_.x + 10), std::max(area_max_.y, area_min_.y + 10));
  }

  // Input, applied before drawing so the frame shows its result.
  const ImGuiIO& io = ImGui::GetIO();
  const ImVec2 mouse = io.MousePos;
  const double mouse_tx = (mouse.x - area_min_.x) / (area_max_.x - area_min_.x);
  const double mouse_ty = (area_max_.y - mouse.y) / (area_max_.y - area_min_.y);
  auto data_at = [](const Range& view, AxisScale scale, double t) {
    return from_axis_space(lerp(to_axis_space(view.min, scale), to_axis_space(view.max, scale), t),
                           scale);
  };
  if (hovered_ && io.MouseWheel != 0) {
    const double factor = std::pow(kWheelZoomStep, io.MouseWheel);
    if (x_.zoomable)
      state.x = zoom_range(state.x, data_at(state.x, x_.scale, mouse_tx), factor, x_.scale);
    if (y_.zoomable && !io.KeyShift)
      state.y = zoom_range(state.y, data_at(state.y, y_.scale, mouse_ty), factor, y_.scale);
    state.user_view = x_.zoomable || y_.zoomable;
  }
  if (dragging && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0)) {
    if (x_.zoomable)
      state.x = pan_range(state.x, -io.MouseDelta.x / (area_max_.x - area_min_.x), x_.scale);
    if (y_.zoomable)
      state.y = pan_range(state.y, io.MouseDelta.y / (area_max_.y - area_min_.y), y_.scale);
    state.user_view = x_.zoomable || y_.zoomable;
  }
  if (hovered_ && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    state.x = state.fit_x;
    state.y = state.fit_y;
    state.user_view = false;
  }
  x_view_ = state.x;
  y_view_ = state.y;

  // Grid and tick labels. The plot area is not filled: it shows the window background, and a
  // large fill costs a software renderer more than everything else in the chart.
  if (y_.categories.empty()) y_ticks = axis_ticks(y_view_, y_.scale, y_tick_count);
  const int x_tick_count =
      std::max(2, static_cast<int>((area_max_.x - area_min_.x) / kGridSpacingX));
  const std::vector<Tick> x_ticks =
      x_.categories.empty() ? axis_ticks(x_view_, x_.scale, x_tick_count) : x_.categories;
  for (const Tick& tick : y_ticks) {
    const float py = to_screen(x_view_.min, tick.value).y;
    if (py < area_min_.y - 0.5f || py > area_max_.y + 0.5f) continue;
    draw_list_->AddLine(ImVec2(area_min_.x, py), ImVec2(area_max_.x, py), kGrid);
    const ImVec2 text_size = ImGui::CalcTextSize(tick.label.c_str());
    draw_list_->AddText(ImVec2(area_min_.x - 6 - text_size.x, py - text_size.y / 2), kText,
                        tick.label.c_str());
  }
  for (const Tick& tick : x_ticks) {
    const float px = to_screen(tick.value, y_view_.min).x;
    if (px < area_min_.x - 0.5f || px > area_max_.x + 0.5f) continue;
    if (x_.categories.empty())
      draw_list_->AddLine(ImVec2(px, area_min_.y), ImVec2(px, area_max_.y), kGrid);
    const ImVec2 text_size = ImGui::CalcTextSize(tick.label.c_str());
    draw_list_->AddText(ImVec2(px - text_size.x / 2, area_max_.y + 4), kText, tick.label.c_str());
  }
  const ImVec2 x_title_size = ImGui::CalcTextSize(x_.title.c_str());
  draw_list_->AddText(
      ImVec2((area_min_.x + area_max_.x - x_title_size.x) / 2, area_max_.y + 6 + line), kText,
      x_.title.c_str());
  draw_list_->AddText(ImVec2(widget_min_.x, widget_min_.y), kText, y_.title.c_str());

  draw_list_->PushClipRect(area_min_, area_max_, true);
}

Plot::~Plot() {
  if (!finished_) finish();
}

ImVec2 Plot::to_screen(double x, double y) const {
  auto fraction = [](double value, const Range& view, AxisScale scale) {
    const double low = to_axis_space(view.min, scale);
    const double high = to_axis_space(view.max, scale);
    return high > low ? (to_axis_space(value, scale) - low) / (high - low) : 0.5;
  };
  return ImVec2(static_cast<float>(lerp(area_min_.x, area_max_.x, fraction(x, x_view_, x_.scale))),
                static_cast<float>(lerp(area_max_.y, area_min_.y, fraction(y, y_view_, y_.scale))));
}

void Plot::consider_hover(float distance_px, int item) {
  if (!hovered_) return;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (mouse.x < area_min_.x || mouse.x > area_max_.x || mouse.y < area_min_.y ||
      mouse.y > area_max_.y)
    return;
  if (!nearest_item_ || distance_px <= nearest_distance_) {
    nearest_item_ = item;
    nearest_distance_ = distance_px;
  }
}

void Plot::bar(double x_center, double width, double value, ImU32 colour, int item,
               std::optional<double> base) {
  const double from = base.value_or(y_.scale == AxisScale::log2 ? y_view_.min : 0.0);
  ImVec2 top_left = to_screen(x_center - width / 2, value);
  ImVec2 bottom_right = to_screen(x_center + width / 2, from);
  if (top_left.y > bottom_right.y) std::swap(top_left.y, bottom_right.y);
  draw_list_->AddRectFilled(top_left, bottom_right, colour);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (mouse.x >= top_left.x && mouse.x <= bottom_right.x && mouse.y >= top_left.y &&
      mouse.y <= bottom_right.y)
    consider_hover(0.0f, item);
}

void Plot::line(std::span<const double> xs, std::span<const double> ys, ImU32 colour,
                float thickness) {
  const std::size_t count = std::min(xs.size(), ys.size());
  if (count < 2) return;
  std::vector<ImVec2> points(count);
  for (std::size_t i = 0; i < count; ++i)
    points[i] = to_screen(xs[i], ys[i]);
  draw_list_->AddPolyline(points.data(), static_cast<int>(count), colour, ImDrawFlags_None,
                          thickness);
}

void Plot::marker(double x, double y, ImU32 colour, float radius, int item) {
  const ImVec2 centre = to_screen(x, y);
  // Skip markers far outside the area: with thousands of points, zoomed in, this is most.
  if (centre.x < area_min_.x - radius || centre.x > area_max_.x + radius ||
      centre.y < area_min_.y - radius || centre.y > area_max_.y + radius)
    return;
  draw_list_->AddCircleFilled(centre, radius, colour, 12);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float distance = std::hypot(mouse.x - centre.x, mouse.y - centre.y);
  if (distance <= radius + kHoverRadius) consider_hover(distance, item);
}

void Plot::ring(double x, double y, ImU32 colour, float radius, float thickness) {
  draw_list_->AddCircle(to_screen(x, y), radius, colour, 16, thickness);
}

void Plot::horizontal_line(double y, ImU32 colour, const std::string& label) {
  const float py = to_screen(x_view_.min, y).y;
  draw_list_->AddLine(ImVec2(area_min_.x, py), ImVec2(area_max_.x, py), colour, 2.0f);
  if (py < area_min_.y || py > area_max_.y) return;  // outside the view: no name either
  line_ys_.push_back(py);
  if (frame_.label_column > 0) {
    line_labels_.push_back({ImVec2(area_max_.x, py), label, colour});
    return;
  }
  const ImVec2 text_size = ImGui::CalcTextSize(label.c_str());
  // Left end: progressions rise to the right, so the left is where the label is least covered.
  const ImVec2 text_pos(area_min_.x + 6, py - text_size.y - 3);
  // A backing box keeps the label readable where it crosses bars or lines.
  draw_list_->AddRectFilled(ImVec2(text_pos.x - 3, text_pos.y - 1),
                            ImVec2(text_pos.x + text_size.x + 3, text_pos.y + text_size.y + 1),
                            IM_COL32(16, 17, 20, 210), 2.0f);
  draw_list_->AddText(text_pos, colour, label.c_str());
}

void Plot::vertical_separator(double x, ImU32 colour, const std::string& label) {
  const float px = to_screen(x, y_view_.min).x;
  if (px < area_min_.x || px > area_max_.x) return;
  constexpr float kDash = 6.0f, kGap = 4.0f;
  for (float y = area_min_.y; y < area_max_.y; y += kDash + kGap)
    draw_list_->AddLine(ImVec2(px, y), ImVec2(px, std::min(y + kDash, area_max_.y)), colour, 1.5f);
  const ImVec2 text_size = ImGui::CalcTextSize(label.c_str());
  const ImVec2 text_pos(px + 5, area_min_.y + 3);
  draw_list_->AddRectFilled(ImVec2(text_pos.x - 3, text_pos.y - 1),
                            ImVec2(text_pos.x + text_size.x + 3, text_pos.y + text_size.y + 1),
                            IM_COL32(16, 17, 20, 210), 2.0f);
  draw_list_->AddText(text_pos, colour, label.c_str());
}

void Plot::text_above(double x, double y, const std::string& text, ImU32 colour) {
  texts_above_.push_back({to_screen(x, y), text, colour});
}

void Plot::point_label(double x, double y, const std::string& text, ImU32 colour) {
  const ImVec2 anchor = to_screen(x, y);
  if (anchor.x < area_min_.x || anchor.x > area_max_.x || anchor.y < area_min_.y ||
      anchor.y > area_max_.y)
    return;  // its point is not in view
  point_labels_.push_back({anchor, text, colour});
}

void Plot::draw_labels() {
  const ImU32 kBacking = IM_COL32(16, 17, 20, 210);
  const auto remember = [this](const std::string& text, ImVec2 min, ImVec2 max) {
    drawn_labels_.push_back({text, min, max});
  };
  // Bar values: above the bar, lifted clear of every horizontal line (still inside the clip).
  for (const PendingText& text : texts_above_) {
    const ImVec2 size = ImGui::CalcTextSize(text.text.c_str());
    const float bottom = clear_of_lines(text.anchor.y - 2, size.y, line_ys_, 2);
    const ImVec2 min(text.anchor.x - size.x / 2, bottom - size.y);
    draw_list_->AddText(min, text.colour, text.text.c_str());
    remember(text.text, min, ImVec2(min.x + size.x, bottom));
  }
  draw_list_->PopClipRect();

  // Point labels beside their points, the rest and the lines' names in the label column.
  std::vector<LabelRequest> points, column;
  for (const PendingText& text : point_labels_) {
    const ImVec2 size = ImGui::CalcTextSize(text.text.c_str());
    points.push_back({{text.anchor.x, text.anchor.y}, size.x + 6, size.y + 2});
  }
  for (const PendingText& text : line_labels_) {
    const ImVec2 size = ImGui::CalcTextSize(text.text.c_str());
    column.push_back({{text.anchor.x, text.anchor.y}, size.x + 6, size.y + 2});
  }
  if (points.empty() && column.empty()) return;
  constexpr float kMarkerRadius = 6;
  const std::vector<PlacedLabel> placed =
      place_point_labels(points, {area_min_.x, area_min_.y, area_max_.x, area_max_.y},
                         kMarkerRadius, area_max_.x + 8, column);
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const PendingText& text =
        i < point_labels_.size() ? point_labels_[i] : line_labels_[i - point_labels_.size()];
    const Rect& box = placed[i].box;
    const ImVec2 min(box.min_x, box.min_y), max(box.max_x, box.max_y);
    if (placed[i].leader || placed[i].in_column) {
      // From the point (or the line's right end) to the nearest edge of the box.
      const ImVec2 to(std::clamp(text.anchor.x, min.x, max.x), (min.y + max.y) / 2);
      const ImU32 leader = (text.colour & ~IM_COL32_A_MASK) | IM_COL32(0, 0, 0, 150);
      draw_list_->AddLine(text.anchor, ImVec2(to.x, to.y), leader, 1.0f);
    }
    draw_list_->AddRectFilled(min, max, kBacking, 2.0f);
    draw_list_->AddText(ImVec2(min.x + 3, min.y + 1), text.colour, text.text.c_str());
    remember(text.text, min, max);
  }
}

bool Plot::draw_legend() {
  if (frame_.legend.empty()) return false;
  const float line = ImGui::GetTextLineHeight();
  const float swatch = line * 0.8f;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  bool over_legend = false;
  for (std::size_t i = 0; i < frame_.legend.size(); ++i) {
    LegendEntry& entry = frame_.legend[i];
    const int column = static_cast<int>(i) % legend_columns_;
    const int row = static_cast<int>(i) / legend_columns_;
    const ImVec2 row_min(legend_min_.x + legend_entry_width_ * static_cast<float>(column),
                         legend_min_.y + 4 + static_cast<float>(row) * (line + 3));
    const ImVec2 row_max(row_min.x + legend_entry_width_ - 4, row_min.y + line + 3);
    const bool shown = entry.shown == nullptr || *entry.shown;
    const bool over = hovered_ && mouse.x >= row_min.x && mouse.x < row_max.x &&
                      mouse.y >= row_min.y && mouse.y < row_max.y;
    if (over) {
      over_legend = true;
      draw_list_->AddRectFilled(row_min, row_max, IM_COL32(255, 255, 255, 24));
      if (entry.shown && is_drag_free_click()) *entry.shown = !*entry.shown;
    }
    const ImVec2 swatch_min(row_min.x + 2, row_min.y + (line - swatch) / 2 + 1);
    const ImVec2 swatch_max(swatch_min.x + swatch, swatch_min.y + swatch);
    if (shown)
      draw_list_->AddRectFilled(swatch_min, swatch_max, entry.colour);
    else
      draw_list_->AddRect(swatch_min, swatch_max, entry.colour);
    draw_list_->AddText(ImVec2(swatch_max.x + 6, row_min.y + 1),
                        shown ? kText : IM_COL32(120, 122, 128, 255), entry.label.c_str());
  }
  return over_legend;
}

bool Plot::is_drag_free_click() const {
  const float max_drag_sq = ImGui::GetIO().MouseDragMaxDistanceSqr[ImGuiMouseButton_Left];
  return released_ && max_drag_sq < kClickDragThreshold * kClickDragThreshold;
}

Interaction Plot::finish() {
  finished_ = true;
  draw_labels();  // pops the plot area's clip rectangle
  draw_list_->AddRect(area_min_, area_max_, kFrame);
  Interaction interaction;
  const bool over_legend = draw_legend();
  if (!over_legend) {
    interaction.hovered = nearest_item_;
    if (nearest_item_ && is_drag_free_click()) interaction.clicked = nearest_item_;
  }
  return interaction;
}

}  // namespace flashscope::plot
