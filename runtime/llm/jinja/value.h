//===- value.h - Jinja values with Python semantics -------------*- C++ -*-===//
//
// What the evaluator computes with: undefined, none, booleans, integers,
// floats, strings, lists (and tuples), dicts, namespaces and callables (a
// builtin, with its receiver for a method), with Python's truth, str(),
// repr(), equality and ordering.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_VALUE_H
#define ETLLM_RUNTIME_LLM_JINJA_VALUE_H

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt::llm::jinja {

/// The type of a Value (Python's, plus Jinja's Undefined and Namespace).
enum class Kind : uint8_t {
  Undefined,
  None,
  Bool,
  Int,
  Float,
  String,
  List,
  Dict,
  Namespace,
  Callable,
};

struct Builtin;
struct DictData;

/// A Jinja value with Python semantics. Strings, lists and dicts are shared
/// and immutable once built, except a Namespace's entries.
struct Value {
  Kind kind = Kind::Undefined;
  bool b = false;
  bool tuple = false; // a List that Python would show as a tuple
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;
  std::shared_ptr<const std::vector<Value>> list;
  std::shared_ptr<DictData> dict; // Dict (never mutated) or Namespace
  // Callable: the name it prints as; Undefined: what was looked up.
  std::string name;
  const Builtin *builtin = nullptr;  // Callable: what a call runs
  std::shared_ptr<const Value> self; // a method's receiver

  static Value undefined(std::string what) {
    Value v;
    v.name = std::move(what);
    return v;
  }
  static Value none() {
    Value v;
    v.kind = Kind::None;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.kind = Kind::Bool;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.kind = Kind::Int;
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v;
    v.kind = Kind::String;
    v.s = std::make_shared<const std::string>(std::move(x));
    return v;
  }
  static Value makeList(std::vector<Value> items, bool tuple = false) {
    Value v;
    v.kind = Kind::List;
    v.tuple = tuple;
    v.list = std::make_shared<const std::vector<Value>>(std::move(items));
    return v;
  }
  static Value callable(std::string name, const Builtin *builtin,
                        std::shared_ptr<const Value> self) {
    Value v;
    v.kind = Kind::Callable;
    v.name = std::move(name);
    v.builtin = builtin;
    v.self = std::move(self);
    return v;
  }
  const std::string &str() const { return *s; }
  const std::vector<Value> &items() const { return *list; }
  bool isNumber() const {
    return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool;
  }
  bool isIntLike() const { return kind == Kind::Int || kind == Kind::Bool; }
  int64_t asInt() const { return kind == Kind::Bool ? int64_t(b) : i; }
  double asDouble() const {
    return kind == Kind::Float ? f : kind == Kind::Bool ? double(b) : double(i);
  }
};

/// The entries of a dict or namespace, in insertion order.
struct DictData {
  std::vector<std::pair<std::string, Value>> entries;
  const Value *find(const std::string &k) const {
    for (const auto &e : entries)
      if (e.first == k)
        return &e.second;
    return nullptr;
  }
  void set(const std::string &k, Value v) {
    for (auto &e : entries)
      if (e.first == k) {
        e.second = std::move(v);
        return;
      }
    entries.emplace_back(k, std::move(v));
  }
};

/// A new dict (or namespace) holding `entries`.
inline Value makeDict(std::vector<std::pair<std::string, Value>> entries,
                      Kind kind = Kind::Dict) {
  Value v;
  v.kind = kind;
  v.dict = std::make_shared<DictData>();
  v.dict->entries = std::move(entries);
  return v;
}

/// How deep values may nest for printing, comparing and JSON.
constexpr int kMaxValueDepth = 64;

/// Python's type name of `v` (for error messages).
const char *typeName(const Value &v);

/// Python's truth of `v`.
bool truthy(const Value &v);

/// Python's str() and repr().
std::string toStr(const Value &v, int depth = 0);
std::string toRepr(const Value &v, int depth = 0);

/// Python's ==.
bool equals(const Value &a, const Value &b, int depth = 0);

/// -1, 0, 1 for a < b, a == b, a > b; fails on unorderable types, naming
/// operator `op`.
int compareValues(const Value &a, const Value &b, int line, const char *op,
                  int depth = 0);

/// The message for using undefined value `v`.
std::string undefinedMessage(const Value &v);

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_VALUE_H
