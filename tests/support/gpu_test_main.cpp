// Entry point of every GPU test executable (tests/support/gpu_presence.hpp decides):
//  * no GPU on this machine: prints "SKIPPED: no CUDA device (...)" and exits 77, which ctest
//    counts as skipped (SKIP_RETURN_CODE), never as passed;
//  * GPUs the driver lists but CUDA cannot use, or FLASHSCOPE_REQUIRE_GPU=1 without a device:
//    prints "FAILED: ..." and exits 1;
//  * otherwise runs the tests; when none failed but a test case compared nothing
//    (skip_test_case), prints each reason after "SKIPPED:" and exits 77; when no test case
//    matched the --test-case filter (a renamed case under an old ctest entry), fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "tests/support/gpu_presence.hpp"

namespace {

// Remembers how many test cases passed the filters, which doctest's run() does not return.
unsigned g_test_cases_run = 0;
bool g_test_run_ended = false;

struct RunCounter : doctest::IReporter {
  explicit RunCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_test_cases_run = stats.numTestCasesPassingFilters;
    g_test_run_ended = true;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("flashscope_run_counter", 1, RunCounter);

}  // namespace

int main(int argc, char** argv) {
  using namespace flashscope::testing;
  const GpuTestDecision decision = decide_gpu_tests(current_gpu_environment());
  if (decision.action != GpuTestAction::run) {
    std::cout << decision.message << "\n";
    return decision.action == GpuTestAction::skip ? kSkipExitCode : 1;
  }
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (status != 0 || context.shouldExit()) return status;
  if (g_test_run_ended && g_test_cases_run == 0) {
    std::cout << "FAILED: no test case matches the filter; nothing was run\n";
    return 1;
  }
  if (!skipped_test_cases().empty()) {
    for (const std::string& reason : skipped_test_cases())
      std::cout << "SKIPPED: " << reason << "\n";
    return kSkipExitCode;
  }
  return 0;
}
