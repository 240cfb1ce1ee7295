#include "errors.h"
#include "module.h"

#include <exception>

namespace braid::python {

void registerErrors(py::module_& m) {
  // BraidError is defined in Python (braid/errors.py) so that it is an ordinary class users can
  // subclass, pickle and catch; the translator builds one with the code and the library's text.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const LibraryError& e) {
      py::object cls = py::module_::import("braid.errors").attr("BraidError");
      py::object exc = cls(static_cast<int>(e.code()), e.text());
      PyErr_SetObject(cls.ptr(), exc.ptr());
    }
  });
  m.def(
      "error_string", [](int code) { return ncclGetErrorString(static_cast<ncclResult_t>(code)); },
      py::arg("code"), "ncclGetErrorString: the library's short description of a result code.");
}

}  // namespace braid::python
