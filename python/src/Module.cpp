//===- Module.cpp - The etllm._etllm extension module ---------------------===//
#include "Bindings.h"

#include "etllm/InitAll.h"
#include "etllm/runtime/backend.h"

namespace py = pybind11;

PYBIND11_MODULE(_etllm, m) {
  m.doc() = "etllm's C++ compiler and runtime (see docs/Python.md); use the "
            "`etllm` package rather than this module";
  // The extension is this process's main: it registers what etllm-export and
  // etllm-run register (libraries never do).
  etllm::registerAllPasses();
  etllm::rt::registerBuiltinBackends();
  py::register_exception<etllm::python::Error>(m, "Error", PyExc_RuntimeError);
  etllm::python::bindCompiler(m);
  etllm::python::bindRuntime(m);
#ifdef ETLLM_PYTHON_IMAGES
  etllm::python::bindImage(m);
#endif
}
