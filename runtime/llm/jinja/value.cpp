//===- value.cpp - Jinja values with Python semantics ---------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h).
//
//===----------------------------------------------------------------------===//
#include "value.h"

#include "failure.h"
#include "text.h"

#include <algorithm>

namespace etllm::rt::llm::jinja {

const char *typeName(const Value &v) {
  switch (v.kind) {
  case Kind::Undefined:
    return "Undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return v.tuple ? "tuple" : "list";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Callable:
    return "function";
  }
  return "?";
}

bool truthy(const Value &v) {
  switch (v.kind) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return v.b;
  case Kind::Int:
    return v.i != 0;
  case Kind::Float:
    return v.f != 0;
  case Kind::String:
    return !v.s->empty();
  case Kind::List:
    return !v.list->empty();
  case Kind::Dict:
    return !v.dict->entries.empty();
  case Kind::Namespace:
  case Kind::Callable:
    return true;
  }
  return false;
}

std::string toStr(const Value &v, int depth) {
  if (depth > kMaxValueDepth)
    throw TemplateFail{RenderFailure::Unsupported,
                       "a value nests too deeply to print"};
  switch (v.kind) {
  case Kind::Undefined:
    return "";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return v.b ? "True" : "False";
  case Kind::Int:
    return std::to_string(v.i);
  case Kind::Float:
    return pyFloatRepr(v.f);
  case Kind::String:
    return *v.s;
  case Kind::List: {
    std::string out = v.tuple ? "(" : "[";
    for (size_t k = 0; k < v.list->size(); ++k) {
      if (k)
        out += ", ";
      out += toRepr((*v.list)[k], depth + 1);
    }
    if (v.tuple && v.list->size() == 1)
      out += ",";
    return out + (v.tuple ? ")" : "]");
  }
  case Kind::Dict:
  case Kind::Namespace: {
    std::string out = v.kind == Kind::Namespace ? "<Namespace {" : "{";
    for (size_t k = 0; k < v.dict->entries.size(); ++k) {
      if (k)
        out += ", ";
      out += pyStrRepr(v.dict->entries[k].first) + ": " +
             toRepr(v.dict->entries[k].second, depth + 1);
    }
    return out + (v.kind == Kind::Namespace ? "}>" : "}");
  }
  case Kind::Callable:
    return "<built-in function " + v.name + ">";
  }
  return "";
}

std::string toRepr(const Value &v, int depth) {
  if (v.kind == Kind::String)
    return pyStrRepr(*v.s);
  return toStr(v, depth);
}

bool equals(const Value &a, const Value &b, int depth) {
  if (depth > kMaxValueDepth)
    throw TemplateFail{RenderFailure::Unsupported,
                       "values nest too deeply to compare"};
  if (a.isNumber() && b.isNumber()) {
    if (a.isIntLike() && b.isIntLike())
      return a.asInt() == b.asInt();
    return a.asDouble() == b.asDouble();
  }
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case Kind::Undefined:
  case Kind::None:
    return true;
  case Kind::String:
    return *a.s == *b.s;
  case Kind::List:
    if (a.tuple != b.tuple || a.list->size() != b.list->size())
      return false;
    for (size_t k = 0; k < a.list->size(); ++k)
      if (!equals((*a.list)[k], (*b.list)[k], depth + 1))
        return false;
    return true;
  case Kind::Dict:
    if (a.dict->entries.size() != b.dict->entries.size())
      return false;
    for (const auto &[k, v] : a.dict->entries) {
      const Value *o = b.dict->find(k);
      if (!o || !equals(v, *o, depth + 1))
        return false;
    }
    return true;
  case Kind::Namespace:
    return a.dict == b.dict;
  case Kind::Callable:
    return a.name == b.name && a.self == b.self;
  default:
    return false;
  }
}

int compareValues(const Value &a, const Value &b, int line, const char *op,
                  int depth) {
  if (depth > kMaxValueDepth)
    unsupported(line, "values nest too deeply to compare");
  if (a.isNumber() && b.isNumber()) {
    if (a.isIntLike() && b.isIntLike())
      return a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
    double x = a.asDouble(), y = b.asDouble();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind == Kind::String && b.kind == Kind::String) {
    int c = a.s->compare(*b.s); // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.kind == Kind::List && b.kind == Kind::List && a.tuple == b.tuple) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k)
      if (!equals((*a.list)[k], (*b.list)[k], depth + 1))
        return compareValues((*a.list)[k], (*b.list)[k], line, op, depth + 1);
    return a.list->size() < b.list->size()   ? -1
           : a.list->size() > b.list->size() ? 1
                                             : 0;
  }
  unsupported(line, std::string("'") + op +
                        "' is not supported between instances of '" +
                        typeName(a) + "' and '" + typeName(b) + "'");
}

std::string undefinedMessage(const Value &v) {
  return v.name.empty() ? "a value is undefined" : v.name;
}

} // namespace etllm::rt::llm::jinja
