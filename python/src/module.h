// The parts of the extension module braid._braid, each registered by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace braid::python {

void registerErrors(pybind11::module_& m);        // errors.cc
void registerTypes(pybind11::module_& m);         // types.cc
void registerCommunicator(pybind11::module_& m);  // communicator.cc (+ collectives)
void registerStream(pybind11::module_& m);        // stream.cc
void registerGradSync(pybind11::module_& m);      // gradsync.cc

}  // namespace braid::python
