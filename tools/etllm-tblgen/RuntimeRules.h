//===- RuntimeRules.h - The load-time rules of a kernel call ----*- C++ -*-===//
//
// What the runtime checks of each kernel call when a program loads, beyond
// the contract's counts: read from the op's ODS (type constraints, the
// upstream same-type traits) and its Etllm_Rule annotations
// (EtllmInterfaces.td), written into ops.def as ETLLM_OP_VALUE,
// ETLLM_OP_RULE and ETLLM_OP_CHECK lines that runtime/core/verify_ops.cpp
// interprets.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TBLGEN_RUNTIMERULES_H
#define ETLLM_TBLGEN_RUNTIMERULES_H

#include "KernelContract.h"

#include <string>
#include <vector>

namespace etllm_tblgen {

/// The documentation of the ETLLM_OP_VALUE / ETLLM_OP_RULE / ETLLM_OP_CHECK
/// macros, for ops.def's header (lines starting with "// ").
extern const char *const kRuntimeRulesDoc;

/// The ETLLM_OP_VALUE, ETLLM_OP_RULE and ETLLM_OP_CHECK lines of `k` (each
/// rule with a comment saying what it checks). Fails the build for an
/// annotation that names no operand, result or contract attribute, or one of
/// the wrong kind, and for a type constraint whose element types it cannot
/// read.
std::vector<std::string> runtimeRuleLines(const Kernel &k);

} // namespace etllm_tblgen

#endif // ETLLM_TBLGEN_RUNTIMERULES_H
