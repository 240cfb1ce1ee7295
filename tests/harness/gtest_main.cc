// The main of every GoogleTest program of tests/ (braid_add_test links it instead of
// GoogleTest's own): the same run, with an exit status that tells a skip from a pass. CTest
// counts a test as skipped only by its exit status, 77 (SKIP_RETURN_CODE, cmake/BraidTest.cmake),
// never by a pattern in its output, so that a program that failed cannot pass for one that
// skipped.
//
// Exit status: GoogleTest's (1) when a test failed; 1 as well when a test skipped without saying
// why (GTEST_SKIP() with no message); 77 when no test passed or failed and every one that ran
// skipped, saying why (GTEST_SKIP() << "no CUDA device: ..."); 0 otherwise (tests passed, some
// may have skipped beside them: their reasons are in the output).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

/// Collects the skipped tests that gave no reason.
class SilentSkips : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    const testing::TestResult& result = *info.result();
    if (!result.Skipped()) return;
    for (int i = 0; i < result.total_part_count(); i++) {
      const testing::TestPartResult& part = result.GetTestPartResult(i);
      if (part.skipped() && part.message() != nullptr && part.message()[0] != '\0') return;
    }
    silent.push_back(std::string(info.test_suite_name()) + "." + info.name());
  }
  std::vector<std::string> silent;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  auto* silentSkips = new SilentSkips;  // owned by the listener list
  testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  unit.listeners().Append(silentSkips);
  const int status = RUN_ALL_TESTS();
  if (status != 0) return status;
  if (!silentSkips->silent.empty()) {
    for (const std::string& name : silentSkips->silent)
      std::fprintf(stderr, "%s skipped without saying why (GTEST_SKIP() << \"reason\")\n",
                   name.c_str());
    return 1;
  }
  if (unit.skipped_test_count() > 0 && unit.successful_test_count() == 0) {
    std::printf("every test that ran skipped, saying why: exit status 77 (skipped)\n");
    std::fflush(stdout);
    return 77;
  }
  return 0;
}
