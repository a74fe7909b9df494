//===- Glob.h - Linear-time `*` glob matching --------------------*- C++
//-*-===//
//
// The patterns of `quantization.exclude` (export_config.yaml) match module
// paths: `*` matches any run of characters (also none), every other
// character matches itself. Patterns come from users' files, so matching is
// linear in the pattern and the text (no backtracking): a pattern of 30 `*`
// costs no more than one of 30 letters. No LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SUPPORT_GLOB_H
#define ETLLM_SUPPORT_GLOB_H

#include <string_view>

namespace etllm {

/// True when `text` matches `pattern` as a whole, where `*` in `pattern`
/// matches any run of characters (including none) and every other character
/// matches itself. Time O(|pattern| + |text|), memory O(|pattern|).
bool globMatch(std::string_view pattern, std::string_view text);

} // namespace etllm

#endif // ETLLM_SUPPORT_GLOB_H
