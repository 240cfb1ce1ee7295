#include "transports/net/ucx/ucx_flusher.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "transports/net/ucx/ucx_comm.h"

namespace braid::ucxnet {
namespace {

// How often the thread looks at the marked comms: a stalled tail waits at most this long after
// the peer's socket has room again.
constexpr std::chrono::microseconds kRound{200};

struct Flusher {
  std::mutex mutex;  // guards the fields; taken before any comm's lock, never under one
  std::condition_variable wake;
  std::vector<Comm*> marked;
  uint64_t generation = 0;  // stopFlusher() ends the thread of the current one
  // The thread of the current generation, if one was started; joined by stopFlusher(). Its
  // handle is left alone in a forked child (the thread is not there, nor is its code to run).
  std::thread* thread = nullptr;
  pid_t owner = 0;  // the process that started `thread`
};

Flusher& flusher() {
  // Never destroyed (a comm may be marked during exit), and not on the heap either: the storage
  // goes with the library when it is unloaded instead of leaking one Flusher per load.
  alignas(Flusher) static unsigned char storage[sizeof(Flusher)];
  static Flusher* f = new (storage) Flusher;
  return *f;
}

// One look at `c` (under its lock): progresses its worker and says whether every send that
// completed has left the endpoint (a flush issued after it finished), issuing the next flush.
bool flushed(Comm* c) {
  ucp_worker_progress(c->worker);
  if (c->flushRequest != nullptr) {
    if (ucp_request_check_status(c->flushRequest) == UCS_INPROGRESS) return false;
    ucp_request_free(c->flushRequest);
    c->flushRequest = nullptr;
    c->flushedUpTo = c->flushCovers;
  }
  if (c->flushedUpTo == c->sendsCompleted || c->failed.load()) return true;
  ucp_request_param_t none{};
  void* r = ucp_ep_flush_nbx(c->ep, &none);
  if (UCS_PTR_IS_ERR(r)) return true;  // the endpoint failed: the caller's requests report it
  if (r == nullptr) {
    c->flushedUpTo = c->sendsCompleted;
    return true;
  }
  c->flushRequest = r;
  c->flushCovers = c->sendsCompleted;
  return false;
}

void run(uint64_t generation) {
  Flusher& f = flusher();
  std::unique_lock<std::mutex> lock(f.mutex);
  while (generation == f.generation) {
    if (f.marked.empty()) {
      f.wake.wait(lock);
      continue;
    }
    for (auto it = f.marked.begin(); it != f.marked.end();) {
      std::unique_lock<std::mutex> comm((*it)->lock, std::try_to_lock);
      // A comm its caller holds is being progressed by the caller: looked at next round.
      if (comm.owns_lock() && flushed(*it)) {
        it = f.marked.erase(it);
      } else {
        ++it;
      }
    }
    f.wake.wait_for(lock, kRound);
  }
}

}  // namespace

void markUnflushed(Comm* c) {
  Flusher& f = flusher();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (std::find(f.marked.begin(), f.marked.end(), c) == f.marked.end()) f.marked.push_back(c);
  if (f.thread == nullptr || f.owner != getpid()) {
    f.owner = getpid();
    f.thread = new std::thread(run, f.generation);  // a child's stale handle is leaked
    pthread_setname_np(f.thread->native_handle(), "braid-ucx-flush");  // named when it exists
  }
  f.wake.notify_all();
}

void forgetUnflushed(Comm* c) {
  Flusher& f = flusher();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.marked.erase(std::remove(f.marked.begin(), f.marked.end(), c), f.marked.end());
}

void stopFlusher() {
  Flusher& f = flusher();
  std::thread* thread = nullptr;
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    f.generation++;
    std::vector<Comm*>().swap(f.marked);  // its buffer freed too
    f.wake.notify_all();
    if (f.owner == getpid()) thread = f.thread;
    f.thread = nullptr;
  }
  // Joined, not detached: the plugin may be unloaded next (dlclose), and a thread still on its
  // way out of run() would then execute unmapped code.
  if (thread != nullptr) {
    thread->join();
    delete thread;
  }
}

namespace {
// Before v11 NCCL never finalizes a plugin, but it does unload it: the thread ends first.
[[gnu::destructor]] void stopFlusherOnUnload() {
  stopFlusher();
}
}  // namespace

}  // namespace braid::ucxnet
