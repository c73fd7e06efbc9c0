#include "explorer/gui/gui_app.hpp"

#include "kernels/common/problem_axes.hpp"
#include "kernels/common/text.hpp"

#include <CLI/CLI.hpp>

#include "explorer/step_option.hpp"
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui_stdlib.h>  // after imgui.h, which it needs

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "configs/config_sets.hpp"
#include "explorer/gui/explorer_state.hpp"
#include "explorer/gui/screenshot.hpp"
#include "explorer/gui/views.hpp"
#include "explorer/gui/widgets.hpp"
#include "explorer/model/hints.hpp"
#include "explorer/usage.hpp"

#ifndef FLASHSCOPE_DEFAULT_RESULTS_DIR
#error "FLASHSCOPE_DEFAULT_RESULTS_DIR must be defined by the build (<source dir>/results)"
#endif

namespace flashscope::explorer {

void add_gui_options(CLI::App& app, GuiOptions& options) {
  const auto in_group = [](CLI::Option* option) { return option->group("Desktop explorer"); };
  in_group(app.add_option("--results", options.result_files,
                          "Result CSVs written by `explorer --csv` to open (default: every *.csv "
                          "under --results-dir)"));
  in_group(app.add_option("--results-dir", options.results_directory,
                          "Folder scanned for *.csv when no --results are given")
               ->default_str(shipped_results_directory()));
  std::vector<std::string> view_names;
  for (ViewId view : kViews)
    view_names.emplace_back(view_name(view));
  std::string view_list;
  for (const std::string& name : view_names)
    view_list += (view_list.empty() ? "" : ", ") + name;
  in_group(app.add_option("--view", options.view, "View shown first: " + view_list)
               ->capture_default_str());
  in_group(app.add_option("--detail-step", options.detail_step,
                          "Step the detail view shows first: 7, or a backward step as B1 (or 101) "
                          "(default: the second with data)")
               ->transform(cli::step_name_transform()));
  in_group(app.add_option("--detail-tab", options.detail_tab,
                          "Tab the detail view shows first: documentation, diff or sass"));
  in_group(app.add_option("--sass-dir", options.sass_directory,
                          "SASS artifact to show (a build's <build>/sass or a results/<gpu>/sass; "
                          "default: this build's when it has listings, else the newest shipped "
                          "one)"));
  in_group(app.add_option("--progression-opcode", options.progression_opcode,
                          "SASS opcode the progression view annotates each step with (e.g. LDSM; "
                          "one of the shown listings' opcodes)"));
  in_group(app.add_option("--gpu", options.gpu,
                          "GPU whose rows the views show first: a device index (e.g. 1) or a UUID "
                          "or its prefix (e.g. GPU-8e5b); its model becomes the device filter"));
  in_group(
      app.add_option("--workload", options.workload,
                     "The workload the views show first, one axis=value each (repeatable): "
                     "d_head=64, heads=32, heads_kv=8, causal=1, pass=backward; an axis not "
                     "named starts at its plain value (d_head 128, no mask, ...) when loaded"));
  in_group(app.add_option_function<std::string>(
      "--compare-gpus",
      [&options](const std::string& pair) {
        const std::size_t comma = pair.find(',');
        if (comma == std::string::npos)
          throw CLI::ValidationError("--compare-gpus",
                                     "expected A,B: the GPU of side A and of side B (an index "
                                     "such as 0 or a UUID prefix; empty for any GPU)");
        options.compare_gpu_a = pair.substr(0, comma);
        options.compare_gpu_b = pair.substr(comma + 1);
      },
      "The GPUs the compare view puts side by side, A,B (index or UUID prefix each); with one "
      "file loaded both sides are that file"));
  in_group(app.add_option_function<std::string>(
      "--run-steps",
      [&options](const std::string& text) {
        try {
          options.run_steps = configs::parse_step_list(text);
        } catch (const std::invalid_argument& error) {
          throw CLI::ValidationError("--run-steps", error.what());
        }
      },
      "Steps the run panel starts with ticked, e.g. 17-21, 1,7,21 or B1-B6 (default: every step "
      "built)"));
  in_group(
      app.add_flag("--run-sweep", options.run_sweep,
                   "Start the run panel's sweep on opening (its default set, N = 4096, fp16, "
                   "with --run-steps); with --screenshot, the shot waits for the sweep to end"));
  in_group(app.add_option("--screenshot", options.screenshot_path,
                          "Render --frames frames, save the window as this PNG and exit"));
  in_group(
      app.add_option("--frames", options.frames, "Frames rendered before the screenshot (1-1000)")
          ->capture_default_str());
  in_group(
      app.add_option("--bench-frames", options.bench_frames,
                     "Render this many frames (1-100000), print the mean frame time and exit"));
  in_group(app.add_option_function<std::string>(
                  "--window",
                  [&options](const std::string& size) {
                    int width = 0, height = 0;
                    char separator = 0;
                    if (std::sscanf(size.c_str(), "%d%c%d", &width, &separator, &height) != 3 ||
                        separator != 'x' || width < 320 || height < 240)
                      throw CLI::ValidationError("--window",
                                                 "expected WIDTHxHEIGHT, at least 320x240");
                    options.window_width = width;
                    options.window_height = height;
                  },
                  "Window size in pixels")
               ->default_str("1600x1000"));
}

namespace {

// The SASS artifact the views show (docs/explorer.md, "Which artifact a view shows"); throws
// when an explicit --sass-dir cannot be read.
sass::SassSource gui_sass_source(const GuiOptions& options) {
  return sass::find_sass_source(options.sass_directory, sass::build_sass_directory(),
                                options.results_directory.empty()
                                    ? sass::shipped_results_directory_for_sass()
                                    : std::filesystem::path(options.results_directory));
}

// --progression-opcode must be an opcode of the listings the view counts it in, else every bar
// would be labelled 0.
std::optional<std::string> progression_opcode_problem(const GuiOptions& options) {
  const std::string& opcode = options.progression_opcode;
  if (opcode.empty()) return std::nullopt;
  const std::string named = "--progression-opcode: '" + opcode + "'";
  std::optional<sass::SassLibrary> library;
  try {
    library.emplace(gui_sass_source(options));
  } catch (const std::exception& error) {
    return named + ": no SASS artifact to count it in (--sass-dir: " + error.what() + ")";
  }
  if (!library->has_listings())
    return named + ": no SASS listings to count it in (" + library->note() + ")";
  std::vector<std::string> known;
  for (const std::string& arch : library->artifact()->architectures())
    for (const std::string& name : library->names(arch, sass::OpcodeGrouping::opcode))
      if (std::find(known.begin(), known.end(), name) == known.end()) known.push_back(name);
  if (std::find(known.begin(), known.end(), opcode) != known.end()) return std::nullopt;
  const auto upper = [](std::string text) {
    for (char& ch : text)
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return text;
  };
  std::string message = named + " is not an opcode of the SASS listings (" +
                        library->artifact()->directory().string() + ")";
  const auto same_but_case = std::find_if(
      known.begin(), known.end(), [&](const std::string& n) { return upper(n) == upper(opcode); });
  if (same_but_case != known.end()) return message + "; did you mean " + *same_but_case + "?";
  message += "; the opcodes there, most frequent first:";
  for (std::size_t i = 0; i < known.size(); ++i)
    message += (i == 0 ? " " : ", ") + known[i];
  return message;
}

}  // namespace

std::vector<std::string> gui_option_problems(const GuiOptions& options) {
  std::vector<std::string> problems;
  const auto add = [&problems](const std::optional<std::string>& problem) {
    if (problem) problems.push_back(*problem);
  };
  for (const std::string& path : options.result_files)
    add(cli::input_file_problem("--results", path));
  if (options.result_files.empty() && !options.results_directory.empty())
    add(cli::input_directory_problem("--results-dir", options.results_directory));
  // --sass-dir is not checked here: the SASS tab says why it has no artifact (the detail view's
  // test opens a folder that does not exist).
  if (!view_from_name(options.view)) {
    std::string names;
    for (ViewId view : kViews)
      names += (names.empty() ? "" : ", ") + std::string(view_name(view));
    problems.push_back("--view: '" + options.view + "' is not a view (" + names + ")");
  }
  if (options.detail_step != 0 && configs::find_step_descriptor(options.detail_step) == nullptr)
    problems.push_back("--detail-step: " + std::to_string(options.detail_step) +
                       " is not a step (" + std::to_string(configs::kFirstStep) + "-" +
                       std::to_string(configs::kLastStep) + ", or a backward step " +
                       step_name(kFirstBackwardStep) + "-" + step_name(configs::kLastBackwardStep) +
                       ")");
  if (!options.detail_tab.empty() && options.detail_tab != "documentation" &&
      options.detail_tab != "diff" && options.detail_tab != "sass")
    problems.push_back("--detail-tab: '" + options.detail_tab +
                       "' is not documentation, diff or sass");
  if (options.frames < 1 || options.frames > 1000)
    problems.push_back("--frames: " + std::to_string(options.frames) + " is not in 1-1000");
  if (options.bench_frames != 0 && (options.bench_frames < 1 || options.bench_frames > 100000))
    problems.push_back("--bench-frames: " + std::to_string(options.bench_frames) +
                       " is not in 1-100000");
  if (!options.screenshot_path.empty())
    add(cli::output_file_problem("--screenshot", options.screenshot_path));
  add(progression_opcode_problem(options));
  return problems;
}

std::string shipped_results_directory() {
  return FLASHSCOPE_DEFAULT_RESULTS_DIR;
}

namespace gui {

namespace {

// Everything drawn each frame: the sidebar (files, filter, problems, run panel) and the views.
class ExplorerWindow {
 public:
  explicit ExplorerWindow(const GuiOptions& options)
      : run_panel_(options.sweep_planner, options.sweep_runner, options.sweep_unavailable_reason) {
    std::vector<std::string> paths = options.result_files;
    if (paths.empty()) {
      const std::string directory = options.results_directory.empty() ? shipped_results_directory()
                                                                      : options.results_directory;
      paths = find_result_csvs(directory);
      if (paths.empty())
        no_files_message_ = "No result files found: there is no *.csv under " + directory +
                            ".\n\nMeasure on a machine with a GPU:\n  " +
                            std::string(hints::kSweepToFile) +
                            "\nthen open the file it wrote:\n  " + std::string(hints::kOpenSweep) +
                            "\nor type its path into the Open box on the left (docs/explorer.md).";
    }
    state_.load(paths);
    try {
      state_.sass = sass::SassLibrary(gui_sass_source(options));
    } catch (const std::exception& error) {  // only an explicit --sass-dir can fail here
      const std::string problem = std::string("--sass-dir: ") + error.what();
      state_.add_problem(problem);
      state_.sass = sass::SassLibrary(sass::SassSource{std::nullopt, problem});
    }
    progression_.select_opcode(options.progression_opcode);
    if (options.detail_tab == "documentation") detail_.select_tab(DetailView::Tab::documentation);
    if (options.detail_tab == "diff") detail_.select_tab(DetailView::Tab::source_diff);
    if (options.detail_tab == "sass") detail_.select_tab(DetailView::Tab::sass);
    if (!options.gpu.empty()) choose_gpu(options.gpu);
    for (const std::string& item : options.workload)
      choose_workload_value(item);
    if (!options.compare_gpu_a.empty() || !options.compare_gpu_b.empty()) {
      for (const std::string& gpu : {options.compare_gpu_a, options.compare_gpu_b})
        if (!gpu.empty() && !any_row_on(gpu))
          state_.add_problem("--compare-gpus: no loaded row is on GPU '" + gpu +
                             "' (give a device index such as 1 or a UUID prefix such as GPU-8e5b)");
      compare_.choose_gpus(options.compare_gpu_a, options.compare_gpu_b);
    }
    if (!options.run_steps.empty()) {
      std::string missing;
      for (const int step : run_panel_.choose_steps(options.run_steps))
        missing += (missing.empty() ? "" : ", ") + step_name(step);
      if (!missing.empty())
        state_.add_problem("--run-steps: this build has no kernel of step " + missing +
                           " (the run panel lists the steps it has)");
      scroll_to_run_panel_ = true;
    }
    if (options.run_sweep) {
      const std::string why_not = run_panel_.start(state_);
      if (!why_not.empty()) state_.add_problem("--run-sweep: " + why_not);
      scroll_to_run_panel_ = true;
    }
    if (const auto view = view_from_name(options.view)) pending_view_ = *view;
    state_.selection.detail_step = options.detail_step;
    // A backward step's rows are the backward workload's: open the detail view on them when the
    // loaded files have any (the chooser does the same when a step of the other pass is picked).
    if (const StepDescriptor* step = configs::find_step_descriptor(options.detail_step);
        step != nullptr && step->pass != Pass::forward) {
      const int pass = static_cast<int>(step->pass);
      const std::vector<int> passes = state_.workload_values(Axis::pass);
      if (std::find(passes.begin(), passes.end(), pass) != passes.end())
        state_.set_workload_value(Axis::pass, pass);
    }
    if (options.detail_step == 0) {
      // The second step with data: the first one that has a change to show.
      const std::vector<int>& steps = state_.rows().steps();
      state_.selection.detail_step =
          steps.empty() ? 1 : steps[std::min<std::size_t>(1, steps.size() - 1)];
    }
  }

