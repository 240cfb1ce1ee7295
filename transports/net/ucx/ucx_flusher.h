// Sends that completed but have not left the host. A UCX send over TCP completes once UCX has
// copied it; what the socket did not take at once (its buffer full because the peer is busy
// elsewhere) waits in the endpoint and goes out only while the comm's worker is progressed. A
// comm's worker is progressed by test() on its own requests, and a caller that saw its last
// send complete stops testing: the tail of that message would wait for the caller's next send
// on the same comm, which may never come before the peer needs it (a rank that finished
// sending to one peer and now waits on another: a deadlock across ranks).
//
// So a comm whose send completed is marked, and one thread of the plugin progresses the marked
// comms (each under its own lock, skipped while its caller holds it: then the caller progresses
// it) with a UCX flush of the endpoint in flight, until a flush issued after the last completed
// send finishes: everything sent before has left the endpoint. The thread sleeps while nothing
// is marked.
#pragma once

namespace braid::ucxnet {

struct Comm;

/// A send of `c` completed (c->sendsCompleted counted it, under c->lock; called after that lock
/// is released): its endpoint is flushed in the background.
void markUnflushed(Comm* c);
/// Stops flushing `c` (before its destroy, not under c->lock); its flush in flight, if any, is
/// c->flushRequest, left for destroy() to finish or cancel.
void forgetUnflushed(Comm* c);
/// Ends the thread and waits for it (the last finalize, and the library's unloading); a later
/// mark starts it again.
void stopFlusher();

}  // namespace braid::ucxnet
