// One shape for the four net-plugin interface versions (v8..v11), so that a test is written once
// and run against each: `NetApi::load(path, version)` dlopens a plugin library, finds
// `ncclNetPlugin_vN` and adapts its calls (int sizes in v8, the comm config in v10's connect,
// v11's per-communicator context and finalize, the profiler handles of v10+) to size_t sizes and
// no extras. Only what the tests use.
#pragma once

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "transports/net/net_plugin_api.h"

namespace braid::nettest {

/// Every message the plugin logs, kept for the tests to look through; printed when
/// NET_TEST_VERBOSE is set.
struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  static Log& get() {
    static Log log;
    return log;
  }
  bool contains(const std::string& word) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& l : lines)
      if (l.find(word) != std::string::npos) return true;
    return false;
  }
};

inline void logger(ncclDebugLogLevel level, unsigned long, const char* file, int line,
                   const char* fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  const std::string entry = (level == NCCL_LOG_WARN ? "WARN " : "INFO ") + std::string(text);
  if (getenv("NET_TEST_VERBOSE")) fprintf(stderr, "[%s:%d] %s\n", file, line, entry.c_str());
  std::lock_guard<std::mutex> lock(Log::get().mutex);
  Log::get().lines.push_back(entry);
}

/// The properties every version has, plus v9's size limits and v11's multi-request size
/// (0 where the version has none).
struct Props {
  std::string name;
  int ptrSupport = 0, speed = 0, maxComms = 0, maxRecvs = 0;
  float latency = -1;
  size_t maxP2pBytes = 0, maxCollBytes = 0;
  int maxMultiRequestSize = 0;
};

using Result = ncclResult_t;

struct NetApi {
  int version = 0;
  std::string name;
  void* library = nullptr;
  void* ctx = nullptr;  // v11's per-communicator context
  std::function<Result()> init, finalize;
  std::function<Result(int*)> devices;
  std::function<Result(int, Props*)> properties;
  std::function<Result(void* handle, void** listenComm)> listen;
  std::function<Result(void* handle, void** sendComm)> connect;
  std::function<Result(void* listenComm, void** recvComm)> accept;
  std::function<Result(void* comm, void* data, size_t size, int type, void** mh)> regMr;
  std::function<Result(void* comm, void* mh)> deregMr;
  std::function<Result(void* comm, void* data, size_t size, int tag, void* mh, void** req)> isend;
  /// One buffer (the plugin says maxRecvs 1).
  std::function<Result(void* comm, void* data, size_t size, int tag, void* mh, void** req)> irecv;
  std::function<Result(void* comm, void* data, int size, void* mh, void** req)> iflush;
  std::function<Result(void* req, int* done, int* size)> test;
  std::function<Result(void*)> closeSend, closeRecv, closeListen;

  /// Null, with `error` saying why, when the library or its symbol cannot be had. The calls
  /// capture the object's address: it stays where it was made.
  static std::unique_ptr<NetApi> load(const std::string& path, int version, std::string* error);
  NetApi() = default;
  NetApi(const NetApi&) = delete;
  NetApi& operator=(const NetApi&) = delete;
  ~NetApi() {
    if (library) dlclose(library);
  }
};

