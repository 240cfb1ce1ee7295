// A net plugin for ranks that are threads of one process, as awkward as the interface allows, to
// prove Braid's net transport against it: connect and accept need several calls, a quarter of
// isend/irecv calls answer "not now" (a null request), requests complete only after a few
// test() calls, a send's buffer is read only when the receiver matches it (so a sender that
// reuses a slot before its send completed corrupts the data), every buffer must lie inside the
// memory registration passed with it, and a receive reports the size that arrived. Messages on a
// connection match receives in order; a tag mismatch or a message larger than its receive is an
// error. SHAKY_ONLY_VERSION=N builds a library that exports only ncclNetPlugin_vN.
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "transports/net/net_plugin_api.h"

#define EXPORT __attribute__((visibility("default")))

namespace {

struct Request;
struct Channel {
  std::deque<Request*> sends;  // isends not yet matched, in order
  std::deque<Request*> recvs;  // irecvs not yet matched, in order
  bool connected = false;
  int connectCalls = 0;
};
struct Mr {
  const char* data;
  size_t size;
};
struct Request {
  bool isSend;
  std::shared_ptr<Channel> channel;
  char* data;
  size_t size;  // send: bytes; recv: room
  int tag;
  bool matched = false;
  size_t arrived = 0;
  int testsLeft;  // test() calls still answering "not yet" once matched
};
struct Comm {
  std::shared_ptr<Channel> channel;
  bool receiving = false;
};

std::mutex mutex;  // one lock for everything: this plugin is about behaviour, not speed
std::map<uint64_t, std::shared_ptr<Channel>> listening;
uint64_t nextId = 1;

bool shaky() {
  thread_local std::mt19937 rng(std::random_device{}());
  return rng() % 4 == 0;
}
int testDelay() {
  thread_local std::mt19937 rng(std::random_device{}());
  return static_cast<int>(rng() % 3);
}
bool inside(const void* mhandle, const void* data, size_t size) {
  const Mr* mr = static_cast<const Mr*>(mhandle);
  const char* p = static_cast<const char*>(data);
  return mr && p >= mr->data && p + size <= mr->data + mr->size;
}

// Pairs the channel's oldest send and receive while both exist.
ncclResult_t match(Channel& c) {
  while (!c.sends.empty() && !c.recvs.empty()) {
    Request* s = c.sends.front();
    Request* r = c.recvs.front();
    if (s->tag != r->tag || s->size > r->size) return ncclInternalError;
    memcpy(r->data, s->data, s->size);
    r->arrived = s->size;
    s->matched = r->matched = true;
    c.sends.pop_front();
    c.recvs.pop_front();
  }
  return ncclSuccess;
}

ncclResult_t init() {
  return ncclSuccess;
}
ncclResult_t devices(int* n) {
  *n = 1;
  return ncclSuccess;
}
template <class Props>
ncclResult_t properties(int, Props* p) {
  memset(p, 0, sizeof(*p));
  p->name = const_cast<char*>("shaky0");
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 10000;
  p->maxComms = 1 << 20;
  p->maxRecvs = 1;
  if constexpr (requires { p->maxP2pBytes; }) p->maxP2pBytes = p->maxCollBytes = size_t(1) << 40;
  return ncclSuccess;
}
ncclResult_t listen(int, void* handle, void** listenComm) {
  std::lock_guard<std::mutex> lock(mutex);
  const uint64_t id = nextId++;
  auto channel = std::make_shared<Channel>();
  listening[id] = channel;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &id, sizeof(id));
  *listenComm = new Comm{channel};
  return ncclSuccess;
}
ncclResult_t connect(void* handle, void** sendComm) {
  std::lock_guard<std::mutex> lock(mutex);
  *sendComm = nullptr;
  uint64_t id;
  memcpy(&id, handle, sizeof(id));
  auto it = listening.find(id);
  if (it == listening.end()) return ncclSuccess;  // not (yet) listening: call again
  if (++it->second->connectCalls < 3) return ncclSuccess;
  it->second->connected = true;
  *sendComm = new Comm{it->second};
  listening.erase(it);
  return ncclSuccess;
}
ncclResult_t accept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t**) {
  std::lock_guard<std::mutex> lock(mutex);
  Comm* l = static_cast<Comm*>(listenComm);
  *recvComm = l->channel->connected ? new Comm{l->channel, true} : nullptr;
  return ncclSuccess;
}
ncclResult_t regMr(void*, void* data, size_t size, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST || !data) return ncclInternalError;
  *mhandle = new Mr{static_cast<const char*>(data), size};
  return ncclSuccess;
}
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return ncclInternalError;
}
ncclResult_t deregMr(void*, void* mhandle) {
  delete static_cast<Mr*>(mhandle);
  return ncclSuccess;
}
ncclResult_t post(bool isSend, void* comm, void* data, size_t size, int tag, void* mhandle,
                  void** request) {
  *request = nullptr;
  if (!inside(mhandle, data, size)) return ncclInternalError;
  if (shaky()) return ncclSuccess;
  std::lock_guard<std::mutex> lock(mutex);
  auto channel = static_cast<Comm*>(comm)->channel;
  auto* r =
      new Request{isSend, channel, static_cast<char*>(data), size, tag, false, 0, testDelay()};
  (isSend ? channel->sends : channel->recvs).push_back(r);
  *request = r;
  return ncclSuccess;
}
[[maybe_unused]] ncclResult_t isend(void* comm, void* data, size_t size, int tag, void* mh, void*,
                                    void** req) {
  return post(true, comm, data, size, tag, mh, req);
}
[[maybe_unused]] ncclResult_t irecv(void* comm, int n, void** data, size_t* sizes, int* tags,
                                    void** mhs, void**, void** req) {
  if (n != 1) return ncclInternalError;
  return post(false, comm, data[0], sizes[0], tags[0], mhs[0], req);
}
ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}
ncclResult_t test(void* request, int* done, int* size) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* r = static_cast<Request*>(request);
  *done = 0;
  if (match(*r->channel) != ncclSuccess) return ncclInternalError;
  if (!r->matched || r->testsLeft-- > 0) return ncclSuccess;
  *done = 1;
  if (size) *size = static_cast<int>(r->isSend ? r->size : r->arrived);
  delete r;
  return ncclSuccess;
}
ncclResult_t closeListen(void* comm) {
  std::lock_guard<std::mutex> lock(mutex);
  delete static_cast<Comm*>(comm);
  return ncclSuccess;
}
ncclResult_t closeComm(void* comm) {
  std::lock_guard<std::mutex> lock(mutex);
  auto* c = static_cast<Comm*>(comm);
  // Requests this end posted and nobody matched (receives posted ahead) go with it.
  std::deque<Request*>& mine = c->receiving ? c->channel->recvs : c->channel->sends;
  for (Request* r : mine) delete r;
  mine.clear();
  delete c;
  return ncclSuccess;
}

