// braid._braid: the Python bindings' extension module. The documented API is the package braid
// (python/braid/__init__.py), which wraps these objects.
#include "module.h"

PYBIND11_MODULE(_braid, m) {
  m.doc() =
      "Braid's C API (nccl.h, braid/braid.h, braid/gradsync.h) for Python; use package braid.";
  braid::python::registerErrors(m);
  braid::python::registerTypes(m);
  braid::python::registerCommunicator(m);
  braid::python::registerStream(m);
  braid::python::registerGradSync(m);
}
