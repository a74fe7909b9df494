//===- Bindings.h - The etllm Python extension's parts ----------*- C++ -*-===//
//
// The extension module `etllm._etllm` binds the C++ libraries; it
// reimplements nothing. Each part registers its classes and functions:
//
//   Compiler.cpp  export_config.yaml, the export flow (checkpoint or ATen
//                 graph), the Tester, the hub cache, the safetensors writer
//   Runtime.cpp   Program (load a .pte, call its methods) and Runner
//                 (generate text with the runtime's tokenizer and sampler)
//   Image.cpp     preprocess_image (runtime/image; when the runtime was
//                 built with libpng and libjpeg)
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PYTHON_BINDINGS_H
#define ETLLM_PYTHON_BINDINGS_H

#include "etllm/runtime/result.h"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace etllm::python {

/// Raised for every error the C++ side reports (Python: etllm.Error, a
/// RuntimeError).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void raise(const std::string &message) {
  throw Error(message);
}

/// Raises a failed status's message.
inline void check(const rt::Status &st) {
  if (!st.ok())
    raise(st.message());
}

void bindCompiler(pybind11::module_ &m);
void bindRuntime(pybind11::module_ &m);
void bindImage(pybind11::module_ &m);

} // namespace etllm::python

#endif // ETLLM_PYTHON_BINDINGS_H
