// The point-to-point device protocol (kernels/device/p2p.h) on CPU threads: every block of every
// rank a thread, over FIFOs in ordinary memory, arranged by the host code the API uses
// (p2p_arrange.h). Each receive buffer is poisoned first and checked byte for byte against what
// its sender sent; sizes 0, 1, primes, unaligned buffers and chunks that cross many slots, under
// Simple and LL, 1 to 3 channels per peer, 1 to 5 ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device/emulation.h"
#include "kernels/device/p2p_arrange.h"

namespace braid::kernels::device {
namespace {

constexpr unsigned char kP2pPoison = 0xA5;

/// Small slots, so that every size here crosses several chunks and slot reuses.
FifoShape smallFifos() {
  return FifoShape{3, 256, 128};
}

/// The byte `i` of the message `tag` from `from` to `to`.
unsigned char byteOf(int from, int to, int tag, std::size_t i) {
  return static_cast<unsigned char>(from * 31 + to * 7 + tag * 13 + i * 5 + (i >> 8));
}

/// One transfer of a test: what `from` sends to `to` (the tag-th between them), `bytes` long,
/// `offset` bytes into its buffers (unaligned when odd).
struct Message {
  int from, to;
  std::size_t bytes;
  std::size_t offset = 0;
  std::size_t recvBytes = static_cast<std::size_t>(-1);  ///< the receiver's size (default: same)
};

class P2pWorld {
 public:
  P2pWorld(int nranks, int channels, FifoShape shape = smallFifos())
      : world_(nranks, channels, shape), n_(nranks) {}

  /// Runs `messages` as one launch per rank, posted in the order given (each rank sends and
  /// receives in that order); checks every receive. Returns the emulation's error ("" if none).
  std::string run(const std::vector<Message>& messages, int channelsPerPeer, Protocol protocol,
                  bool* allExact) {
    std::vector<std::vector<P2pItem>> posted(n_);
    std::vector<std::vector<unsigned char>> sendBufs, recvBufs;
    sendBufs.reserve(messages.size());
    recvBufs.reserve(messages.size());
    std::vector<int> tags(messages.size());
    for (std::size_t m = 0; m < messages.size(); ++m) {
      const Message& msg = messages[m];
      int tag = 0;
      for (std::size_t k = 0; k < m; ++k)
        tag += messages[k].from == msg.from && messages[k].to == msg.to;
      tags[m] = tag;
      const std::size_t recvBytes =
          msg.recvBytes == static_cast<std::size_t>(-1) ? msg.bytes : msg.recvBytes;
      sendBufs.emplace_back(msg.offset + msg.bytes + 1);
      for (std::size_t i = 0; i < msg.bytes; ++i)
        sendBufs.back()[msg.offset + i] = byteOf(msg.from, msg.to, tag, i);
      recvBufs.emplace_back(msg.offset + recvBytes + 1, kP2pPoison);
      P2pItem send;
      send.src = sendBufs.back().data() + msg.offset;
      send.bytes = msg.bytes;
      send.peer = msg.to;
      send.isSend = 1;
      send.protocol = static_cast<std::uint8_t>(protocol);
      P2pItem recv;
      recv.dst = recvBufs.back().data() + msg.offset;
      recv.bytes = recvBytes;
      recv.peer = msg.from;
      recv.protocol = static_cast<std::uint8_t>(protocol);
      posted[msg.from].push_back(send);
      posted[msg.to].push_back(recv);
    }
    std::vector<P2pLaunchArgs> launches(n_);
    for (int r = 0; r < n_; ++r) {
      launches[r].comm = world_.comm(r);
      launches[r].channelsPerPeer = channelsPerPeer;
      arrangeP2p(posted[r], &launches[r]);
    }
    const std::string error = world_.launchP2p(launches, std::chrono::seconds(30));
    *allExact = true;
    for (std::size_t m = 0; m < messages.size(); ++m) {
      const Message& msg = messages[m];
      const std::vector<unsigned char>& got = recvBufs[m];
      const bool same = msg.recvBytes == static_cast<std::size_t>(-1) || msg.recvBytes == msg.bytes;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const bool inside = same && i >= msg.offset && i < msg.offset + msg.bytes;
        const unsigned char want = inside ? byteOf(msg.from, msg.to, tags[m], i - msg.offset)
                                          : kP2pPoison;  // outside, or a mismatch: untouched
        if (got[i] != want) {
          ADD_FAILURE() << "message " << m << " (" << msg.from << " -> " << msg.to << ", "
                        << msg.bytes << " B at offset " << msg.offset << "): byte " << i << " is "
                        << int(got[i]) << ", expected " << int(want);
          *allExact = false;
          break;
        }
      }
    }
    return error;
  }

  int nranks() const { return n_; }

