// The slots of a TCP connection's FIFOs are private memory whose pages the kernel maps on first
// touch. A ring posts the same number of slots every call, so with out-of-place calls it may use
// only every other slot; a call that posts an odd number (a one-slot barrier) then moves it onto
// slots it never touched, and the next calls fault their pages in (512 KiB a call, measured at
// 1 MiB over loopback: 4 calls at twice the time). So the first slot of a new size makes that
// many bytes of every slot resident at once, keeping what slots in use hold; a lent payload
// (the rank's own memory) leaves the slots as they are.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "transports/tcp/tcp_receive_pump.h"
#include "transports/tcp/tcp_send_engine.h"
#include "unit/unit_helpers.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr uint32_t kSlots = 8;
constexpr size_t kPagesSlotBytes = 64 << 10;
constexpr size_t kLarge = 40000;  // ten pages
const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// Pages of [p, p + bytes) the kernel has mapped.
size_t residentPages(const void* p, size_t bytes) {
  const auto first = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes + kPage - 1) & ~(kPage - 1);
  std::vector<unsigned char> present((end - first) / kPage);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(first), end - first, present.data()), 0);
  size_t n = 0;
  for (unsigned char v : present) n += v & 1;
  return n;
}

size_t pagesOf(size_t bytes) {
  return (bytes + kPage - 1) / kPage;
}

// Unmaps every slot's pages, as a fresh allocation would have them (the allocator may have
// handed out memory touched before).
void dropSlotPages(FifoControl* c) {
  ASSERT_EQ(madvise(fifoSlots(c), kSlots * kPagesSlotBytes, MADV_DONTNEED), 0);
  for (uint32_t k = 0; k < kSlots; k++)
    ASSERT_EQ(residentPages(fifoSlots(c) + k * kPagesSlotBytes, kPagesSlotBytes), 0u)
        << "slot " << k;
}

std::string frame(const SlotInfo& info, char fill) {
  return std::string(reinterpret_cast<const char*>(&info), sizeof(info)) +
         std::string(info.bytes, fill);
}

TEST(SlotPages, AReceivedFrameMapsThatMuchOfEverySlotKeepingWhatTheyHold) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  TcpReceivePump pump({sv[0]}, kSlots, kPagesSlotBytes, /*peer=*/1, /*peerOnThisHost=*/true);
  FifoReceiver rx;
  rx.attach(pump.fifo(), &pump, /*acceptsClaims=*/true, &pump);
  dropSlotPages(pump.fifo());
  const WaitPolicy policy = unit_test::testPolicy();

  // A small frame, kept unreleased in slot 0 while a larger one arrives.
  const SlotInfo small{100, 1, {1, 2, 3}}, large{kLarge, 3, {4, 5, 6}};
  const std::string first = frame(small, 'a'), second = frame(large, 'b');
  ASSERT_EQ(send(sv[1], first.data(), first.size(), 0), static_cast<ssize_t>(first.size()));
  const void* slot0 = nullptr;
  SlotInfo info;
  ASSERT_EQ(rx.wait(policy, &slot0, &info), ncclSuccess) << lastError();
  ASSERT_EQ(send(sv[1], second.data(), second.size(), 0), static_cast<ssize_t>(second.size()));
  pump.pull();

  for (uint32_t k = 0; k < kSlots; k++)
    EXPECT_EQ(residentPages(fifoSlots(pump.fifo()) + k * kPagesSlotBytes, kLarge), pagesOf(kLarge))
        << "slot " << k << " after a " << kLarge << "-byte frame";
  EXPECT_EQ(std::string(static_cast<const char*>(rx.landedPayload(slot0)), small.bytes),
            std::string(small.bytes, 'a'))
      << "the slot in use lost its payload";
  rx.release();
  const void* slot1 = nullptr;
  ASSERT_EQ(rx.wait(policy, &slot1, &info), ncclSuccess) << lastError();
  EXPECT_EQ(info.bytes, kLarge);
  EXPECT_EQ(std::string(static_cast<const char*>(rx.landedPayload(slot1)), kLarge),
            std::string(kLarge, 'b'));
  rx.release();
  close(sv[1]);
}

TEST(SlotPages, ACopiedSlotMapsEverySlotALentOneNone) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int bufferBytes = 1 << 20;  // both frames fit: nothing needs a reader
  for (int fd : sv) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
  TcpSendEngine engine({sv[0]}, kSlots, kPagesSlotBytes, /*inlineBytes=*/kPagesSlotBytes,
                       /*peer=*/1);
  FifoSender tx;
  tx.attach(engine.fifo(), &engine, /*acceptsLent=*/true, &engine);
  dropSlotPages(engine.fifo());
  const WaitPolicy policy = unit_test::testPolicy();
  auto slotsResident = [&] {
    size_t n = 0;
    for (uint32_t k = 0; k < kSlots; k++)
      n += residentPages(fifoSlots(engine.fifo()) + k * kPagesSlotBytes, kLarge);
    return n;
  };

  const std::vector<char> lent(kLarge, 'c');
  void* slot = nullptr;
  ASSERT_EQ(tx.acquire(policy, &slot), ncclSuccess) << lastError();
  tx.postLent(lent.data(), SlotInfo{kLarge, 1, {}});
  ASSERT_EQ(tx.waitReleased(policy), ncclSuccess) << lastError();
  EXPECT_EQ(slotsResident(), 0u) << "a lent payload mapped slot pages";

  ASSERT_EQ(tx.acquire(policy, &slot), ncclSuccess) << lastError();
  memset(slot, 'd', kLarge);
  tx.post(SlotInfo{kLarge, 3, {}});
  ASSERT_EQ(tx.waitReleased(policy), ncclSuccess) << lastError();
  EXPECT_EQ(slotsResident(), kSlots * pagesOf(kLarge));
  close(sv[1]);
}

}  // namespace
}  // namespace braid
