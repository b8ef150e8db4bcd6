// The Python module mixccl._torch_backend: what mixccl.torch needs to register the backend.
#include "backend.h"
#include "device_fence.h"

#include <pybind11/chrono.h>
#include <torch/extension.h>

namespace py = pybind11;
using mixccl_torch::MixcclBackend;

PYBIND11_MODULE(_torch_backend, m) {
  m.doc() = "mixccl's c10d::Backend; import mixccl.torch to register it as backend \"mixccl\"";
  // Backend's Python type must be known before a subclass is declared.
  py::module_::import("torch.distributed");

  py::class_<MixcclBackend, c10d::Backend, c10::intrusive_ptr<MixcclBackend>>(m, "MixcclBackend")
      .def_property_readonly("adaptor", &MixcclBackend::adaptor,
                             "This rank's mixccl device adaptor (\"host\", \"gloo\", ...)")
      .def("inspect", &MixcclBackend::inspect, py::arg("key"),
           "mixcclCommInspect(key) on the group's communicator: what mixccl chose "
           "(transport.<peer>, algo.allreduce.<bytes>, shm_slot_bytes, ...; docs/inspect.md)")
      .def_property_readonly("timeout_seconds", &MixcclBackend::timeoutSeconds,
                             "The communicator's timeout: every wait is bounded by it")
      .def_property_readonly("formed_by", &MixcclBackend::formedBy,
                             "\"split\" (from a parent group) or \"store\" (a new communicator)")
      .def("p2p_comm_count", &MixcclBackend::p2pCommCount,
           "mixccl communicators the group's point-to-point holds: two on host memory "
           "(one per direction), whatever the peers and tags (plus a lane per peer, "
           "direction and tag for device memory and CUDA tensors)")
      .def("p2p_inspect", &MixcclBackend::p2pInspect, py::arg("key"), py::arg("direction") = 0,
           py::call_guard<py::gil_scoped_release>(),
           "mixcclCommInspect(key) on one of the group's point-to-point communicators "
           "(connected_peers, transport.<peer>, ...): direction 0 carries the messages from "
           "lower to higher ranks, 1 those from higher to lower ranks")
      .def_property_readonly("pack_below_bytes", &MixcclBackend::packBelowBytes,
                             "Coalesced calls pack their tensors below this many bytes into "
                             "one mixccl call (MIXCCL_TORCH_PACK_BYTES, else chosen by the "
                             "communicator: 0 on shared-memory slots; 0: never)")
      .def_property_readonly("pack_why", &MixcclBackend::packWhy,
                             "What decided pack_below_bytes")
      .def("mixccl_calls", &MixcclBackend::mixcclCalls,
           "Collective calls made on the group's communicator so far")
      .def("revoke", &MixcclBackend::revoke, py::call_guard<py::gil_scoped_release>(),
           "Stops the group's work on this rank and on every rank it reaches "
           "(mixcclCommRevoke; its point-to-point communicator is aborted, so a peer waiting on a "
           "transfer with this rank fails at once); then only shrink_group(SHRINK_ABORT) or "
           "destroy")
      .def(
          "perform_nocolor_split",
          [](MixcclBackend& self, const py::object& /*device*/) {
            // torch calls this on ranks left out of a new group split from this one.
            self.splitGroup(nullptr, false, 0, std::chrono::milliseconds(0));
          },
          py::arg("device") = py::none(), py::call_guard<py::gil_scoped_release>())
      .def(
          "split_group",
          [](MixcclBackend& self, const c10::intrusive_ptr<c10d::Store>& store, int key,
             std::chrono::milliseconds timeout) {
            return self.splitGroup(store, true, key, timeout);
          },
          py::arg("store"), py::arg("key"), py::arg("timeout"),
          py::call_guard<py::gil_scoped_release>());

  m.attr("cuda_built") = mixccl_torch::cudaFenceBuilt();

  m.def("create_backend", &MixcclBackend::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "A new mixccl communicator for this group, formed through store");
}
