// The collectives' one enum, shared by the host algorithms (src/algorithms/collectives.h, which
// describes each one) and the device kernels (kernels/device/fifo.h, whose launch arguments
// carry it): a value crosses from the API to a kernel unconverted, and a new collective is
// added in one place.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

enum class CollType : std::uint8_t { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
constexpr std::size_t kNumCollectives = 5;

}  // namespace braid