  ExplorerState& state() { return state_; }
  std::string run_panel_summary() { return run_panel_.summary(state_); }
  bool sweep_running() const { return run_panel_.busy(); }

 private:
  bool any_row_on(const std::string& gpu) const {
    for (const ResultFile& file : state_.files())
      for (const ResultRow& row : file.rows)
        if (gpu_matches(row, gpu)) return true;
    return false;
  }

  // --gpu: that GPU's rows, under its model's name.
  void choose_gpu(const std::string& gpu) {
    for (const ResultFile& file : state_.files())
      for (const ResultRow& row : file.rows)
        if (gpu_matches(row, gpu)) {
          RowFilter filter = state_.filter();
          filter.device = row.device;
          filter.gpu = gpu;
          state_.set_filter(filter);
          return;
        }
    state_.add_problem("--gpu: no loaded row is on GPU '" + gpu +
                       "' (give a device index such as 1 or a UUID prefix such as GPU-8e5b)");
  }

  // "d_head=64": selects that value when a loaded workload has it (with the values chosen so
  // far), else lists the values there are under Problems.
  void choose_workload_value(const std::string& item) {
    const std::size_t equals = item.find('=');
    const AxisSpec* spec =
        equals == std::string::npos ? nullptr : find_axis(std::string_view(item).substr(0, equals));
    const auto& selectable = selectable_workload_axes();
    if (spec == nullptr ||
        std::find(selectable.begin(), selectable.end(), spec->axis) == selectable.end()) {
      std::vector<std::string> names;
      for (const Axis axis : selectable)
        names.emplace_back(axis_spec(axis).name);
      state_.add_problem("--workload: " + text::quoted(item) + " is not axis=value with an axis " +
                         "of " + text::join(names, ", "));
      return;
    }
    int value = 0;
    try {
      value = spec->parse(std::string_view(item).substr(equals + 1));
    } catch (const std::invalid_argument& error) {
      state_.add_problem("--workload: " + std::string(spec->name) + ": " + error.what());
      return;
    }
    const std::vector<int> values = state_.workload_values(spec->axis);
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      state_.set_workload_value(spec->axis, value);
      return;
    }
    std::vector<std::string> present;
    for (const int other : values)
      present.push_back(spec->text(other));
    state_.add_problem("--workload: no loaded row has " + std::string(spec->name) + " " +
                       spec->text(value) + " (the loaded rows have " +
                       (present.empty() ? "none" : text::join(present, ", ")) + ")");
  }

