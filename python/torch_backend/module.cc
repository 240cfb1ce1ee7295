// braid._braid_torch: the Python face of the PyTorch backend. braid/torch.py registers
// create_process_group with torch.distributed.Backend.register_backend("braid", ...).
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_braid.h"
#include "shared_allocator.h"

namespace py = pybind11;

namespace {

c10::intrusive_ptr<braid_torch::ProcessGroupBraid> createProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::duration<float> timeout) {
  TORCH_CHECK_VALUE(size >= 1, "braid process group: world_size=", size, " must be at least 1");
  TORCH_CHECK_VALUE(rank >= 0 && rank < size, "braid process group: rank=", rank,
                    " is not in [0, world_size=", size, ")");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return c10::make_intrusive<braid_torch::ProcessGroupBraid>(store, rank, size, ms);
}

}  // namespace

PYBIND11_MODULE(_braid_torch, m) {
  m.doc() = "Braid's torch.distributed process group (import braid.torch to register it)";
  // Registers c10d's ProcessGroup, Store and Work types with pybind11 before ours derive from them.
  py::module::import("torch.distributed");

  py::class_<braid_torch::ProcessGroupBraid, braid_torch::TorchBackendBase,
             c10::intrusive_ptr<braid_torch::ProcessGroupBraid>>(m, "ProcessGroupBraid")
      .def("comm_timeout_seconds", &braid_torch::ProcessGroupBraid::commTimeoutSeconds,
           "The communicator's deadline in seconds (0: none).");

  // The GIL is released while the ranks meet: rank 0's TCPStore and other threads keep running.
  m.def("create_process_group", &createProcessGroup, py::arg("store"), py::arg("rank"),
        py::arg("world_size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "Creates a Braid process group (the creator function given to register_backend).");

  // braid.torch.shared_memory() (docs/pytorch.md, "Shared buckets").
  m.def("_enter_shared_scope", &braid_torch::enterSharedScope,
        "Opens a shared-memory allocation scope; False when c10 kept another CPU allocator.");
  m.def("_leave_shared_scope", &braid_torch::leaveSharedScope,
        "Closes the innermost shared-memory allocation scope.");
  m.def(
      "_shared_allocator_stats",
      [] {
        braid_torch::SharedAllocatorStats s = braid_torch::sharedAllocatorStats();
        py::dict d;
        d["installed"] = s.installed;
        d["depth"] = s.depth;
        d["allocations"] = s.allocations;
        d["bytes"] = s.bytes;
        d["registrations"] = s.registrations;
        return d;
      },
      "The shared allocator's live allocations, bytes and registrations.");
  m.def(
      "_is_shared",
      [](const at::Tensor& t) {
        return t.defined() && t.device().is_cpu() &&
               braid_torch::isSharedRange(t.data_ptr(), t.nbytes());
      },
      py::arg("tensor"), "True when the tensor's data lies in a shared (ncclMemAlloc) allocation.");

  int version = 0;
  ncclGetVersion(&version);
  m.attr("nccl_api_version") = version;
}
