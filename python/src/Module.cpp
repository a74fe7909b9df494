//===- Module.cpp - The etllm._etllm extension module ---------------------===//
#include "Bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_etllm, m) {
  m.doc() = "etllm's C++ compiler and runtime (see docs/Python.md); use the "
            "`etllm` package rather than this module";
  py::register_exception<etllm::python::Error>(m, "Error", PyExc_RuntimeError);
  etllm::python::bindCompiler(m);
  etllm::python::bindRuntime(m);
}
