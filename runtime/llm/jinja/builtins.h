//===- builtins.h - The globals, filters, tests and methods -----*- C++ -*-===//
//
// The builtins of the interpreter are declared once, in builtins.def; this
// header gives the table's lookup (the parser checks filter and test names
// against it, the evaluator calls through it), the calling convention of
// their implementations and the argument helpers those share.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_BUILTINS_H
#define ETLLM_RUNTIME_LLM_JINJA_BUILTINS_H

#include "value.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt::llm::jinja {

class Evaluator;

/// Positional and keyword arguments of a call.
using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

/// Where a builtin is found (see builtins.def).
enum class BuiltinKind : uint8_t {
  Global,
  Filter,
  Test,
  StrMethod,
  DictMethod,
  ListMethod,
  LoopMethod,
};

/// One call of a builtin.
struct Call {
  /// The name it was called by (aliases share an implementation).
  std::string name;
  /// A filter's or test's operand, a method's receiver (none for a global).
  const Value &self;
  const Args &args;
  const Kwargs &kw;
  /// The template line, for errors.
  int line;

  /// Keyword argument `key`, or null.
  const Value *kwarg(const char *key) const;
  /// Argument `pos` (positional) or `key` (keyword), or null.
  const Value *arg(size_t pos, const char *key) const;
  /// The string `v` (`dflt` when null); fails on another type.
  std::string str(const Value *v, const std::string &dflt = {}) const;
  /// The integer `v` (`dflt` when null or none); fails on another type.
  int64_t integer(const Value *v, int64_t dflt) const;
};

/// A builtin's implementation. A test returns a boolean.
using BuiltinFn = Value (*)(Evaluator &, const Call &);

/// One row of builtins.def.
struct Builtin {
  BuiltinKind kind;
  const char *name;
  BuiltinFn fn;
};

/// The builtin `name` of kind `kind`, or null.
const Builtin *findBuiltin(BuiltinKind kind, const std::string &name);

/// Python's str.replace (`count` < 0: all), bounded by the output limit.
std::string replaceAll(Evaluator &ev, const std::string &s,
                       const std::string &from, const std::string &to,
                       int64_t count, int line);

// The implementations (filters.cpp, tests.cpp, methods.cpp).
#define JINJA_BUILTIN(Kind, Name, Function)                                    \
  Value Function(Evaluator &ev, const Call &c);
#include "builtins.def"

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_BUILTINS_H
