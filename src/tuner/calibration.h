// A short measurement of this host (tens of milliseconds, no communicator involved) that gives
// the cost model its constants: the reduce and copy kernels' speed (shared-memory bandwidth and
// reduction), a TCP loopback ping-pong and stream (TCP latency and bandwidth), and, for the log,
// a flag ping-pong between two threads.
#pragma once

#include "tuner/cost_model.h"

namespace braid {

/// The raw figures of one calibration; 0 where a measurement could not be made.
struct CalibrationFigures {
  double copyGbps = 0;    ///< kernels::copy, bytes copied per second / 1e9
  double reduceGbps = 0;  ///< kernels::reduce (float sum), bytes reduced per second / 1e9
  /// Half a round trip of a flag between two threads (logged, not a model constant); 0 where no
  /// batch of round trips fit its budget (every core busy: calibratedOnFreeCores).
  double threadOneWayUs = 0;
  double tcpOneWayUs = 0;  ///< half a round trip of one byte over TCP loopback
  double tcpGbps = 0;      ///< one TCP loopback stream, bytes per second / 1e9
};

/// Runs the measurements: about 40 ms on an idle host, a few hundred where every core is busy
/// (the thread ping-pong stops at its budget).
CalibrationFigures measureHost();
/// False when the calibration ran with every core busy (no batch of its thread ping-pong fit the
/// budget): its figures then describe the neighbours as much as the host, and are not cached.
inline bool calibratedOnFreeCores(const CalibrationFigures& f) {
  return f.threadOneWayUs > 0;
}

/// The model's constants from the figures; a figure that is 0 keeps the built-in constant.
LinkCosts linkCostsFromFigures(const CalibrationFigures& figures);

}  // namespace braid
