//===- tests.cpp - Jinja tests (`x is name`) ------------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h): Jinja's
// built-in tests, as declared in builtins.def. Each returns a boolean.
//
//===----------------------------------------------------------------------===//
#include "builtins.h"

#include "evaluator.h"
#include "failure.h"
#include "text.h"

namespace etllm::rt::llm::jinja {
namespace {

/// The test's argument `k`.
const Value &operand(const Call &c, size_t k) {
  if (k >= c.args.size())
    unsupported(c.line, "the test '" + c.name + "' needs an argument");
  return c.args[k];
}

/// The value tested, which must be an integer.
int64_t intOperand(const Call &c) {
  if (!c.self.isIntLike())
    unsupported(c.line, "the test '" + c.name + "' needs an integer");
  return c.self.asInt();
}

Value is(bool b) { return Value::boolean(b); }

} // namespace

Value testDefined(Evaluator &, const Call &c) {
  return is(c.self.kind != Kind::Undefined);
}
Value testUndefined(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Undefined);
}
Value testNone(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::None);
}
Value testBoolean(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Bool);
}
Value testTrue(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Bool && c.self.b);
}
Value testFalse(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Bool && !c.self.b);
}
Value testInteger(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Int);
}
Value testFloat(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Float);
}
Value testNumber(Evaluator &, const Call &c) { return is(c.self.isNumber()); }
Value testString(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::String);
}
Value testMapping(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Dict);
}
Value testIterable(Evaluator &, const Call &c) {
  Kind k = c.self.kind;
  return is(k == Kind::String || k == Kind::List || k == Kind::Dict ||
            k == Kind::Undefined);
}
Value testSequence(Evaluator &, const Call &c) {
  Kind k = c.self.kind;
  return is(k == Kind::String || k == Kind::List || k == Kind::Dict);
}
Value testCallable(Evaluator &, const Call &c) {
  return is(c.self.kind == Kind::Callable);
}
Value testEscaped(Evaluator &, const Call &) { return is(false); }

Value testLower(Evaluator &, const Call &c) {
  std::string s = toStr(c.self);
  return is(asciiLower(s) == s);
}
Value testUpper(Evaluator &, const Call &c) {
  std::string s = toStr(c.self);
  return is(asciiUpper(s) == s);
}

Value testOdd(Evaluator &, const Call &c) { return is(intOperand(c) % 2 != 0); }
Value testEven(Evaluator &, const Call &c) {
  return is(intOperand(c) % 2 == 0);
}
Value testDivisibleby(Evaluator &, const Call &c) {
  int64_t x = intOperand(c);
  const Value &d = operand(c, 0);
  if (!d.isIntLike() || d.asInt() == 0)
    unsupported(c.line, "divisibleby needs a non-zero integer");
  // x % -1 is 0, but computing it for the least int64 traps.
  return is(d.asInt() == -1 || x % d.asInt() == 0);
}

Value testEq(Evaluator &, const Call &c) {
  return is(equals(c.self, operand(c, 0)));
}
Value testNe(Evaluator &, const Call &c) {
  return is(!equals(c.self, operand(c, 0)));
}
Value testLt(Evaluator &, const Call &c) {
  return is(compareValues(c.self, operand(c, 0), c.line, "<") < 0);
}
Value testLe(Evaluator &, const Call &c) {
  return is(compareValues(c.self, operand(c, 0), c.line, "<=") <= 0);
}
Value testGt(Evaluator &, const Call &c) {
  return is(compareValues(c.self, operand(c, 0), c.line, ">") > 0);
}
Value testGe(Evaluator &, const Call &c) {
  return is(compareValues(c.self, operand(c, 0), c.line, ">=") >= 0);
}
Value testIn(Evaluator &ev, const Call &c) {
  return is(ev.contains(operand(c, 0), c.self, c.line));
}

Value testSameas(Evaluator &, const Call &c) {
  const Value &v = c.self, &o = operand(c, 0);
  if (v.kind != o.kind)
    return is(false);
  if (v.kind == Kind::None || v.kind == Kind::Undefined)
    return is(true);
  if (v.kind == Kind::Bool)
    return is(v.b == o.b);
  if (v.kind == Kind::Dict || v.kind == Kind::Namespace)
    return is(v.dict == o.dict);
  if (v.kind == Kind::List)
    return is(v.list == o.list);
  return is(false);
}

} // namespace etllm::rt::llm::jinja
