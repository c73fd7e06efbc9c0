# Writes a C++ source that embeds, for every step the descriptors declare (kernels/versions/steps.hpp,
# passed in by the configure step as STEPS and FOLDERS), its docs/versions/NN.md page and
# the `diff -ruN` of its kernels/versions folder against the previous step's folder.
#
#   cmake -DSOURCE_DIR=<repo> -DOUTPUT=<file.cpp> -DSTEPS=<1;2;...> -DFOLDERS=<v01_07;...;v21>
#         [-DDIFF_EXECUTABLE=<diff>] -P embed_step_pages.cmake
#
# The generated array has one entry per descriptor of both passes (versions::kEvery), so a step list
# that disagrees with the descriptors does not compile. A missing docs page becomes an explanatory note in the explorer
# rather than a build error (tests/configs/test_step_descriptors.cpp requires every page), and so
# does a missing folder (its step is then diffed against the nearest earlier folder).
# The output is rewritten only when it changes.
cmake_minimum_required(VERSION 3.21)

foreach(required SOURCE_DIR OUTPUT STEPS FOLDERS)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "embed_step_pages.cmake: -D${required}=... is required")
  endif()
endforeach()

set(versions_dir "${SOURCE_DIR}/kernels/versions")
set(delimiter "fsembed")

list(LENGTH STEPS step_count)
list(LENGTH FOLDERS folder_count)
if(NOT step_count EQUAL folder_count)
  message(FATAL_ERROR "embed_step_pages.cmake: ${step_count} STEPS but ${folder_count} FOLDERS")
endif()

# The folder of the step at `index` in STEPS.
function(step_folder index out_var)
  list(GET FOLDERS ${index} folder)
  set(${out_var} "${folder}" PARENT_SCOPE)
endfunction()

# The first and last step that share the folder of the step at `index` (steps 1-7: v01_07).
function(folder_step_range index first_var last_var)
  list(GET FOLDERS ${index} folder)
  set(first "")
  set(last "")
  foreach(position RANGE 0 ${last_index})
    list(GET FOLDERS ${position} candidate)
    if(candidate STREQUAL folder)
      list(GET STEPS ${position} step_number)
      if(first STREQUAL "")
        set(first ${step_number})
      endif()
      set(last ${step_number})
    endif()
  endforeach()
  set(${first_var} ${first} PARENT_SCOPE)
  set(${last_var} ${last} PARENT_SCOPE)
endfunction()

# Copies kernels/versions/<folder> to <destination>/<folder> with the folder's own name in the
# namespace and in include paths written as vNN (flashscope::v21 -> flashscope::vNN,
# kernels/versions/v21/ -> kernels/versions/vNN/): every snapshot repeats its neighbour under its
# own name, and a diff of the raw folders would show those renames on every line that names them,
# burying the step's one technique. scripts/step_diff.sh does the same for the command line.
function(copy_normalized_folder folder destination)
  file(GLOB_RECURSE files RELATIVE "${versions_dir}/${folder}" "${versions_dir}/${folder}/*")
  foreach(file IN LISTS files)
    file(READ "${versions_dir}/${folder}/${file}" content)
    string(REPLACE "flashscope::${folder}" "flashscope::vNN" content "${content}")
    string(REPLACE "kernels/versions/${folder}/" "kernels/versions/vNN/" content "${content}")
    file(WRITE "${destination}/${folder}/${file}" "${content}")
  endforeach()
endfunction()

# Appends `text` to `code_var` as a raw string literal.
function(append_literal code_var text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "embed_step_pages.cmake: embedded text contains )${delimiter}\"; "
                        "choose another raw-string delimiter")
  endif()
  set(${code_var} "${${code_var}}text(R\"${delimiter}(${text})${delimiter}\")" PARENT_SCOPE)
endfunction()

# Diff headers carry file timestamps; dropping them keeps the generated file stable.
function(strip_diff_timestamps diff_var)
  string(REGEX REPLACE "(\n(---|\\+\\+\\+) [^\t\n]*)\t[^\n]*" "\\1" stripped "${${diff_var}}")
  set(${diff_var} "${stripped}" PARENT_SCOPE)
endfunction()

