// Host tests of the speed baselines (profiling/baselines): names, error messages and
// argument checks, none of which needs a GPU. test_baselines_gpu.cpp checks the results.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiling/baselines/baseline_attention.hpp"

using namespace flashscope;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("known references are fa2 and cudnn; built ones construct without a GPU") {
  const std::vector<std::string> known = known_baselines();
  CHECK(known == std::vector<std::string>{"fa2", "cudnn"});
  for (const std::string& name : built_baselines()) {
    CAPTURE(name);
    CHECK(std::find(known.begin(), known.end(), name) != known.end());
    const std::unique_ptr<BaselineAttention> reference = make_baseline(name);
    REQUIRE(reference != nullptr);
    CHECK(reference->name() == name);
    CHECK_FALSE(reference->description().empty());
  }
}

TEST_CASE("an unknown name is refused with the list of known references") {
  try {
    make_baseline("flash3");
    FAIL("make_baseline accepted an unknown name");
  } catch (const BaselineUnavailable& error) {
    CHECK(contains(error.what(), "unknown reference 'flash3'"));
    CHECK(contains(error.what(), "fa2, cudnn"));
  }
}

TEST_CASE("a reference left out of the build says why") {
  const std::vector<std::string> built = built_baselines();
  for (const std::string& name : known_baselines()) {
    if (std::find(built.begin(), built.end(), name) != built.end()) continue;
    CAPTURE(name);
    try {
      make_baseline(name);
      FAIL("make_baseline returned a reference that is not built");
    } catch (const BaselineUnavailable& error) {
      CHECK(contains(error.what(), "reference '" + name + "' is not built: "));
      MESSAGE(error.what());
    }
  }
}

TEST_CASE("run before prepare and unsupported head dimensions are refused") {
  for (const std::string& name : built_baselines()) {
    CAPTURE(name);
    const std::unique_ptr<BaselineAttention> reference = make_baseline(name);
    CHECK_THROWS_AS(reference->run(nullptr, nullptr, nullptr, nullptr, nullptr), std::logic_error);
    for (const int d_head : {12, 512}) {
      CAPTURE(d_head);
      const Problem shape = multi_head_problem(DType::FP16, 1, 128, 1, d_head);
      try {
        reference->prepare(shape);
        FAIL("prepare accepted d_head " << d_head);
      } catch (const BaselineUnavailable& error) {
        CHECK(contains(error.what(), std::to_string(d_head)));
      }
    }
  }
}
