// The transport recipe (docs/design.md, "Recipes"): every registered transport says what it is
// through its traits, under a unique BRAID_TRANSPORTS word, and the traits agree with each other.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "transports/transport.h"

namespace braid {
namespace {

TEST(TransportTraits, EveryRegisteredTransportDescribesItself) {
  std::set<std::string> names;
  int hostTransports = 0;
  for (const Transport* t : transportRegistry()) {
    const TransportTraits& traits = t->traits();
    ASSERT_NE(traits.name, nullptr);
    SCOPED_TRACE(traits.name);
    EXPECT_FALSE(std::string(traits.name).empty());
    EXPECT_TRUE(names.insert(traits.name).second) << "two transports answer to one name";
    EXPECT_EQ(std::string(t->name()), traits.name);
    // A peer in this process is a peer whose memory this rank maps, and the cheapest class.
    if (traits.sameProcess) {
      EXPECT_TRUE(traits.sharesMemory);
      EXPECT_EQ(traits.link, LinkClass::kLocal);
    }
    if (traits.link == LinkClass::kLocal) {
      EXPECT_TRUE(traits.sameProcess);
    }
    // Memory shared on one host is never the network's class, and a network never shares it.
    if (traits.sharesMemory) {
      EXPECT_NE(traits.link, LinkClass::kTcp);
    }
    if (traits.link == LinkClass::kTcp) {
      EXPECT_FALSE(traits.sharesMemory);
    }
    // Device slots ride on a host transport whose ends share memory (the FIFO's control words).
    if (traits.carriesDeviceSlots) {
      EXPECT_TRUE(traits.sharesMemory);
    }
    if (!traits.carriesDeviceSlots) ++hostTransports;
  }
  EXPECT_GE(hostTransports, 3);  // local, shm and a network at least
  for (const char* required : {"local", "shm", "tcp"})
    EXPECT_TRUE(names.count(required)) << required << " is not registered";
}

}  // namespace
}  // namespace braid
