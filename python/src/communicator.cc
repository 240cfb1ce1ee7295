#include "communicator.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "errors.h"
#include "module.h"

namespace braid::python {

Comm::Comm(ncclComm_t handle, bool blocking) : handle_(handle), blocking_(blocking) {}

Comm::~Comm() {
  // Destroying is local (it does not wait for peers); the GIL is released because it joins the
  // communicator's threads.
  if (handle_) {
    py::gil_scoped_release release;
    ncclCommDestroy(handle_);
  }
}

ncclComm_t Comm::get() const {
  if (!handle_) throw py::value_error("the communicator was destroyed or aborted");
  return handle_;
}

int Comm::rank() const {
  if (rank_ < 0) {
    ncclComm_t h = get();
    callReleasingGil("ncclCommUserRank", [&] { return ncclCommUserRank(h, &rank_); });
  }
  return rank_;
}

int Comm::size() const {
  if (size_ < 0) {
    ncclComm_t h = get();
    callReleasingGil("ncclCommCount", [&] { return ncclCommCount(h, &size_); });
  }
  return size_;
}

void Comm::destroy() {
  ncclComm_t h = handle_;
  if (!h) return;
  handle_ = nullptr;
  callReleasingGil("ncclCommDestroy", [&] { return ncclCommDestroy(h); });
}

void Comm::abort() {
  // Another thread may be blocked in a call on this communicator: abort makes that call return
  // (the handle it read stays valid until abort has waited for it).
  ncclComm_t h = handle_;
  if (!h) return;
  handle_ = nullptr;
  callReleasingGil("ncclCommAbort", [&] { return ncclCommAbort(h); });
}

namespace {

ncclUniqueId uniqueIdFromBytes(const py::bytes& bytes) {
  std::string s = bytes;
  if (s.size() != NCCL_UNIQUE_ID_BYTES)
    throw py::value_error("unique_id must be " + std::to_string(NCCL_UNIQUE_ID_BYTES) +
                          " bytes (from braid.get_unique_id()), got " + std::to_string(s.size()));
  ncclUniqueId id;
  memcpy(id.internal, s.data(), NCCL_UNIQUE_ID_BYTES);
  return id;
}

ncclConfig_t makeConfig(bool blocking, const std::string* name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  if (name) config.commName = name->c_str();
  return config;
}

std::unique_ptr<Comm> initRank(int nranks, const py::bytes& uniqueId, int rank, bool blocking,
                               std::optional<std::string> name, std::optional<double> timeout) {
  if (nranks < 1) throw py::value_error("nranks=" + std::to_string(nranks) + " must be >= 1");
  if (rank < 0 || rank >= nranks)
    throw py::value_error("rank=" + std::to_string(rank) +
                          " must be in [0, nranks=" + std::to_string(nranks) + ")");
  ncclUniqueId id = uniqueIdFromBytes(uniqueId);
  ncclConfig_t config = makeConfig(blocking, name ? &*name : nullptr);
  ncclComm_t handle = nullptr;
  callReleasingGil("ncclCommInitRankConfig",
                   [&] { return ncclCommInitRankConfig(&handle, nranks, id, rank, &config); });
  auto comm = std::make_unique<Comm>(handle, blocking);
  if (timeout) {
    callReleasingGil("braidCommSetTimeout", [&] { return braidCommSetTimeout(handle, *timeout); });
  }
  return comm;
}

std::vector<std::unique_ptr<Comm>> initAll(int n) {
  if (n < 1) throw py::value_error("n=" + std::to_string(n) + " must be >= 1");
  std::vector<ncclComm_t> handles(n, nullptr);
  callReleasingGil("ncclCommInitAll", [&] { return ncclCommInitAll(handles.data(), n, nullptr); });
  std::vector<std::unique_ptr<Comm>> comms;
  for (ncclComm_t h : handles) comms.push_back(std::make_unique<Comm>(h, true));
  return comms;
}

std::unique_ptr<Comm> split(const Comm& parent, int color, int key, std::optional<bool> blocking) {
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    throw py::value_error("color=" + std::to_string(color) +
                          " must be >= 0, or braid.SPLIT_NOCOLOR (-1) to leave");
  const bool childBlocking = blocking.value_or(parent.blocking());
  ncclConfig_t config = makeConfig(childBlocking, nullptr);
  ncclComm_t h = parent.get();
  ncclComm_t child = nullptr;
  callReleasingGil("ncclCommSplit", [&] { return ncclCommSplit(h, color, key, &child, &config); });
  if (!child) return nullptr;  // this rank passed SPLIT_NOCOLOR
  return std::make_unique<Comm>(child, childBlocking);
}

std::unique_ptr<Comm> shrink(const Comm& parent, std::vector<int> exclude, bool abortPending) {
  ncclConfig_t config = makeConfig(parent.blocking(), nullptr);
  ncclComm_t h = parent.get();
  ncclComm_t child = nullptr;
  callReleasingGil("ncclCommShrink", [&] {
    return ncclCommShrink(h, exclude.data(), static_cast<int>(exclude.size()), &child, &config,
                          abortPending ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT);
  });
  if (!child) return nullptr;
  return std::make_unique<Comm>(child, parent.blocking());
}

}  // namespace

void registerCommunicator(py::module_& m) {
  m.def(
      "get_unique_id",
      [] {
        ncclUniqueId id;
        callReleasingGil("ncclGetUniqueId", [&] { return ncclGetUniqueId(&id); });
        return py::bytes(id.internal, NCCL_UNIQUE_ID_BYTES);
      },
      "ncclGetUniqueId: the rendezvous token (128 bytes) to hand to every rank.");
  m.def("version", [] {
    int v = 0;
    callReleasingGil("ncclGetVersion", [&] { return ncclGetVersion(&v); });
    return v;
  });
  m.def("group_start", [] { callReleasingGil("ncclGroupStart", [] { return ncclGroupStart(); }); });
  m.def("group_end", [] { callReleasingGil("ncclGroupEnd", [] { return ncclGroupEnd(); }); });
  m.attr("SPLIT_NOCOLOR") = NCCL_SPLIT_NOCOLOR;

  py::class_<Comm> cls(m, "Comm", "An ncclComm_t; see braid.Communicator for the documented API.");
  cls.def_static("init_rank", &initRank, py::arg("nranks"), py::arg("unique_id"), py::arg("rank"),
                 py::arg("blocking") = true, py::arg("name") = py::none(),
                 py::arg("timeout") = py::none())
      .def_static("init_all", &initAll, py::arg("n"))
      .def_property_readonly("rank", &Comm::rank)
      .def_property_readonly("size", &Comm::size)
      .def_property_readonly("blocking", &Comm::blocking)
      .def_property_readonly("alive", &Comm::alive)
      .def_property_readonly(
          "handle", [](const Comm& c) { return reinterpret_cast<std::uintptr_t>(c.get()); })
      .def("split", &split, py::arg("color"), py::arg("key"), py::arg("blocking") = py::none())
      .def("shrink", &shrink, py::arg("exclude"), py::arg("abort_pending") = false)
      .def("destroy", &Comm::destroy)
      .def("abort", &Comm::abort)
      .def("finalize",
           [](const Comm& c) {
             ncclComm_t h = c.get();
             callReleasingGil("ncclCommFinalize", [&] { return ncclCommFinalize(h); });
           })
      .def("async_error",
           [](const Comm& c) {
             ncclComm_t h = c.get();
             ncclResult_t state = ncclSuccess;
             callReleasingGil("ncclCommGetAsyncError",
                              [&] { return ncclCommGetAsyncError(h, &state); });
             std::string text = state == ncclSuccess || state == ncclInProgress
                                    ? std::string()
                                    : std::string(ncclGetLastError(nullptr));
             return py::make_tuple(static_cast<int>(state), text);
           })
      .def("set_timeout",
           [](const Comm& c, double seconds) {
             ncclComm_t h = c.get();
             callReleasingGil("braidCommSetTimeout",
                              [&] { return braidCommSetTimeout(h, seconds); });
           })
      .def("get_timeout",
           [](const Comm& c) {
             ncclComm_t h = c.get();
             double seconds = 0;
             callReleasingGil("braidCommGetTimeout",
                              [&] { return braidCommGetTimeout(h, &seconds); });
             return seconds;
           })
      .def("barrier",
           [](const Comm& c) {
             ncclComm_t h = c.get();
             callReleasingGil("braidBarrier", [&] { return braidBarrier(h); });
           })
      .def("dump_flight_recorder", [](const Comm& c) {
        ncclComm_t h = c.get();
        callReleasingGil("braidCommDumpFlightRecorder",
                         [&] { return braidCommDumpFlightRecorder(h); });
      });
  registerCollectives(cls);
  registerPointerCollectives(cls);
}

}  // namespace braid::python
