//===- ExampleBackend.h - A backend outside the core tree -------*- C++ -*-===//
//
// A small backend that lives under test/ and is registered only by the
// tests: it proves a backend can plug in without touching etllm's core (its
// own legality, its own pass, its own blob, its own runtime half).
// docs/AddingABackend.md walks through it.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TEST_EXAMPLE_BACKEND_H
#define ETLLM_TEST_EXAMPLE_BACKEND_H

namespace etllm::example {

/// Registers the compiler half (backend "example"; "example_static", the
/// same legality for static shapes only) and its pass.
void registerExampleBackend();
/// Registers the runtime half with the runtime's backend registry (for
/// both compiler halves' blobs).
void registerExampleRuntimeBackend();

} // namespace etllm::example

#endif // ETLLM_TEST_EXAMPLE_BACKEND_H