 public:
  void draw() {
    if (state_.requested_workload_value) {
      state_.set_workload_value(state_.requested_workload_value->first,
                                state_.requested_workload_value->second);
      state_.requested_workload_value.reset();
    }
    run_panel_.stream_rows(state_);
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(viewport->WorkPos);
    ImGui::SetNextWindowSize(viewport->WorkSize);
    // No window background: glClear paints it. A full-window textured quad is the single most
    // expensive draw for a software renderer (Mesa llvmpipe under Xvfb).
    const ImGuiWindowFlags flags =
        ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
        ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoBackground;
    ImGui::Begin("flashscope explorer", nullptr, flags);
    ImGui::BeginChild("##sidebar", ImVec2(330, 0), true);
    draw_sidebar();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##views", ImVec2(0, 0), false);
    draw_views();
    ImGui::EndChild();
    ImGui::End();
  }

 private:
  void draw_sidebar() {
    ImGui::TextColored(kHeadingColour, "flashscope explorer");
    ImGui::Separator();
    ImGui::TextUnformatted("Result files");
    const auto& files = state_.files();
    if (files.empty()) ImGui::TextColored(kMutedColour, "none loaded");
    for (std::size_t i = 0; i < files.size(); ++i) {
      bool shown = files[i].shown;
      const std::string label = files[i].label + "##file" + std::to_string(i);
      if (ImGui::Checkbox(label.c_str(), &shown)) state_.set_file_shown(i, shown);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s\n%zu rows\nUnticked files are left out of every view but Compare.",
                          files[i].path.empty() ? "(not saved)" : files[i].path.c_str(),
                          files[i].rows.size());
      ImGui::SameLine();
      ImGui::TextColored(kMutedColour, "%zu", files[i].rows.size());
    }
    ImGui::SetNextItemWidth(-60);
    const bool entered = ImGui::InputTextWithHint("##open_path", "path/to/results.csv", &open_path_,
                                                  ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    if ((ImGui::Button("Open") || entered) && !open_path_.empty()) {
      state_.load({open_path_});
      open_path_.clear();
    }

    ImGui::Spacing();
    ImGui::TextUnformatted("Rows shown");
    RowFilter filter = state_.filter();
    ImGui::SetNextItemWidth(-FLT_MIN);
    bool changed = string_combo("##device", filter.device, state_.devices(), "any device");
    if (changed) filter.gpu.clear();  // another model's GPUs
    // Several GPUs of one model (a --devices sweep, or runs on several hosts): one, or all.
    const std::vector<DeviceUnit>& gpus = state_.gpus();
    if (gpus.size() > 1 || !filter.gpu.empty()) {
      ImGui::SetNextItemWidth(-FLT_MIN);
      changed |= gpu_combo("##gpu", filter.gpu, gpus, "every GPU of this model");
    }
    ImGui::SetNextItemWidth(-FLT_MIN);
    changed |= string_combo("##cache", filter.cache_mode, state_.cache_modes(), "any cache mode");
    ImGui::SetNextItemWidth(-FLT_MIN);
    changed |= run_combo(filter.run);
    if (changed) state_.set_filter(filter);
    ImGui::TextColored(kMutedColour, "%zu of %zu rows", state_.rows().rows().size(),
                       state_.row_count());
    // Rows of two hosts or builds differ by a percent or more in time alone: never mix them
    // without saying so.
    if (const std::size_t runs = state_.rows().run_labels().size(); runs > 1) {
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextColored(kWarningColour,
                         "%zu runs mixed (hosts / builds): each view takes a step's fastest row "
                         "of any run. Pick one run above to compare like with like.",
                         runs);
      ImGui::PopTextWrapPos();
    }

    if (!state_.problems().empty()) {
      ImGui::Spacing();
      ImGui::TextColored(kWorseColour, "Problems (%zu)", state_.problems().size());
      ImGui::SameLine();
      if (ImGui::SmallButton("clear")) state_.clear_problems();
      ImGui::PushTextWrapPos(0.0f);
      for (const std::string& problem : state_.problems())
        ImGui::TextColored(kWorseColour, "%s", problem.c_str());
      ImGui::PopTextWrapPos();
    }

    ImGui::Spacing();
    ImGui::Separator();
    ImGui::TextUnformatted("Run a sweep");
    if (scroll_to_run_panel_) {  // --run-steps, --run-sweep: the panel is what is being shown
      ImGui::SetScrollHereY(0.0f);
      scroll_to_run_panel_ = false;
    }
    run_panel_.draw(state_);
  }

