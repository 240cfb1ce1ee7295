// A small streaming JSON writer: enough for the perf tests' results file, no dependency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace braid::bench {

class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* out) : out_(out) {}

  void beginObject();
  void endObject();
  void beginArray();
  void endArray();
  /// The key of the next value inside an object.
  void key(const char* name);

  void string(const std::string& text);
  void number(std::int64_t value);
  void number(double value);  ///< NaN and infinities are written as strings, as nccl-tests does
  void boolean(bool value);
  void null();

  /// Closes every open array and object.
  void finish();
  /// Depth of open arrays and objects.
  std::size_t depth() const { return stack_.size(); }

 private:
  void beforeValue();

  std::FILE* out_;
  // Per open container: whether it already holds an element (a comma goes before the next).
  std::vector<std::pair<char, bool>> stack_;
  bool afterKey_ = false;
};

}  // namespace braid::bench
