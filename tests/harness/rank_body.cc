// Running one rank's body: failures recorded on the context, GoogleTest assertion failures on
// the rank's thread, and exceptions all end up in the rank's result.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>

#include "harness/harness_internal.h"

namespace braid::test {

namespace {

thread_local int currentRank = -1;

std::mutex captureMutex;
std::map<int, std::vector<std::string>> capturedFailures;  // by rank

class CaptureListener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed() || currentRank < 0) return;
    std::ostringstream text;
    text << (result.file_name() ? result.file_name() : "?") << ":" << result.line_number() << ": "
         << result.summary();
    std::lock_guard<std::mutex> lock(captureMutex);
    capturedFailures[currentRank].push_back(text.str());
  }
};

std::vector<std::string> takeCaptured(int rank) {
  std::lock_guard<std::mutex> lock(captureMutex);
  auto it = capturedFailures.find(rank);
  if (it == capturedFailures.end()) return {};
  std::vector<std::string> out = std::move(it->second);
  capturedFailures.erase(it);
  return out;
}

}  // namespace

const char* shapeName(RankShape shape) {
  switch (shape) {
    case RankShape::kThreads:
      return "threads";
    case RankShape::kProcesses:
      return "processes";
    case RankShape::kNamespaces:
      return "namespaces";
  }
  return "?";
}

ncclComm_t RankContext::initComm() {
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, nranks_, id_, rank_);
  if (r != ncclSuccess) {
    fail(std::string("ncclCommInitRank: ") + ncclGetErrorString(r) + ": " +
         ncclGetLastError(nullptr));
    return nullptr;
  }
  return comm;
}

void RankContext::fail(const std::string& what) {
  failures_.push_back(what);
}

void RankContext::report(const std::string& key, const std::string& value) {
  values_[key] = value;
}

namespace internal {

FailureCapture::FailureCapture() : listener_(new CaptureListener) {
  ::testing::UnitTest::GetInstance()->listeners().Append(static_cast<CaptureListener*>(listener_));
}

FailureCapture::~FailureCapture() {
  auto* l = static_cast<CaptureListener*>(listener_);
  delete ::testing::UnitTest::GetInstance()->listeners().Release(l);
}

RankResult runRankBody(RankContext& ctx, const RankFn& fn) {
  RankResult result;
  result.rank = ctx.rank();
  currentRank = ctx.rank();
  bool threw = false;
  std::string exceptionText;
  try {
    fn(ctx);
  } catch (const std::exception& e) {
    threw = true;
    exceptionText = std::string("exception: ") + e.what();
  } catch (...) {
    threw = true;
    exceptionText = "exception of unknown type";
  }
  currentRank = -1;
  result.failures = ctx.failures();
  for (std::string& f : takeCaptured(ctx.rank())) result.failures.push_back(std::move(f));
  result.values = ctx.values();
  if (threw) {
    result.failures.push_back(exceptionText);
    result.outcome = Outcome::kException;
  } else {
    result.outcome = result.failures.empty() ? Outcome::kOk : Outcome::kFailed;
  }
  return result;
}

ScopedEnv::ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
  for (const auto& [name, value] : vars) {
    const char* old = getenv(name.c_str());
    saved_.push_back({name, {old != nullptr, old ? old : ""}});
    setenv(name.c_str(), value.c_str(), 1);
  }
}

ScopedEnv::~ScopedEnv() {
  // Restored in reverse so a variable named twice ends with its original value.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second.first)
      setenv(it->first.c_str(), it->second.second.c_str(), 1);
    else
      unsetenv(it->first.c_str());
  }
}

}  // namespace internal
}  // namespace braid::test
