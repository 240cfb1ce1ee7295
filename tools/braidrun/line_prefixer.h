// Tags a rank's output stream line by line ("[rank3]: ...") so that the interleaved output of
// many ranks stays readable. Lines are written whole, so a line never mixes two ranks.
#pragma once

#include <cstddef>
#include <string>

namespace braidrun {

class LinePrefixer {
 public:
  LinePrefixer(std::string prefix, int outputFd)
      : prefix_(std::move(prefix)), outputFd_(outputFd) {}

  /// Writes every complete line in data (prefixed); keeps a trailing partial line for later.
  void append(const char* data, std::size_t size);
  /// Writes the pending partial line, if any, ending it with a newline (the stream closed).
  void flush();

 private:
  std::string prefix_;
  int outputFd_;
  std::string pending_;
};

/// write(2) of the whole buffer, retrying on EINTR and short writes; false on error.
bool writeAll(int fd, const char* data, std::size_t size);

}  // namespace braidrun
