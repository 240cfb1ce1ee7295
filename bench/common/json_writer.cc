#include "json_writer.h"

#include <cinttypes>
#include <cmath>

namespace braid::bench {
namespace {

void writeEscaped(std::FILE* out, const std::string& text) {
  std::fputc('"', out);
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        std::fputs("\\\"", out);
        break;
      case '\\':
        std::fputs("\\\\", out);
        break;
      case '\n':
        std::fputs("\\n", out);
        break;
      case '\t':
        std::fputs("\\t", out);
        break;
      case '\r':
        std::fputs("\\r", out);
        break;
      default:
        if (c < 0x20) {
          std::fprintf(out, "\\u%04x", c);
        } else {
          std::fputc(c, out);
        }
    }
  }
  std::fputc('"', out);
}

}  // namespace

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (stack_.back().second) std::fputc(',', out_);
    stack_.back().second = true;
  }
}

void JsonWriter::beginObject() {
  beforeValue();
  std::fputc('{', out_);
  stack_.emplace_back('}', false);
}

void JsonWriter::beginArray() {
  beforeValue();
  std::fputc('[', out_);
  stack_.emplace_back(']', false);
}

void JsonWriter::endObject() {
  if (afterKey_) null();
  if (stack_.empty()) return;
  std::fputc(stack_.back().first, out_);
  stack_.pop_back();
}

void JsonWriter::endArray() {
  endObject();
}

void JsonWriter::key(const char* name) {
  beforeValue();
  writeEscaped(out_, name);
  std::fputc(':', out_);
  afterKey_ = true;
}

void JsonWriter::string(const std::string& text) {
  beforeValue();
  writeEscaped(out_, text);
}

void JsonWriter::number(std::int64_t value) {
  beforeValue();
  std::fprintf(out_, "%" PRId64, value);
}

void JsonWriter::number(double value) {
  if (!std::isfinite(value)) {
    string(std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"));
    return;
  }
  beforeValue();
  std::fprintf(out_, "%f", value);
}

void JsonWriter::boolean(bool value) {
  beforeValue();
  std::fputs(value ? "true" : "false", out_);
}

void JsonWriter::null() {
  beforeValue();
  std::fputs("null", out_);
}

void JsonWriter::finish() {
  while (!stack_.empty()) endObject();
  std::fputc('\n', out_);
}

}  // namespace braid::bench
