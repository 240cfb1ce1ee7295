// Collectives and point-to-point calls on Python buffers (numpy arrays). Every buffer is checked
// (type, contiguity, writability, element count) before the library sees it, so a mistake is a
// TypeError/ValueError naming the argument rather than a wrong answer; the call itself runs
// without the GIL. Buffers and counts follow NCCL: `count` is always derived from one buffer and
// the others must match it exactly.
#include <cstdint>
#include <optional>
#include <string>

#include "buffers.h"
#include "communicator.h"
#include "errors.h"
#include "types.h"

namespace braid::python {

namespace {

std::optional<ncclDataType_t> optionalDtype(py::handle dtype) {
  if (dtype.is_none()) return std::nullopt;
  return parseDtype(dtype, "dtype");
}

void requireRank(const Comm& c, int value, const char* op, const char* argName) {
  if (value < 0 || value >= c.size())
    throw py::value_error(std::string(op) + ": " + argName + "=" + std::to_string(value) +
                          " is outside [0, size=" + std::to_string(c.size()) + ")");
}

std::string ranksTimes(int nranks, size_t count) {
  return std::to_string(nranks) + " ranks x " + std::to_string(count) + " elements";
}

void allReduce(Comm& c, py::handle send, py::handle recv, py::handle op, py::handle dtype,
               std::uintptr_t stream) {
  constexpr const char* kOp = "all_reduce";
  const auto dt = optionalDtype(dtype);
  const ncclRedOp_t o = parseOp(op, "op");
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  requireSameDtype(s, "send", r, "recv", kOp);
  requireCount(r, s.count, kOp, "recv", "the count of send");
  ncclComm_t h = c.get();
  callReleasingGil("ncclAllReduce", [&] {
    return ncclAllReduce(s.data, r.data, s.count, s.dtype, o, h, streamArg(stream));
  });
}

void broadcast(Comm& c, py::handle send, py::handle recv, int root, py::handle dtype,
               std::uintptr_t stream) {
  constexpr const char* kOp = "broadcast";
  const auto dt = optionalDtype(dtype);
  requireRank(c, root, kOp, "root");
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  const void* sendData = nullptr;
  BufferView s;
  if (c.rank() == root) {
    s = viewBuffer(send, kOp, "send (on the root)", Access::kRead, dt);
    requireSameDtype(r, "recv", s, "send", kOp);
    requireCount(s, r.count, kOp, "send", "the count of recv");
    sendData = s.data;
  }
  ncclComm_t h = c.get();
  callReleasingGil("ncclBroadcast", [&] {
    return ncclBroadcast(sendData, r.data, r.count, r.dtype, root, h, streamArg(stream));
  });
}

void reduce(Comm& c, py::handle send, py::handle recv, py::handle op, int root, py::handle dtype,
            std::uintptr_t stream) {
  constexpr const char* kOp = "reduce";
  const auto dt = optionalDtype(dtype);
  const ncclRedOp_t o = parseOp(op, "op");
  requireRank(c, root, kOp, "root");
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  void* recvData = nullptr;
  BufferView r;
  if (c.rank() == root) {
    r = viewBuffer(recv, kOp, "recv (on the root)", Access::kWrite, dt);
    requireSameDtype(s, "send", r, "recv", kOp);
    requireCount(r, s.count, kOp, "recv", "the count of send");
    recvData = r.data;
  }
  ncclComm_t h = c.get();
  callReleasingGil("ncclReduce", [&] {
    return ncclReduce(s.data, recvData, s.count, s.dtype, o, root, h, streamArg(stream));
  });
}

void allGather(Comm& c, py::handle send, py::handle recv, py::handle dtype, std::uintptr_t stream) {
  constexpr const char* kOp = "all_gather";
  const auto dt = optionalDtype(dtype);
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  requireSameDtype(s, "send", r, "recv", kOp);
  requireCount(r, s.count * c.size(), kOp, "recv", ranksTimes(c.size(), s.count));
  ncclComm_t h = c.get();
  callReleasingGil("ncclAllGather", [&] {
    return ncclAllGather(s.data, r.data, s.count, s.dtype, h, streamArg(stream));
  });
}

void reduceScatter(Comm& c, py::handle send, py::handle recv, py::handle op, py::handle dtype,
                   std::uintptr_t stream) {
  constexpr const char* kOp = "reduce_scatter";
  const auto dt = optionalDtype(dtype);
  const ncclRedOp_t o = parseOp(op, "op");
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  requireSameDtype(s, "send", r, "recv", kOp);
  requireCount(s, r.count * c.size(), kOp, "send", ranksTimes(c.size(), r.count));
  ncclComm_t h = c.get();
  callReleasingGil("ncclReduceScatter", [&] {
    return ncclReduceScatter(s.data, r.data, r.count, s.dtype, o, h, streamArg(stream));
  });
}

void alltoall(Comm& c, py::handle send, py::handle recv, py::handle dtype, std::uintptr_t stream) {
  constexpr const char* kOp = "alltoall";
  const auto dt = optionalDtype(dtype);
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  requireSameDtype(s, "send", r, "recv", kOp);
  const size_t n = static_cast<size_t>(c.size());
  if (s.count % n != 0)
    throw py::value_error(std::string(kOp) + ": send has " + std::to_string(s.count) +
                          " elements, not a multiple of size=" + std::to_string(n));
  requireCount(r, s.count, kOp, "recv", "the count of send");
  ncclComm_t h = c.get();
  callReleasingGil("ncclAlltoAll", [&] {
    return ncclAlltoAll(s.data, r.data, s.count / n, s.dtype, h, streamArg(stream));
  });
}

void gather(Comm& c, py::handle send, py::handle recv, int root, py::handle dtype,
            std::uintptr_t stream) {
  constexpr const char* kOp = "gather";
  const auto dt = optionalDtype(dtype);
  requireRank(c, root, kOp, "root");
  BufferView s = viewBuffer(send, kOp, "send", Access::kRead, dt);
  void* recvData = nullptr;
  BufferView r;
  if (c.rank() == root) {
    r = viewBuffer(recv, kOp, "recv (on the root)", Access::kWrite, dt);
    requireSameDtype(s, "send", r, "recv", kOp);
    requireCount(r, s.count * c.size(), kOp, "recv", ranksTimes(c.size(), s.count));
    recvData = r.data;
  }
  ncclComm_t h = c.get();
  callReleasingGil("ncclGather", [&] {
    return ncclGather(s.data, recvData, s.count, s.dtype, root, h, streamArg(stream));
  });
}

void scatter(Comm& c, py::handle send, py::handle recv, int root, py::handle dtype,
             std::uintptr_t stream) {
  constexpr const char* kOp = "scatter";
  const auto dt = optionalDtype(dtype);
  requireRank(c, root, kOp, "root");
  BufferView r = viewBuffer(recv, kOp, "recv", Access::kWrite, dt);
  const void* sendData = nullptr;
  BufferView s;
  if (c.rank() == root) {
    s = viewBuffer(send, kOp, "send (on the root)", Access::kRead, dt);
    requireSameDtype(r, "recv", s, "send", kOp);
    requireCount(s, r.count * c.size(), kOp, "send", ranksTimes(c.size(), r.count));
    sendData = s.data;
  }
  ncclComm_t h = c.get();
  callReleasingGil("ncclScatter", [&] {
    return ncclScatter(sendData, r.data, r.count, r.dtype, root, h, streamArg(stream));
  });
}

void send(Comm& c, py::handle buffer, int peer, py::handle dtype, std::uintptr_t stream) {
  const auto dt = optionalDtype(dtype);
  requireRank(c, peer, "send", "peer");
  BufferView b = viewBuffer(buffer, "send", "buffer", Access::kRead, dt);
  ncclComm_t h = c.get();
  callReleasingGil("ncclSend",
                   [&] { return ncclSend(b.data, b.count, b.dtype, peer, h, streamArg(stream)); });
}

void recv(Comm& c, py::handle buffer, int peer, py::handle dtype, std::uintptr_t stream) {
  const auto dt = optionalDtype(dtype);
  requireRank(c, peer, "recv", "peer");
  BufferView b = viewBuffer(buffer, "recv", "buffer", Access::kWrite, dt);
  ncclComm_t h = c.get();
  callReleasingGil("ncclRecv",
                   [&] { return ncclRecv(b.data, b.count, b.dtype, peer, h, streamArg(stream)); });
}

}  // namespace

void registerCollectives(py::class_<Comm>& cls) {
  const auto none = py::none();
  cls.def("all_reduce", &allReduce, py::arg("send"), py::arg("recv"), py::arg("op"),
          py::arg("dtype") = none, py::arg("stream") = 0)
      .def("broadcast", &broadcast, py::arg("send"), py::arg("recv"), py::arg("root"),
           py::arg("dtype") = none, py::arg("stream") = 0)
      .def("reduce", &reduce, py::arg("send"), py::arg("recv"), py::arg("op"), py::arg("root"),
           py::arg("dtype") = none, py::arg("stream") = 0)
      .def("all_gather", &allGather, py::arg("send"), py::arg("recv"), py::arg("dtype") = none,
           py::arg("stream") = 0)
      .def("reduce_scatter", &reduceScatter, py::arg("send"), py::arg("recv"), py::arg("op"),
           py::arg("dtype") = none, py::arg("stream") = 0)
      .def("alltoall", &alltoall, py::arg("send"), py::arg("recv"), py::arg("dtype") = none,
           py::arg("stream") = 0)
      .def("gather", &gather, py::arg("send"), py::arg("recv"), py::arg("root"),
           py::arg("dtype") = none, py::arg("stream") = 0)
      .def("scatter", &scatter, py::arg("send"), py::arg("recv"), py::arg("root"),
           py::arg("dtype") = none, py::arg("stream") = 0)
      .def("send", &send, py::arg("buffer"), py::arg("peer"), py::arg("dtype") = none,
           py::arg("stream") = 0)
      .def("recv", &recv, py::arg("buffer"), py::arg("peer"), py::arg("dtype") = none,
           py::arg("stream") = 0);
}

}  // namespace braid::python
