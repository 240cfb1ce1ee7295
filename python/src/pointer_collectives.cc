// The collectives on raw addresses, for frameworks that hand out data pointers (a tensor's
// data_ptr()): the caller vouches for the memory; counts, dtype, op and ranks are still checked.
#include <cstdint>
#include <string>

#include "communicator.h"
#include "errors.h"
#include "types.h"

namespace braid::python {

namespace {

using Ptr = std::uintptr_t;

void* ptr(Ptr p) {
  return reinterpret_cast<void*>(p);
}

void requirePeer(const Comm& c, int value, const char* op, const char* argName) {
  if (value < 0 || value >= c.size())
    throw py::value_error(std::string(op) + ": " + argName + "=" + std::to_string(value) +
                          " is outside [0, size=" + std::to_string(c.size()) + ")");
}

size_t requireCount(long long count, const char* op) {
  if (count < 0)
    throw py::value_error(std::string(op) + ": count=" + std::to_string(count) + " is negative");
  return static_cast<size_t>(count);
}

}  // namespace

void registerPointerCollectives(py::class_<Comm>& cls) {
  cls.def(
      "all_reduce_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, py::handle op,
         Ptr stream) {
        const size_t n = requireCount(count, "all_reduce_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        const ncclRedOp_t o = parseOp(op, "op");
        ncclComm_t h = c.get();
        callReleasingGil("ncclAllReduce", [&] {
          return ncclAllReduce(ptr(send), ptr(recv), n, dt, o, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"), py::arg("op"),
      py::arg("stream") = 0);
  cls.def(
      "broadcast_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, int root, Ptr stream) {
        const size_t n = requireCount(count, "broadcast_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        requirePeer(c, root, "broadcast_ptr", "root");
        ncclComm_t h = c.get();
        callReleasingGil("ncclBroadcast", [&] {
          return ncclBroadcast(ptr(send), ptr(recv), n, dt, root, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"), py::arg("root"),
      py::arg("stream") = 0);
  cls.def(
      "reduce_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, py::handle op, int root,
         Ptr stream) {
        const size_t n = requireCount(count, "reduce_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        const ncclRedOp_t o = parseOp(op, "op");
        requirePeer(c, root, "reduce_ptr", "root");
        ncclComm_t h = c.get();
        callReleasingGil("ncclReduce", [&] {
          return ncclReduce(ptr(send), ptr(recv), n, dt, o, root, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"), py::arg("op"),
      py::arg("root"), py::arg("stream") = 0);
  cls.def(
      "all_gather_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long sendcount, py::handle dtype, Ptr stream) {
        const size_t n = requireCount(sendcount, "all_gather_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        ncclComm_t h = c.get();
        callReleasingGil("ncclAllGather", [&] {
          return ncclAllGather(ptr(send), ptr(recv), n, dt, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("sendcount"), py::arg("dtype"),
      py::arg("stream") = 0);
  cls.def(
      "reduce_scatter_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long recvcount, py::handle dtype, py::handle op,
         Ptr stream) {
        const size_t n = requireCount(recvcount, "reduce_scatter_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        const ncclRedOp_t o = parseOp(op, "op");
        ncclComm_t h = c.get();
        callReleasingGil("ncclReduceScatter", [&] {
          return ncclReduceScatter(ptr(send), ptr(recv), n, dt, o, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("recvcount"), py::arg("dtype"), py::arg("op"),
      py::arg("stream") = 0);
  cls.def(
      "alltoall_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, Ptr stream) {
        const size_t n = requireCount(count, "alltoall_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        ncclComm_t h = c.get();
        callReleasingGil("ncclAlltoAll", [&] {
          return ncclAlltoAll(ptr(send), ptr(recv), n, dt, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"),
      py::arg("stream") = 0);
  cls.def(
      "gather_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, int root, Ptr stream) {
        const size_t n = requireCount(count, "gather_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        requirePeer(c, root, "gather_ptr", "root");
        ncclComm_t h = c.get();
        callReleasingGil("ncclGather", [&] {
          return ncclGather(ptr(send), ptr(recv), n, dt, root, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"), py::arg("root"),
      py::arg("stream") = 0);
  cls.def(
      "scatter_ptr",
      [](Comm& c, Ptr send, Ptr recv, long long count, py::handle dtype, int root, Ptr stream) {
        const size_t n = requireCount(count, "scatter_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        requirePeer(c, root, "scatter_ptr", "root");
        ncclComm_t h = c.get();
        callReleasingGil("ncclScatter", [&] {
          return ncclScatter(ptr(send), ptr(recv), n, dt, root, h, streamArg(stream));
        });
      },
      py::arg("sendptr"), py::arg("recvptr"), py::arg("count"), py::arg("dtype"), py::arg("root"),
      py::arg("stream") = 0);
  cls.def(
      "send_ptr",
      [](Comm& c, Ptr buffer, long long count, py::handle dtype, int peer, Ptr stream) {
        const size_t n = requireCount(count, "send_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        requirePeer(c, peer, "send_ptr", "peer");
        ncclComm_t h = c.get();
        callReleasingGil("ncclSend",
                         [&] { return ncclSend(ptr(buffer), n, dt, peer, h, streamArg(stream)); });
      },
      py::arg("ptr"), py::arg("count"), py::arg("dtype"), py::arg("peer"), py::arg("stream") = 0);
  cls.def(
      "recv_ptr",
      [](Comm& c, Ptr buffer, long long count, py::handle dtype, int peer, Ptr stream) {
        const size_t n = requireCount(count, "recv_ptr");
        const ncclDataType_t dt = parseDtype(dtype, "dtype");
        requirePeer(c, peer, "recv_ptr", "peer");
        ncclComm_t h = c.get();
        callReleasingGil("ncclRecv",
                         [&] { return ncclRecv(ptr(buffer), n, dt, peer, h, streamArg(stream)); });
      },
      py::arg("ptr"), py::arg("count"), py::arg("dtype"), py::arg("peer"), py::arg("stream") = 0);
}

}  // namespace braid::python
