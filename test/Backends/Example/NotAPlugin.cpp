//===- NotAPlugin.cpp - A shared library that is no plugin ----------------===//
//
// Loadable, but without an etllm plugin entry point: plugin.test checks that
// both tools refuse it with one error naming the file.
//
//===----------------------------------------------------------------------===//
extern "C" int etllmNotAPlugin() { return 42; }