// ---- the exported tables: each version's argument shapes over the functions above (a
// library of one version leaves the others' unused) ----
[[maybe_unused]] ncclResult_t init8(ncclDebugLogger_t) {
  return init();
}
[[maybe_unused]] ncclResult_t init10(ncclDebugLogger_t, ncclProfilerCallback_t) {
  return init();
}
[[maybe_unused]] ncclResult_t init11(void** ctx, uint64_t, ncclNetCommConfig_v11_t*,
                                     ncclDebugLogger_t, ncclProfilerCallback_t) {
  *ctx = nullptr;
  return init();
}
[[maybe_unused]] ncclResult_t finalize11(void*) {
  return ncclSuccess;
}
[[maybe_unused]] ncclResult_t listen11(void*, int dev, void* handle, void** l) {
  return listen(dev, handle, l);
}
[[maybe_unused]] ncclResult_t connect8(int, void* handle, void** s, ncclNetDeviceHandle_v8_t**) {
  return connect(handle, s);
}
[[maybe_unused]] ncclResult_t connect10(int, ncclNetCommConfig_v10_t*, void* handle, void** s,
                                        ncclNetDeviceHandle_v10_t**) {
  return connect(handle, s);
}
[[maybe_unused]] ncclResult_t connect11(void*, int, void* handle, void** s,
                                        ncclNetDeviceHandle_v11_t**) {
  return connect(handle, s);
}
[[maybe_unused]] ncclResult_t isend8(void* comm, void* data, int size, int tag, void* mh,
                                     void** req) {
  return post(true, comm, data, static_cast<size_t>(size), tag, mh, req);
}
[[maybe_unused]] ncclResult_t isend9(void* comm, void* data, size_t size, int tag, void* mh,
                                     void** req) {
  return post(true, comm, data, size, tag, mh, req);
}
[[maybe_unused]] ncclResult_t irecv8(void* comm, int n, void** data, int* sizes, int* tags,
                                     void** mhs, void** req) {
  if (n != 1) return ncclInternalError;
  return post(false, comm, data[0], static_cast<size_t>(sizes[0]), tags[0], mhs[0], req);
}
[[maybe_unused]] ncclResult_t irecv9(void* comm, int n, void** data, size_t* sizes, int* tags,
                                     void** mhs, void** req) {
  return irecv(comm, n, data, sizes, tags, mhs, nullptr, req);
}

}  // namespace

extern "C" {
#if !defined(SHAKY_ONLY_VERSION) || SHAKY_ONLY_VERSION == 8
EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    "Shaky",     init8,    devices,   properties<ncclNetProperties_v8_t>,
    listen,      connect8, accept,    regMr,
    regMrDmaBuf, deregMr,  isend8,    irecv8,
    iflush,      test,     closeComm, closeComm,
    closeListen, nullptr,  nullptr};
#endif
#if !defined(SHAKY_ONLY_VERSION) || SHAKY_ONLY_VERSION == 9
EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    "Shaky",     init8,    devices,   properties<ncclNetProperties_v9_t>,
    listen,      connect8, accept,    regMr,
    regMrDmaBuf, deregMr,  isend9,    irecv9,
    iflush,      test,     closeComm, closeComm,
    closeListen, nullptr,  nullptr,   nullptr};
#endif
#if !defined(SHAKY_ONLY_VERSION) || SHAKY_ONLY_VERSION == 10
EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    "Shaky",     init10,    devices,   properties<ncclNetProperties_v10_t>,
    listen,      connect10, accept,    regMr,
    regMrDmaBuf, deregMr,   isend,     irecv,
    iflush,      test,      closeComm, closeComm,
    closeListen, nullptr,   nullptr,   nullptr};
#endif
#if !defined(SHAKY_ONLY_VERSION) || SHAKY_ONLY_VERSION == 11
EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    "Shaky",     init11,    devices,   properties<ncclNetProperties_v11_t>,
    listen11,    connect11, accept,    regMr,
    regMrDmaBuf, deregMr,   isend,     irecv,
    iflush,      test,      closeComm, closeComm,
    closeListen, nullptr,   nullptr,   nullptr,
    finalize11,  nullptr};
#endif
}  // extern "C"