namespace detail {

template <class P>
void copyProps(const P& p, Props* out) {
  out->name = p.name ? p.name : "";
  out->ptrSupport = p.ptrSupport;
  out->speed = p.speed;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
  out->latency = p.latency;
  if constexpr (requires { p.maxP2pBytes; }) {
    out->maxP2pBytes = p.maxP2pBytes;
    out->maxCollBytes = p.maxCollBytes;
  }
  if constexpr (requires { p.maxMultiRequestSize; })
    out->maxMultiRequestSize = p.maxMultiRequestSize;
}

// The properties struct that a getProperties function pointer fills.
template <class F>
struct PropsOf;
template <class P>
struct PropsOf<Result (*)(int, P*)> {
  using type = P;
};

// V is the version's struct (ncclNet_vN_t), N its number.
template <int N, class V>
void bind(NetApi* a, V* v) {
  a->name = v->name ? v->name : "";
  if constexpr (N == 11) {
    a->init = [a, v] {
      static ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return v->init(&a->ctx, 0x1234, &config, logger, nullptr);
    };
    a->finalize = [a, v] { return v->finalize(a->ctx); };
    a->listen = [a, v](void* h, void** l) { return v->listen(a->ctx, 0, h, l); };
    a->connect = [a, v](void* h, void** s) {
      ncclNetDeviceHandle_v11_t* dev = nullptr;
      return v->connect(a->ctx, 0, h, s, &dev);
    };
  } else {
    if constexpr (N == 10)
      a->init = [v] { return v->init(logger, nullptr); };
    else
      a->init = [v] { return v->init(logger); };
    a->finalize = [] { return ncclSuccess; };  // before v11: initialised once per process
    a->listen = [v](void* h, void** l) { return v->listen(0, h, l); };
    a->connect = [v](void* h, void** s) {
      ncclNetDeviceHandle_v8_t* dev = nullptr;
      if constexpr (N == 10) {
        ncclNetCommConfig_v10_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
        return v->connect(0, &config, h, s, &dev);
      } else {
        return v->connect(0, h, s, &dev);
      }
    };
  }
  a->devices = v->devices;
  a->properties = [v](int dev, Props* out) {
    typename PropsOf<decltype(v->getProperties)>::type p;  // the version's own layout
    const Result r = v->getProperties(dev, &p);
    if (r == ncclSuccess) copyProps(p, out);
    return r;
  };
  a->accept = [v](void* l, void** r) {
    ncclNetDeviceHandle_v8_t* dev = nullptr;
    return v->accept(l, r, &dev);
  };
  a->regMr = v->regMr;
  a->deregMr = v->deregMr;
  a->isend = [v](void* c, void* data, size_t size, int tag, void* mh, void** req) {
    if constexpr (N == 8)
      return v->isend(c, data, static_cast<int>(size), tag, mh, req);
    else if constexpr (N == 9)
      return v->isend(c, data, size, tag, mh, req);
    else
      return v->isend(c, data, size, tag, mh, nullptr, req);
  };
  a->irecv = [v](void* c, void* data, size_t size, int tag, void* mh, void** req) {
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhs[1] = {mh};
    if constexpr (N == 8) {
      int sizes[1] = {static_cast<int>(size)};
      return v->irecv(c, 1, datas, sizes, tags, mhs, req);
    } else {
      size_t sizes[1] = {size};
      if constexpr (N == 9)
        return v->irecv(c, 1, datas, sizes, tags, mhs, req);
      else
        return v->irecv(c, 1, datas, sizes, tags, mhs, nullptr, req);
    }
  };
  a->iflush = [v](void* c, void* data, int size, void* mh, void** req) {
    void* datas[1] = {data};
    int sizes[1] = {size};
    void* mhs[1] = {mh};
    return v->iflush(c, 1, datas, sizes, mhs, req);
  };
  a->test = v->test;
  a->closeSend = v->closeSend;
  a->closeRecv = v->closeRecv;
  a->closeListen = v->closeListen;
}

}  // namespace detail

inline std::unique_ptr<NetApi> NetApi::load(const std::string& path, int version,
                                            std::string* error) {
  auto a = std::make_unique<NetApi>();
  a->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a->library) {
    *error = dlerror();
    return nullptr;
  }
  const std::string symbol = "ncclNetPlugin_v" + std::to_string(version);
  void* s = dlsym(a->library, symbol.c_str());
  if (!s) {
    *error = path + ": no " + symbol;
    return nullptr;
  }
  a->version = version;
  switch (version) {
    case 8:
      detail::bind<8>(a.get(), static_cast<ncclNet_v8_t*>(s));
      break;
    case 9:
      detail::bind<9>(a.get(), static_cast<ncclNet_v9_t*>(s));
      break;
    case 10:
      detail::bind<10>(a.get(), static_cast<ncclNet_v10_t*>(s));
      break;
    case 11:
      detail::bind<11>(a.get(), static_cast<ncclNet_v11_t*>(s));
      break;
    default:
      *error = "no version " + std::to_string(version);
      return nullptr;
  }
  return a;
}

}  // namespace braid::nettest
