#include "line_prefixer.h"

#include <unistd.h>

#include <cerrno>

namespace braidrun {

bool writeAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

void LinePrefixer::append(const char* data, std::size_t size) {
  pending_.append(data, size);
  std::size_t start = 0;
  std::string out;
  for (std::size_t newline = pending_.find('\n', start); newline != std::string::npos;
       newline = pending_.find('\n', start)) {
    out += prefix_;
    out.append(pending_, start, newline + 1 - start);
    start = newline + 1;
  }
  pending_.erase(0, start);
  // One write per batch keeps the lines of one rank together even when ranks write at once.
  if (!out.empty()) writeAll(outputFd_, out.data(), out.size());
}

void LinePrefixer::flush() {
  if (pending_.empty()) return;
  std::string out = prefix_ + pending_ + "\n";
  pending_.clear();
  writeAll(outputFd_, out.data(), out.size());
}

}  // namespace braidrun
