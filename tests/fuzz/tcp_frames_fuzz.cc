// Fuzz target: the TCP transport's receiving end (transports/tcp/tcp_receive_pump.cc) reading a
// byte stream from a peer. The input is what arrives on the socket; it must deliver exactly
// the well-formed {slot descriptor, payload} frames a reference reader finds, in order, and then
// fail cleanly (a frame larger than a slot, a truncated frame, the end of the stream): no
// crash, no overflow of a slot, no hang.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "transports/tcp/tcp_receive_pump.h"
#include "util/status.h"

namespace {

constexpr size_t kSlotBytes = 64;
constexpr uint32_t kSlots = 4;

struct Frame {
  braid::SlotInfo info;
  std::string payload;
};

// The frames a correct reader takes from `bytes` before it must stop: each is a slot descriptor
// (its payload length first) followed by the payload. A status frame (the sender's current call,
// tag 0xfffffffe with 24 bytes) is consumed without becoming a slot.
std::vector<Frame> referenceFrames(const uint8_t* data, size_t size) {
  std::vector<Frame> out;
  size_t pos = 0;
  const size_t header = sizeof(braid::SlotInfo);
  while (size - pos >= header) {
    Frame f;
    memcpy(&f.info, data + pos, header);
    if (f.info.tag == 0xfffffffeu && f.info.bytes == 24) {
      if (size - pos - header < 24) break;
      pos += header + 24;
      continue;
    }
    if (f.info.bytes > kSlotBytes || size - pos - header < f.info.bytes) break;
    f.payload.assign(reinterpret_cast<const char*>(data) + pos + header, f.info.bytes);
    out.push_back(f);
    pos += header + f.info.bytes;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace braid;
  if (size > 16384) return 0;  // stays within the socket buffer: one write, then EOF
  int sv[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  FUZZ_CHECK(send(sv[1], data, size, MSG_NOSIGNAL) == static_cast<ssize_t>(size));
  close(sv[1]);
  const std::vector<Frame> expected = referenceFrames(data, size);
  {
    TcpReceivePump pump({sv[0]}, kSlots, kSlotBytes, /*peer=*/1, /*peerOnThisHost=*/true);
    FifoReceiver rx;
    rx.attach(pump.fifo(), &pump, /*acceptsClaims=*/true, &pump);
    WaitPolicy policy;
    policy.spinIters = 1 << 20;  // spin: a sleeping reader would dominate the time per input
    policy.timeoutS = 10;        // a hang shows up as a failed check, not a stuck fuzzer
    size_t got = 0;
    for (;;) {
      const void* slot;
      SlotInfo info;
      if (rx.wait(policy, &slot, &info) != ncclSuccess) break;
      FUZZ_CHECK(got < expected.size());
      FUZZ_CHECK(memcmp(&info, &expected[got].info, sizeof(info)) == 0);
      FUZZ_CHECK(memcmp(slot, expected[got].payload.data(), info.bytes) == 0);
      rx.release();
      got++;
    }
    if (got != expected.size())
      fprintf(stderr, "got %zu of %zu frames: %s\n", got, expected.size(),
              braid::lastError().c_str());
    FUZZ_CHECK(got == expected.size());
  }
  return 0;
}