set(entries "")
math(EXPR last_index "${step_count} - 1")
foreach(index RANGE 0 ${last_index})
  list(GET STEPS ${index} step)
  # Backward steps (101, 102, ...) are B1, B2, ... to people, and their pages are B1.md, ...
  # (kernels/common/step_descriptor.hpp: step_name).
  set(backward_base FALSE)
  if(step GREATER_EQUAL 101)
    math(EXPR backward_number "${step} - 100")
    set(page_name "B${backward_number}.md")
    if(step EQUAL 101)
      set(backward_base TRUE)
    endif()
  elseif(step LESS 10)
    set(page_name "0${step}.md")
  else()
    set(page_name "${step}.md")
  endif()
  set(doc_path "docs/versions/${page_name}")
  set(doc_text "")
  if(EXISTS "${SOURCE_DIR}/${doc_path}")
    file(READ "${SOURCE_DIR}/${doc_path}" doc_text)
  endif()

  step_folder(${index} folder)
  set(previous_folder "")
  if(index GREATER 0)
    math(EXPR previous_index "${index} - 1")
    step_folder(${previous_index} previous_folder)
  endif()
  set(diff_text "")
  if(index EQUAL 0)
    set(summary "Step ${step} is the base implementation: there is no earlier step to diff against.")
  elseif(backward_base)
    # Diffing the backward's first kernel against the last forward step's would show two
    # different algorithms, not one technique.
    string(CONCAT summary "Step B1 is the backward track's base implementation: there is no "
                  "earlier backward step to diff against.")
  elseif(folder STREQUAL previous_folder)
    math(EXPR previous "${step} - 1")
    folder_step_range(${index} first_sharing last_sharing)
    string(CONCAT summary "Steps ${first_sharing}-${last_sharing} share kernels/versions/${folder}: "
                  "step ${step} differs from step ${previous} only in its kernel configuration "
                  "(compare the two configs).")
  elseif(NOT IS_DIRECTORY "${versions_dir}/${folder}")
    string(CONCAT summary "kernels/versions/${folder} was not in the source tree when this "
                  "explorer was built.")
  else()
    # The nearest earlier folder that exists: normally the previous step's.
    set(expected_folder "${previous_folder}")
    set(previous_folder "")
    set(candidate ${previous_index})
    while(candidate GREATER_EQUAL 0 AND previous_folder STREQUAL "")
      step_folder(${candidate} candidate_folder)
      if(IS_DIRECTORY "${versions_dir}/${candidate_folder}")
        set(previous_folder "${candidate_folder}")
      endif()
      math(EXPR candidate "${candidate} - 1")
    endwhile()
    if(previous_folder STREQUAL "")
      string(CONCAT summary "No earlier kernel folder existed when this explorer was built; "
                    "nothing to diff kernels/versions/${folder} against.")
    elseif(NOT DIFF_EXECUTABLE)
      set(summary "The `diff` program was not found when this explorer was built.")
    else()
      set(normalized_root "${OUTPUT}.folders")
      file(REMOVE_RECURSE "${normalized_root}")
      copy_normalized_folder("${previous_folder}" "${normalized_root}")
      copy_normalized_folder("${folder}" "${normalized_root}")
      execute_process(
        COMMAND "${DIFF_EXECUTABLE}" -ruN "${previous_folder}" "${folder}"
        WORKING_DIRECTORY "${normalized_root}"
        RESULT_VARIABLE diff_status
        OUTPUT_VARIABLE diff_text
        ERROR_VARIABLE diff_error)
      file(REMOVE_RECURSE "${normalized_root}")
      string(CONCAT summary "scripts/step_diff.sh ${step}: diff -ruN kernels/versions/"
                    "${previous_folder} kernels/versions/${folder}, each folder's own name in "
                    "namespaces and include paths written as vNN")
      if(NOT previous_folder STREQUAL expected_folder)
        string(APPEND summary " (kernels/versions/${expected_folder} did not exist)")
      endif()
      if(diff_status EQUAL 0)
        string(APPEND summary ": no differences")
      elseif(diff_status EQUAL 1)
        strip_diff_timestamps(diff_text)
      else()
        set(summary "diff failed (${diff_status}): ${diff_error}")
        set(diff_text "")
      endif()
    endif()
  endif()

  set(entry "    {${step}, text(\"${doc_path}\"), ")
  append_literal(entry "${doc_text}")
  string(APPEND entry ",\n     text(\"kernels/versions/${folder}\"), ")
  append_literal(entry "${summary}")
  string(APPEND entry ",\n     ")
  append_literal(entry "${diff_text}")
  string(APPEND entries "${entry}},\n")
endforeach()

set(code "// Generated by explorer/model/embed_step_pages.cmake from docs/versions and
// kernels/versions. Do not edit: rebuild to refresh.
#include \"explorer/model/step_pages.hpp\"

#include <cstddef>

#include \"kernels/versions/steps.hpp\"

namespace flashscope::explorer {

namespace {

template <std::size_t size>
constexpr std::string_view text(const char (&literal)[size]) {
  return {literal, size - 1};
}

// One page per step of both passes, in the order of kernels/versions/steps.hpp's kEvery.
constexpr StepPage kStepPages[versions::kEvery.size()] = {
${entries}};

}  // namespace

std::span<const StepPage> embedded_step_pages() { return kStepPages; }

const StepPage* embedded_step_page(int step) {
  for (const StepPage& page : kStepPages)
    if (page.step == step) return &page;
  return nullptr;
}

}  // namespace flashscope::explorer
")

file(WRITE "${OUTPUT}.tmp" "${code}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
