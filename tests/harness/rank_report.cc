// Run reports: what each rank did, in words for assertion messages, and the line encoding a
// child process uses to send its result to the parent.
#include <csignal>
#include <cstring>
#include <sstream>

#include "harness/harness_internal.h"

namespace braid::test {

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kException:
      return "threw";
    case Outcome::kExited:
      return "exited";
    case Outcome::kSignaled:
      return "killed by signal";
    case Outcome::kTimedOut:
      return "timed out";
    case Outcome::kNoReport:
      return "sent no report";
  }
  return "?";
}

bool RunReport::ok() const {
  if (!setupError.empty() || ranks.empty()) return false;
  for (const RankResult& r : ranks)
    if (r.outcome != Outcome::kOk) return false;
  return true;
}

std::string RunReport::describe() const {
  std::ostringstream out;
  out << shapeName(shape) << " run of " << ranks.size() << " ranks, " << seconds << " s";
  if (!setupError.empty()) out << "\n  setup failed: " << setupError;
  for (const RankResult& r : ranks) {
    out << "\n  rank " << r.rank << " [" << r.where << "]: " << outcomeName(r.outcome);
    if (r.outcome == Outcome::kExited) out << " with code " << r.exitCode;
    if (r.outcome == Outcome::kSignaled)
      out << " " << r.signal << " (" << strsignal(r.signal) << ")";
    constexpr size_t kMaxShown = 20;  // the first failures tell the story
    for (size_t i = 0; i < r.failures.size() && i < kMaxShown; i++)
      out << "\n    " << r.failures[i];
    if (r.failures.size() > kMaxShown)
      out << "\n    ... and " << r.failures.size() - kMaxShown << " more failures";
    if (r.outcome != Outcome::kOk && !r.log.empty()) out << "\n    output:\n" << r.log;
  }
  return out.str();
}

std::vector<std::string> RunReport::valuesOf(const std::string& key) const {
  std::vector<std::string> out;
  for (const RankResult& r : ranks) {
    auto it = r.values.find(key);
    out.push_back(it == r.values.end() ? "" : it->second);
  }
  return out;
}

namespace internal {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

// One record per line: "O <outcome>", "F <failure>", "V <key>\t<value>", and "END" last.
std::string encodeResult(const RankResult& result) {
  std::string out = "O " + std::to_string(static_cast<int>(result.outcome)) + "\n";
  for (const std::string& f : result.failures) out += "F " + escape(f) + "\n";
  for (const auto& [k, v] : result.values) out += "V " + escape(k) + "\t" + escape(v) + "\n";
  out += "END\n";
  return out;
}

bool decodeResult(const std::string& text, RankResult* result) {
  std::istringstream in(text);
  bool complete = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "END") {
      complete = true;
      break;
    }
    if (line.size() < 2) continue;
    std::string body = line.substr(2);
    switch (line[0]) {
      case 'O':
        result->outcome = static_cast<Outcome>(std::stoi(body));
        break;
      case 'F':
        result->failures.push_back(unescape(body));
        break;
      case 'V': {
        size_t tab = body.find('\t');
        if (tab != std::string::npos)
          result->values[unescape(body.substr(0, tab))] = unescape(body.substr(tab + 1));
        break;
      }
      default:
        break;
    }
  }
  return complete;
}

}  // namespace internal
}  // namespace braid::test
