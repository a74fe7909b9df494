//===- ExamplePlugin.cpp - The example backend as plugins -----------------===//
//
// The example backend built as two shared libraries that etllm-export and
// etllm-run load with --plugin (include/etllm/Target/Plugin.h,
// etllm/runtime/plugin.h): no file of etllm names it.
//
//===----------------------------------------------------------------------===//
#include "ExampleBackend.h"

#ifdef ETLLM_EXAMPLE_COMPILER_PLUGIN
#include "etllm/Target/Plugin.h"
ETLLM_BACKEND_PLUGIN("example", ::etllm::example::registerExampleBackend)
#else
#include "etllm/runtime/plugin.h"
ETLLM_RUNTIME_BACKEND_PLUGIN("example",
                             ::etllm::example::registerExampleRuntimeBackend)
#endif
