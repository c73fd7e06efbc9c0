// Every step of the progression, as its folder's descriptor (vNN/step.hpp) declares it. This is
// the one list of steps: configs/ (picks, tune sets, build plans), the instantiation generator,
// launch validation and the explorer (step pages, the last step number) derive from it. Adding a
// step adds its folder's include and descriptor here (docs/adding-a-step.md);
// tests/configs/test_step_descriptors.cpp fails when a folder under kernels/versions is missing
// from this list, lacks its step.hpp or its docs/versions/NN.md page.
#pragma once

#include <array>
#include <span>

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

namespace flashscope::versions {

// In step order, numbered 1, 2, ... without gaps (checked below).
inline constexpr std::array kAll = {
    kStep01, kStep02, kStep03, kStep04, kStep05, kStep06, kStep07, kStep08, kStep09,
    kStep10, kStep11, kStep12, kStep13, kStep14, kStep15, kStep16, kStep17, kStep18,
    kStep19, kStep20, kStep21, kStep22, kStep23, kStep24, kStep25, kStep26,
};

inline constexpr int kFirst = 1;
inline constexpr int kLast = static_cast<int>(kAll.size());

// nullptr outside kFirst..kLast.
constexpr const StepDescriptor* find(int number) {
  if (number < kFirst || number > kLast) return nullptr;
  return &kAll[static_cast<std::size_t>(number - kFirst)];
}

namespace detail {

constexpr bool numbered_in_order() {
  for (std::size_t i = 0; i < kAll.size(); ++i)
    if (kAll[i].number != kFirst + static_cast<int>(i)) return false;
  return true;
}

// The Ampere steps come first; kFirstHopperStep (kernels/common/config.hpp) is where the Hopper
// track starts, and every step from there on is on it.
constexpr bool tracks_match_first_hopper_step() {
  for (const StepDescriptor& step : kAll)
    if ((step.track == Track::hopper) != (step.number >= kFirstHopperStep)) return false;
  return true;
}

}  // namespace detail

static_assert(detail::numbered_in_order(),
              "kernels/versions/steps.hpp: kAll must list the steps in order, numbered 1, 2, ...");
static_assert(detail::tracks_match_first_hopper_step(),
              "kernels/versions/steps.hpp: steps before kFirstHopperStep are Ampere steps, the "
              "rest Hopper steps");

}  // namespace flashscope::versions