  // The run filter: "every run" or one (host, commit) of the loaded files.
  bool run_combo(std::string& run) {
    const std::vector<RunChoice>& runs = state_.runs();
    std::string preview = "every run";
    for (const RunChoice& choice : runs)
      if (choice.key == run) preview = "run " + choice.label;
    bool changed = false;
    if (ImGui::BeginCombo("##run", preview.c_str())) {
      if (ImGui::Selectable("every run", run.empty()) && !run.empty()) {
        run.clear();
        changed = true;
      }
      for (const RunChoice& choice : runs) {
        const std::string text = choice.label + " (" + std::to_string(choice.rows) + " rows)";
        if (ImGui::Selectable(text.c_str(), choice.key == run) && choice.key != run) {
          run = choice.key;
          changed = true;
        }
      }
      ImGui::EndCombo();
    }
    return changed;
  }

  void draw_views() {
    if (state_.requested_view) {
      pending_view_ = *state_.requested_view;
      state_.requested_view.reset();
    }
    if (!ImGui::BeginTabBar("##view_tabs")) return;
    for (ViewId view : kViews) {
      const ImGuiTabItemFlags flags =
          pending_view_ == view ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
      const std::string title(view_title(view));
      if (!ImGui::BeginTabItem(title.c_str(), nullptr, flags)) continue;
      if (state_.row_count() == 0 && view != ViewId::compare) {
        empty_view_message(no_files_message_.empty()
                               ? "No rows loaded. See the problems on the left, or open another "
                                 "file."
                               : no_files_message_);
      } else if (state_.rows().empty() && view != ViewId::compare) {
        empty_view_message(
            "No rows match: tick a file on the left or choose another device / cache mode / "
            "run.");
      } else {
        draw_view(view);
      }
      ImGui::EndTabItem();
    }
    pending_view_.reset();
    ImGui::EndTabBar();
  }

