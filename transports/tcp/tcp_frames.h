// What travels on a TCP connection's sockets: frames, each a 32-byte header (the slot's
// descriptor, SlotInfo: payload bytes, tag, operation fingerprint) and its payload. Frame k
// travels on socket k % nsockets; both ends walk the frames in the same order, so nothing needs
// reordering. A frame with kStatusFrameTag is not a slot but the sender's status (fifo.h:
// FifoSender::publishStatus), forwarded into the receiving FIFO's control block.
#pragma once

#include <cstdint>

#include "transports/fifo.h"

namespace braid {

using WireHeader = SlotInfo;
/// Slot tags are odd (fingerprint.h) or small constants, so they never collide with it.
constexpr uint32_t kStatusFrameTag = 0xfffffffeu;
/// The header holds the first three status words; the other three follow as its payload.
constexpr uint32_t kStatusExtraBytes = (kFifoStatusWords - 3) * sizeof(uint64_t);

}  // namespace braid
