//===- evaluator.h - Rendering a Jinja syntax tree --------------*- C++ -*-===//
//
// Walks a parsed template with Python value semantics: statements, loops
// with Jinja's `loop` object, scopes, expressions and operators, attribute
// and item access, slices, and calls of the builtins (builtins.def). The
// builtins' implementations use its public part (iteration, lookup,
// operators and the limits).
//
// Every step, nesting level and byte of output is counted against the
// template's limits; a failure is thrown as a TemplateFail.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_EVALUATOR_H
#define ETLLM_RUNTIME_LLM_JINJA_EVALUATOR_H

#include "ast.h"
#include "builtins.h"
#include "value.h"

#include "etllm/runtime/llm/chat_template.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace etllm::rt::llm::jinja {

/// One rendering of a template (not thread-safe; one per render).
class Evaluator {
public:
  /// Renders `body` with the top-level variables of dict `globals`.
  Evaluator(const Body &body, const TemplateLimits &limits, Value globals);

  /// Namespaces are the one container a template can change after making
  /// it (`{% set ns.attr = value %}`), so the one way to a reference cycle
  /// (`{% set ns.me = ns %}`, or through a list or another namespace
  /// holding ns): shared_ptr never frees one. Emptying every namespace still
  /// alive when the render ends breaks them all; nothing of the render's
  /// values outlives it (it returns text).
  ~Evaluator();

  Evaluator(const Evaluator &) = delete;
  Evaluator &operator=(const Evaluator &) = delete;

  /// The rendered text.
  std::string run();

  // What builtins use ------------------------------------------------------

  const TemplateLimits &limits() const { return limits_; }

  /// Counts one evaluation step against the budget.
  void step(int line);

  /// Fails if a string or list of `bytes` would exceed the output limit.
  void checkSize(size_t bytes, int line) const;

  /// The items a for loop (or list()) sees.
  std::vector<Value> iterate(const Value &v, int line);

  /// `obj.name` (a dict entry, a namespace attribute, a method).
  Value getAttr(const Value &obj, const std::string &name, int line);

  /// `obj[key]`.
  Value getItem(const Value &obj, const Value &key, int line);

  /// Binary operator `op` (+ - * / // % ** ~).
  Value binaryOp(const std::string &op, const Value &l, const Value &r,
                 int line);

  /// `item in container`.
  bool contains(const Value &container, const Value &item, int line);

  /// Registers a namespace made during the render (see ~Evaluator).
  void trackNamespace(const Value &ns) { namespaces_.push_back(ns.dict); }

private:
  enum class Flow { Normal, Break, Continue };

  struct DepthGuard {
    Evaluator &e;
    DepthGuard(Evaluator &ev, int line);
    ~DepthGuard() { --e.depth_; }
  };

  void emit(const std::string &s, int line);
  Value lookup(const std::string &name) const;
  void assign(const Target &t, const Value &v, int line);
  Flow exec(const Body &body, int line);
  void execFor(const Stmt &s);
  Value eval(const Expr &e);
  void evalArgs(const Expr &e, Args &args, Kwargs &kwargs);
  Value slice(const Value &obj, const Value &start, const Value &stop,
              const Value &stepV, int line);
  bool compareOp(const std::string &op, const Value &l, const Value &r,
                 int line);
  Value call(const Value &callee, const Args &args, const Kwargs &kw, int line);
  /// Applies filter node `f`; a set block's chain ends in a filter with no
  /// operand, which takes `input`.
  Value applyFilterChain(const Expr &f, const Value &input);

  const Body &body_;
  const TemplateLimits &limits_;
  std::vector<std::weak_ptr<DictData>> namespaces_;
  std::vector<std::unordered_map<std::string, Value>> frames_;
  std::string out_;
  uint64_t steps_ = 0;
  int depth_ = 0;
};

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_EVALUATOR_H