  void draw_view(ViewId view) {
    switch (view) {
      case ViewId::progression:
        progression_.draw(state_);
        break;
      case ViewId::sweep:
        sweep_.draw(state_);
        break;
      case ViewId::autotune:
        autotune_.draw(state_);
        break;
      case ViewId::detail:
        detail_.draw(state_);
        break;
      case ViewId::compare:
        compare_.draw(state_);
        break;
      case ViewId::roofline:
        roofline_.draw(state_);
        break;
    }
  }

  ExplorerState state_;
  ProgressionView progression_;
  SweepView sweep_;
  AutotuneView autotune_;
  DetailView detail_;
  CompareView compare_;
  RooflineView roofline_;
  RunPanel run_panel_;
  std::optional<ViewId> pending_view_;
  std::string open_path_;
  std::string no_files_message_;
  bool scroll_to_run_panel_ = false;
};

// The default ImGui font covers Latin-1 only, and the step pages and source comments use
// arrows, math operators, Greek letters and superscripts. DejaVu Sans Mono has them all; it is
// used where the system has it, else the default font (such glyphs then show as '?').
void load_font(ImGuiIO& io) {
  static const ImWchar kRanges[] = {
      0x0020, 0x00FF,  // Basic Latin, Latin-1
      0x0370, 0x03FF,  // Greek
      0x1D00, 0x1DBF,  // phonetic extensions: superscript letters such as the T of Kᵀ
      0x2000, 0x209F,  // punctuation, superscripts and subscripts
      0x2190, 0x22FF,  // arrows, mathematical operators
      0x2500, 0x259F,  // box drawing, blocks
      0,
  };
  constexpr float kPixelSize = 14.0f;
  for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
                           "/usr/share/fonts/dejavu-sans-mono-fonts/DejaVuSansMono.ttf",
                           "/usr/share/fonts/TTF/DejaVuSansMono.ttf"}) {
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error) &&
        io.Fonts->AddFontFromFileTTF(path, kPixelSize, nullptr, kRanges) != nullptr)
      return;
  }
  io.Fonts->AddFontDefault();
}