 private:
  EmulatedWorld world_;
  int n_;
};

const std::vector<std::size_t> kSizes = {0, 1, 7, 16, 113, 1000, 4099};

std::string describe(int n, int channels, Protocol p) {
  return std::to_string(n) + " ranks, " + std::to_string(channels) + " channel(s) per peer, " +
         (p == Protocol::kLL ? "LL" : "Simple");
}

// Every rank sends to the next and receives from the previous, several messages each: a ring of
// large messages completes only if a rank's sends and receives progress together.
TEST(DeviceP2p, RingShiftEverySizeAndProtocol) {
  for (int n : {2, 3, 5}) {
    P2pWorld world(n, 3);
    for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
      for (int channels : {1, 2, 3}) {
        std::vector<Message> messages;
        for (std::size_t bytes : kSizes)
          for (int r = 0; r < n; ++r) messages.push_back({r, (r + 1) % n, bytes, bytes % 3});
        bool exact = false;
        EXPECT_EQ(world.run(messages, channels, p, &exact), "") << describe(n, channels, p);
        EXPECT_TRUE(exact) << describe(n, channels, p);
      }
    }
  }
}

// All-to-all with the transfer to self, one launch per rank, on the same FIFOs twice (the step
// counts carry from one launch to the next).
TEST(DeviceP2p, AllToAllWithSelf) {
  for (int n : {1, 3, 4}) {
    P2pWorld world(n, 2);
    for (int round = 0; round < 2; ++round) {
      for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
        std::vector<Message> messages;
        for (int from = 0; from < n; ++from)
          for (int to = 0; to < n; ++to)
            messages.push_back({from, to, static_cast<std::size_t>(97 * (from + 1) + 31 * to)});
        bool exact = false;
        EXPECT_EQ(world.run(messages, 2, p, &exact), "") << describe(n, 2, p);
        EXPECT_TRUE(exact) << describe(n, 2, p);
      }
    }
  }
}

// Several messages from one rank to one peer in one launch arrive in the order posted, each into
// its own receive, mixed with messages the other way.
TEST(DeviceP2p, MessagesToOnePeerKeepTheirOrder) {
  P2pWorld world(2, 2);
  std::vector<Message> messages = {{0, 1, 5}, {0, 1, 700}, {1, 0, 3000}, {0, 1, 0},
                                   {0, 1, 1}, {1, 0, 64},  {0, 1, 2051}};
  bool exact = false;
  EXPECT_EQ(world.run(messages, 2, Protocol::kSimple, &exact), "");
  EXPECT_TRUE(exact);
}

// A gather and a scatter: many peers to one rank, one rank to many.
TEST(DeviceP2p, GatherAndScatter) {
  P2pWorld world(5, 2);
  for (int root : {0, 3}) {
    std::vector<Message> gather, scatter;
    for (int r = 0; r < 5; ++r) {
      gather.push_back({r, root, 1021});
      scatter.push_back({root, r, 509});
    }
    bool exact = false;
    EXPECT_EQ(world.run(gather, 2, Protocol::kSimple, &exact), "") << "gather to " << root;
    EXPECT_TRUE(exact);
    EXPECT_EQ(world.run(scatter, 2, Protocol::kLL, &exact), "") << "scatter from " << root;
    EXPECT_TRUE(exact);
  }
}

// A receive larger or smaller than its send: the receiver follows the sender's chunks to their
// end, writes nothing and reports the mismatch; nobody hangs, and the FIFOs stay usable.
TEST(DeviceP2p, SizeMismatchIsReportedNotHung) {
  P2pWorld world(2, 2);
  for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
    for (std::size_t recvBytes : {std::size_t{100}, std::size_t{5000}}) {
      Message wrong{0, 1, 1000};
      wrong.recvBytes = recvBytes;
      bool exact = false;
      const std::string error = world.run({wrong}, 2, p, &exact);
      EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
      EXPECT_NE(error.find("another size"), std::string::npos) << error;
      EXPECT_EQ(error.find("gave up"), std::string::npos) << error;
      EXPECT_TRUE(exact) << "the receive buffer was written";
      EXPECT_EQ(world.run({{0, 1, 333}, {1, 0, 77}}, 2, p, &exact), "") << "after the mismatch";
      EXPECT_TRUE(exact);
    }
  }
}

// A peer that never takes part: the waiting blocks give up at the deadline (the abort word).
TEST(DeviceP2p, AMissingPeerEndsAtTheDeadline) {
  EmulatedWorld world(2, 1, smallFifos());
  std::vector<unsigned char> buf(4096, 0);
  std::vector<P2pLaunchArgs> launches(2);
  for (int r = 0; r < 2; ++r) {
    launches[r].comm = world.comm(r);
    launches[r].channelsPerPeer = 1;
  }
  P2pItem recv;
  recv.dst = buf.data();
  recv.bytes = buf.size();
  recv.peer = 1;
  arrangeP2p({recv}, &launches[0]);
  P2pItem self;  // rank 1 only copies to itself: it never sends to rank 0
  self.src = buf.data();
  self.dst = buf.data() + 2048;
  self.bytes = 16;
  self.peer = 1;
  P2pItem selfSend = self;
  selfSend.isSend = 1;
  arrangeP2p({selfSend, self}, &launches[1]);
  const std::string error = world.launchP2p(launches, std::chrono::milliseconds(300));
  EXPECT_NE(error.find("rank 0"), std::string::npos) << error;
  EXPECT_NE(error.find("gave up"), std::string::npos) << error;
}

}  // namespace
}  // namespace braid::kernels::device
