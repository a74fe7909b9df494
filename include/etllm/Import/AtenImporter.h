//===- AtenImporter.h - ATen graph to exported-graph IR ---------*- C++ -*-===//
//
// The importer behind `etllm.export_llm(nn.Module, ...)`: the Python package
// traces a module at ATen level (make_fx + functionalization), writes the
// graph as JSON (the format is in docs/Python.md: tensor declarations,
// nodes with schema-named arguments, result shapes in terms of the one
// dynamic size S, buffer write-backs) and this library maps every ATen op to
// level-A etllm ops:
//
//   * the module's tensors become `etllm.parameter`s read from the
//     checkpoint named by `etllm.checkpoint` (tiny ones may be inline);
//   * buffers the graph writes back become `etllm.buffer`s, read with
//     `etllm.buffer.read` and written with `etllm.buffer.write`;
//   * every op carries its module path (`etllm.module`) and the module
//     records `etllm.module_classes`;
//   * dimensions that follow S are dynamic (`?`), bounded by max_seq_len.
//
// Ops or arguments the importer does not map are reported together in one
// error, each with the module paths where it occurs.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_IMPORT_ATENIMPORTER_H
#define ETLLM_IMPORT_ATENIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace etllm {

/// Builds the exported graph described by `json`; `source` names the
/// description in errors.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importAtenGraph(mlir::MLIRContext *context, llvm::StringRef json,
                llvm::StringRef source);

/// The ATen ops (overload names, e.g. "aten.addmm.default") the importer
/// maps, sorted.
std::vector<std::string> supportedAtenOps();

} // namespace etllm

#endif // ETLLM_IMPORT_ATENIMPORTER_H
