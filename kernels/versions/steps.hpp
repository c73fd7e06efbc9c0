// Every step of the progression, as its folder's descriptor (vNN/step.hpp) declares it. This is
// the one list of steps: configs/ (picks, tune sets, build plans), the instantiation generator,
// launch validation and the explorer (step pages, the last step number) derive from it. Adding a
// step adds its folder's include and descriptor here (docs/adding-a-step.md);
// tests/configs/test_step_descriptors.cpp fails when a folder under kernels/versions is missing
// from this list, lacks its step.hpp or its docs/versions/NN.md page.
#pragma once

#include <array>
#include <span>
#include <utility>

#include "kernels/common/step_descriptor.hpp"
#include "kernels/versions/v01_07/step.hpp"
#include "kernels/versions/v08/step.hpp"
#include "kernels/versions/v09/step.hpp"
#include "kernels/versions/v10/step.hpp"
#include "kernels/versions/v11/step.hpp"
#include "kernels/versions/v12/step.hpp"
#include "kernels/versions/v13/step.hpp"
#include "kernels/versions/v14/step.hpp"
#include "kernels/versions/v15/step.hpp"
#include "kernels/versions/v16/step.hpp"
#include "kernels/versions/v17/step.hpp"
#include "kernels/versions/v18/step.hpp"
#include "kernels/versions/v19/step.hpp"
#include "kernels/versions/v20/step.hpp"
#include "kernels/versions/v21/step.hpp"
#include "kernels/versions/v22/step.hpp"
#include "kernels/versions/v23/step.hpp"
#include "kernels/versions/v24/step.hpp"
#include "kernels/versions/v25/step.hpp"
#include "kernels/versions/v26/step.hpp"
#include "kernels/versions/v27/step.hpp"
#include "kernels/versions/v28/step.hpp"
#include "kernels/versions/v29/step.hpp"
#include "kernels/versions/v30/step.hpp"
#include "kernels/versions/v31/step.hpp"
#include "kernels/versions/v32/step.hpp"
#include "kernels/versions/v33/step.hpp"
#include "kernels/versions/v34/step.hpp"
// The backward track (docs/spec/backward-track.md), numbered from kFirstBackward.
#include "kernels/versions/b01/step.hpp"
#include "kernels/versions/b02/step.hpp"
#include "kernels/versions/b03/step.hpp"
#include "kernels/versions/b04/step.hpp"
#include "kernels/versions/b05/step.hpp"
#include "kernels/versions/b06/step.hpp"

namespace flashscope::versions {

// The forward steps in step order, numbered 1, 2, ... without gaps (checked below).
inline constexpr std::array kAll = {
    kStep01, kStep02, kStep03, kStep04, kStep05, kStep06, kStep07, kStep08, kStep09,
    kStep10, kStep11, kStep12, kStep13, kStep14, kStep15, kStep16, kStep17, kStep18,
    kStep19, kStep20, kStep21, kStep22, kStep23, kStep24, kStep25, kStep26, kStep27,
    kStep28, kStep29, kStep30, kStep31, kStep32, kStep33, kStep34,
};

inline constexpr int kFirst = 1;
inline constexpr int kLast = static_cast<int>(kAll.size());

// The backward track's steps B1, B2, ... in order, numbered kFirstBackward, kFirstBackward + 1,
// ... without gaps (checked below): their own progression, whose numbers never meet the forward's
// (backward-track.md §1.1). kAll stays the forward progression, which the views and reports that
// draw steps 1..kLast read.
inline constexpr std::array kBackward = {kStepB1, kStepB2, kStepB3, kStepB4, kStepB5, kStepB6};

inline constexpr int kFirstBackward = kFirstBackwardStep;  // B1 (step_descriptor.hpp)
inline constexpr int kLastBackward = kFirstBackward + static_cast<int>(kBackward.size()) - 1;

// Every step of both passes, the forward's first: what the generator instantiates, configs/
// derives its sets from and step numbers are looked up in.
namespace detail {
// StepDescriptor has no default (StepRules must be named), so the joined list is built from both
// lists' elements directly.
template <std::size_t... F, std::size_t... B>
constexpr auto joined(std::index_sequence<F...>, std::index_sequence<B...>) {
  return std::array<StepDescriptor, sizeof...(F) + sizeof...(B)>{kAll[F]..., kBackward[B]...};
}
}  // namespace detail
inline constexpr auto kEvery = detail::joined(std::make_index_sequence<kAll.size()>{},
                                              std::make_index_sequence<kBackward.size()>{});

// nullptr outside kFirst..kLast and kFirstBackward..kLastBackward.
constexpr const StepDescriptor* find(int number) {
  if (number >= kFirst && number <= kLast) return &kAll[static_cast<std::size_t>(number - kFirst)];
  if (number >= kFirstBackward && number <= kLastBackward)
    return &kBackward[static_cast<std::size_t>(number - kFirstBackward)];
  return nullptr;
}

namespace detail {

constexpr bool numbered_in_order() {
  for (std::size_t i = 0; i < kAll.size(); ++i)
    if (kAll[i].number != kFirst + static_cast<int>(i)) return false;
  return true;
}

// The forward list holds forward steps, the backward list backward steps numbered in order.
constexpr bool passes_listed_apart() {
  for (const StepDescriptor& step : kAll)
    if (step.pass != Pass::forward) return false;
  for (std::size_t i = 0; i < kBackward.size(); ++i)
    if (kBackward[i].pass != Pass::backward ||
        kBackward[i].number != kFirstBackward + static_cast<int>(i))
      return false;
  return true;
}

// The Ampere steps come first; kFirstHopperStep (kernels/common/config.hpp) is where the Hopper
// track starts, and every forward step from there on is on it. (The backward track has its own
// Ampere steps, B1 and B2, and names each step's track in its descriptor.)
constexpr bool tracks_match_first_hopper_step() {
  for (const StepDescriptor& step : kAll)
    if ((step.track == Track::hopper) != (step.number >= kFirstHopperStep)) return false;
  return true;
}

}  // namespace detail

static_assert(detail::numbered_in_order(),
              "kernels/versions/steps.hpp: kAll must list the steps in order, numbered 1, 2, ...");
static_assert(detail::passes_listed_apart(),
              "kernels/versions/steps.hpp: kAll lists forward steps; kBackward backward steps "
              "numbered kFirstBackward, kFirstBackward + 1, ...");
static_assert(detail::tracks_match_first_hopper_step(),
              "kernels/versions/steps.hpp: steps before kFirstHopperStep are Ampere steps, the "
              "rest Hopper steps");

}  // namespace flashscope::versions
