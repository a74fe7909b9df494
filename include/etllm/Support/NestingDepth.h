//===- NestingDepth.h - Bounds on the nesting of textual input --*- C++ -*-===//
//
// Parsers of nested text (MLIR's, yaml-cpp's) recurse once per level, so a
// file nested 100,000 levels deep overflows the stack before they can report
// anything. These checks run over the raw text first, in linear time and
// constant memory, and refuse input nested deeper than a limit with its
// position. No LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SUPPORT_NESTINGDEPTH_H
#define ETLLM_SUPPORT_NESTINGDEPTH_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace etllm {

/// The deepest nesting of brackets etllm-opt, etllm-translate and the IR
/// fuzzer accept in textual IR. Real etllm IR nests under 20 levels; MLIR's
/// recursive parser overflows an 8 MiB stack after about 2,000 nested
/// regions (fewer under AddressSanitizer).
inline constexpr unsigned kMaxIrNesting = 256;

/// Where a text first nests deeper than a limit.
struct NestingViolation {
  size_t offset = 0; ///< byte offset of the opening bracket that exceeds it
  size_t line = 1, column = 1; ///< 1-based, columns in bytes
  unsigned limit = 0;
};

/// Scans MLIR textual IR for brackets `(`, `[`, `{`, `<` nested deeper than
/// `limit`, skipping string literals and `//` comments. `->` and `>=` are
/// not closing brackets. The count is what MLIR's parser recurses on (ops
/// nest through regions `{`, attributes and types through the others), so
/// any IR it accepts within the limit parses without deep recursion.
std::optional<NestingViolation> findIrNestingViolation(std::string_view text,
                                                       unsigned limit);

/// "NAME:LINE:COL: error: IR nested deeper than LIMIT levels ...", the one
/// message tools print for a violation (no excerpt: the line may be huge).
std::string describeIrNestingViolation(const NestingViolation &v,
                                       std::string_view name);

} // namespace etllm

#endif // ETLLM_SUPPORT_NESTINGDEPTH_H
