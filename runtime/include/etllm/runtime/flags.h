//===- flags.h - Checked numbers from command lines and APIs ----*- C++ -*-===//
//
// The one parser of numeric command-line flags (etllm-run, etllm-bench,
// etllm-gen-checkpoint, etllm-export's --set) and the one check of numbers
// given through an API (Python, the C API): text must be a number of the
// expected kind, finite (no NaN, no infinity) and inside the range, or the
// error names the flag or parameter, the text and the range.
//
// Written here rather than taken from a library: the runtime links no
// LLVM (cl::opt would do it in the compiler tools) and the checks are the
// few lines below around strtoll/strtod.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_FLAGS_H
#define ETLLM_RUNTIME_FLAGS_H

#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace etllm::rt {

/// The values a number may take. Bounds are inclusive unless marked open.
struct NumberRange {
  double min;
  double max;
  bool minOpen = false;
  bool maxOpen = false;
  /// Only whole numbers (the text must be an integer, digits only).
  bool integer = false;
};

/// The range as text: "[0, 1]", "(0, 1]", "integers in [0, 2147483647]".
std::string describe(const NumberRange &range);

/// Checks a number given through an API: finite and inside `range` (and
/// whole when the range says so). The error reads "NAME: VALUE ...".
Status checkNumber(std::string_view name, double value,
                   const NumberRange &range);

/// Reads `text` as a number of `range` for the flag `name` (e.g.
/// "--temperature"): decimal (strtod syntax; digits with an optional sign
/// when the range is integer), nothing before or after it, finite, in range.
Result<double> parseNumber(std::string_view name, const char *text,
                           const NumberRange &range);

/// An integer in [min, max], exactly (no detour through double).
Result<int64_t> parseInteger(std::string_view name, const char *text,
                             int64_t min, int64_t max);

/// An unsigned 64-bit integer (seeds): digits only, at most 2^64 - 1.
Result<uint64_t> parseUnsigned(std::string_view name, const char *text);

/// A byte count: digits with an optional suffix K, M, G or T (powers of
/// 1024; "KiB", "MiB", "GiB", "TiB" too), e.g. "512M". At most 2^60 bytes.
Result<uint64_t> parseByteSize(std::string_view name, const char *text);

/// "PATH" or "PATH:SCALE" (LoRA adapters: `--lora`, the `lora` config key):
/// the scale is the text after the last ':' when it is a number, and must
/// be finite; 1 otherwise. `name` names the flag or key in errors.
Result<std::pair<std::string, double>> parsePathAndScale(std::string_view name,
                                                         std::string_view text);

/// The machine's hardware threads (std::thread::hardware_concurrency(), at
/// least 1): the most threads a thread pool may have.
size_t hardwareThreads();

/// A thread count must be in [1, hardwareThreads()].
Status checkThreads(std::string_view name, int64_t threads);

/// Reads a thread-count flag (checkThreads' bound).
Result<size_t> parseThreads(std::string_view name, const char *text);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_FLAGS_H