std::string glfw_error_text;

void remember_glfw_error(int code, const char* description) {
  glfw_error_text = std::string(description) + " (GLFW error " + std::to_string(code) + ")";
}

struct FrameStatistics {
  std::vector<double> milliseconds;

  void print(const GuiOptions& options, std::size_t rows, int width, int height) const {
    std::vector<double> sorted = milliseconds;
    std::sort(sorted.begin(), sorted.end());
    const double mean =
        std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
    const double median = sorted[sorted.size() / 2];
    const double p95 = sorted[std::min(sorted.size() - 1, sorted.size() * 95 / 100)];
    const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    std::printf(
        "explorer: view %s: median frame time %.2f ms (mean %.2f, min %.2f, p95 %.2f, max %.2f) "
        "over %zu frames; %zu rows loaded; %dx%d framebuffer; renderer %s\n",
        options.view.c_str(), median, mean, sorted.front(), p95, sorted.back(), sorted.size(), rows,
        width, height, renderer ? renderer : "unknown");
  }
};

}  // namespace

}  // namespace gui

int run_gui(const GuiOptions& options) {
  glfwSetErrorCallback(gui::remember_glfw_error);
  if (!glfwInit()) {
    std::cerr << "explorer: cannot start the GUI: " << gui::glfw_error_text
              << "\nOn a machine without a display run it under `xvfb-run -a explorer ...`, or "
                 "run a headless sweep: "
              << hints::kSweepToFile << "\n";
    return 1;
  }
  const bool scripted = !options.screenshot_path.empty() || options.bench_frames > 0;
  GLFWwindow* window = glfwCreateWindow(options.window_width, options.window_height,
                                        "flashscope explorer", nullptr, nullptr);
  if (window == nullptr) {
    std::cerr << "explorer: cannot open an OpenGL window: " << gui::glfw_error_text << '\n';
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  // Which OpenGL drew the window (NVIDIA's on a GPU host, llvmpipe under a software Xvfb).
  const auto gl_text = [](GLenum name) {
    const char* text = reinterpret_cast<const char*>(glGetString(name));
    return text ? text : "unknown";
  };
  std::printf("explorer: OpenGL %s; vendor %s; renderer %s\n", gl_text(GL_VERSION),
              gl_text(GL_VENDOR), gl_text(GL_RENDERER));
  std::fflush(stdout);
  if (options.sweep_runner) options.sweep_runner->set_display_renderer(gl_text(GL_RENDERER));
  glfwSwapInterval(scripted ? 0 : 1);  // timed and scripted frames must not wait for vsync

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is fixed by code; nothing worth persisting
  ImGui::StyleColorsDark();
  gui::load_font(io);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  int exit_code = 0;
  {
    gui::ExplorerWindow explorer_window(options);
    constexpr int kBenchWarmupFrames = 10;
    const int scripted_frames =
        options.bench_frames > 0 ? kBenchWarmupFrames + options.bench_frames : options.frames;
    gui::FrameStatistics statistics;
    int width = 0, height = 0;
    for (int frame = 0; !glfwWindowShouldClose(window); ++frame) {
      const auto frame_start = std::chrono::steady_clock::now();
      // Idle without spinning, still redrawing 10 times a second; also while a sweep runs, whose
      // kernels share the GPU with these frames where NVIDIA's OpenGL draws them (unthrottled
      // frames there slowed a run's rounds to 10 in 4.5 s on an H100). Scripted frames without a
      // sweep (screenshots, the frame-time bench) run back to back.
      if (scripted && !explorer_window.sweep_running())
        glfwPollEvents();
      else
        glfwWaitEventsTimeout(0.1);

      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      // A scripted frame (screenshot, frame-time bench) must not depend on where the display's
      // pointer happens to be: under Xvfb it rests mid-screen and opened hover tooltips.
      if (scripted) io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
      ImGui::NewFrame();
      explorer_window.draw();
      ImGui::Render();
      glfwGetFramebufferSize(window, &width, &height);
      glViewport(0, 0, width, height);
      const ImVec4 background = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
      glClearColor(background.x, background.y, background.z, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

      // A sweep started by --run-sweep is part of what a screenshot shows: wait for its end.
      const bool last_scripted_frame = scripted && frame + 1 >= scripted_frames &&
                                       !(options.run_sweep && explorer_window.sweep_running());
      if (last_scripted_frame && !options.screenshot_path.empty()) {
        const std::string error = gui::save_framebuffer_png(options.screenshot_path, width, height);
        if (!error.empty()) {
          std::cerr << "explorer: screenshot failed: " << error << '\n';
          exit_code = 1;
        }
      }
      glfwSwapBuffers(window);
      if (options.bench_frames > 0) {
        glFinish();  // count the rendering, not just its submission
        if (frame >= kBenchWarmupFrames)
          statistics.milliseconds.push_back(std::chrono::duration<double, std::milli>(
                                                std::chrono::steady_clock::now() - frame_start)
                                                .count());
      }
      if (last_scripted_frame) break;
    }
    if (!options.run_steps.empty() || options.run_sweep)
      std::printf("explorer: %s\n", explorer_window.run_panel_summary().c_str());
    if (options.bench_frames > 0 && !statistics.milliseconds.empty())
      statistics.print(options, explorer_window.state().row_count(), width, height);
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}

}  // namespace flashscope::explorer
