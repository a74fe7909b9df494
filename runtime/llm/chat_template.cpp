//===- chat_template.cpp - A Jinja subset for chat templates --------------===//
//
// Why a Jinja interpreter of our own: Debian packages no C++ Jinja library
// (minja and jinja2cpp are not in bookworm) and the runtime must not embed
// Python, yet every chat model ships its format as a Jinja template. The
// subset here is what the chat templates of the families etllm imports use;
// its behaviour is Jinja 3.1's as transformers configures it
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
// loop controls, its own `tojson`, `raise_exception` and `strftime_now`),
// checked byte for byte against python3-jinja2 by test/ChatTemplate.
//
// Structure: lex() turns the source into data and tag tokens (applying the
// whitespace rules), Parser builds Stmt/Expr trees, Evaluator walks them with
// Python value semantics (Value). Errors inside are thrown as TemplateFail
// and turned into Error values at the API boundary; nothing else throws out
// of this file.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/chat_template.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

namespace etllm::rt::llm {

namespace {

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

struct TemplateFail {
  RenderFailure kind;
  std::string message;
};

[[noreturn]] void unsupported(int line, const std::string &msg) {
  throw TemplateFail{RenderFailure::Unsupported,
                     "line " + std::to_string(line) + ": " + msg};
}

//===----------------------------------------------------------------------===//
// UTF-8 and Python string helpers
//===----------------------------------------------------------------------===//

/// Decodes the code point at `pos` (an invalid byte counts as one code point
/// of its own value, so arbitrary bytes never fail).
uint32_t decodeAt(const std::string &s, size_t pos, size_t *len) {
  unsigned char c = s[pos];
  size_t n = c < 0x80         ? 1
             : (c >> 5) == 6  ? 2
             : (c >> 4) == 14 ? 3
             : (c >> 3) == 30 ? 4
                              : 0;
  if (n == 0 || pos + n > s.size()) {
    *len = 1;
    return c;
  }
  uint32_t cp = n == 1   ? c
                : n == 2 ? (c & 0x1f)
                : n == 3 ? (c & 0x0f)
                         : (c & 7);
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = s[pos + k];
    if ((cc >> 6) != 2) {
      *len = 1;
      return c;
    }
    cp = (cp << 6) | (cc & 0x3f);
  }
  *len = n;
  return cp;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

/// Start offsets of the code points of `s`, then s.size().
std::vector<size_t> codepointOffsets(const std::string &s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offs.push_back(i);
    size_t n;
    decodeAt(s, i, &n);
    i += n;
  }
  offs.push_back(s.size());
  return offs;
}

/// Python's str.isspace for one code point.
bool isPySpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) ||
         cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/// Python str.strip/lstrip/rstrip; `chars` null = whitespace.
std::string pyStrip(const std::string &s, bool left, bool right,
                    const std::string *chars) {
  std::vector<size_t> offs = codepointOffsets(s);
  std::set<uint32_t> set;
  if (chars) {
    std::vector<size_t> co = codepointOffsets(*chars);
    for (size_t k = 0; k + 1 < co.size(); ++k) {
      size_t n;
      set.insert(decodeAt(*chars, co[k], &n));
    }
  }
  auto strip = [&](size_t k) {
    size_t n;
    uint32_t cp = decodeAt(s, offs[k], &n);
    return chars ? set.count(cp) > 0 : isPySpace(cp);
  };
  size_t count = offs.size() - 1, b = 0, e = count;
  if (left)
    while (b < e && strip(b))
      ++b;
  if (right)
    while (e > b && strip(e - 1))
      --e;
  return s.substr(offs[b], offs[e] - offs[b]);
}

bool allPySpace(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    size_t n;
    if (!isPySpace(decodeAt(s, i, &n)))
      return false;
    i += n;
  }
  return true;
}

std::string asciiLower(std::string s) {
  for (char &c : s)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return s;
}
std::string asciiUpper(std::string s) {
  for (char &c : s)
    if (c >= 'a' && c <= 'z')
      c = char(c - 'a' + 'A');
  return s;
}
bool isAsciiAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// Python float repr (shortest round-trip digits; scientific notation when
/// the exponent is < -4 or >= 16).
std::string pyFloatRepr(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  if (v == 0)
    return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  // buf = [-]d[.ddd]e[+-]XX
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg)
    s.erase(0, 1);
  size_t epos = s.find('e');
  int exp = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.')
      digits += s[i];
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += e;
  } else if (exp < 0) {
    out = "0." + std::string(size_t(-exp - 1), '0') + digits;
  } else if (size_t(exp) + 1 >= digits.size()) {
    out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, size_t(exp) + 1) + "." +
          digits.substr(size_t(exp) + 1);
  }
  return neg ? "-" + out : out;
}

/// Python's repr() of a str.
std::string pyStrRepr(const std::string &s) {
  bool hasSingle = s.find('\'') != std::string::npos;
  bool hasDouble = s.find('"') != std::string::npos;
  char q = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == (unsigned char)q)
      out += std::string("\\") + char(q);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else
      out += char(c);
  }
  out += q;
  return out;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

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

struct DictData;

struct Value {
  Kind kind = Kind::Undefined;
  bool b = false;
  bool tuple = false; // a List that Python would show as a tuple
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;
  std::shared_ptr<const std::vector<Value>> list;
  std::shared_ptr<DictData> dict; // Dict (never mutated) or Namespace
  // Callable: the builtin's name; Undefined: what was looked up.
  std::string name;
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
  static Value callable(std::string name, std::shared_ptr<const Value> self) {
    Value v;
    v.kind = Kind::Callable;
    v.name = std::move(name);
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

Value makeDict(std::vector<std::pair<std::string, Value>> entries,
               Kind kind = Kind::Dict) {
  Value v;
  v.kind = kind;
  v.dict = std::make_shared<DictData>();
  v.dict->entries = std::move(entries);
  return v;
}

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

constexpr int kMaxValueDepth = 64;

std::string toRepr(const Value &v, int depth);

/// Python's str().
std::string toStr(const Value &v, int depth = 0) {
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

bool equals(const Value &a, const Value &b, int depth = 0) {
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

/// -1, 0, 1 for a < b, a == b, a > b; throws on unorderable types.
int compareValues(const Value &a, const Value &b, int line, const char *op,
                  int depth = 0) {
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

//===----------------------------------------------------------------------===//
// JSON (tojson as transformers defines it: json.dumps)
//===----------------------------------------------------------------------===//

void jsonString(std::string &out, const std::string &s, bool ensureAscii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    size_t n;
    uint32_t cp = decodeAt(s, i, &n);
    switch (cp) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (cp < 0x20 || (ensureAscii && cp > 0x7e)) {
        auto u = [&](uint32_t x) {
          char b[16];
          std::snprintf(b, sizeof b, "\\u%04x", unsigned(x & 0xffff));
          out += b;
        };
        if (cp >= 0x10000) {
          uint32_t v = cp - 0x10000;
          u(0xd800 + (v >> 10));
          u(0xdc00 + (v & 0x3ff));
        } else {
          u(cp);
        }
      } else {
        out.append(s, i, n);
      }
    }
    i += n;
  }
  out += '"';
}

struct JsonStyle {
  bool indented = false;
  std::string indent; // per level
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false, ensureAscii = false;
};

void toJson(std::string &out, const Value &v, const JsonStyle &st, int level,
            int line, size_t limit) {
  if (level > kMaxValueDepth)
    unsupported(line, "tojson: the value nests too deeply");
  if (out.size() > limit)
    unsupported(line, "tojson: the output is larger than the limit");
  auto newline = [&](int l) {
    if (!st.indented)
      return;
    out += '\n';
    for (int k = 0; k < l; ++k)
      out += st.indent;
  };
  switch (v.kind) {
  case Kind::None:
    out += "null";
    return;
  case Kind::Bool:
    out += v.b ? "true" : "false";
    return;
  case Kind::Int:
    out += std::to_string(v.i);
    return;
  case Kind::Float:
    if (std::isnan(v.f))
      out += "NaN";
    else if (std::isinf(v.f))
      out += v.f > 0 ? "Infinity" : "-Infinity";
    else
      out += pyFloatRepr(v.f);
    return;
  case Kind::String:
    jsonString(out, *v.s, st.ensureAscii);
    return;
  case Kind::List: {
    if (v.list->empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t k = 0; k < v.list->size(); ++k) {
      if (k)
        out += st.itemSep;
      newline(level + 1);
      toJson(out, (*v.list)[k], st, level + 1, line, limit);
    }
    newline(level);
    out += ']';
    return;
  }
  case Kind::Dict: {
    if (v.dict->entries.empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value> *> entries;
    for (const auto &e : v.dict->entries)
      entries.push_back(&e);
    if (st.sortKeys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto *a, auto *b) { return a->first < b->first; });
    out += '{';
    for (size_t k = 0; k < entries.size(); ++k) {
      if (k)
        out += st.itemSep;
      newline(level + 1);
      jsonString(out, entries[k]->first, st.ensureAscii);
      out += st.keySep;
      toJson(out, entries[k]->second, st, level + 1, line, limit);
    }
    newline(level);
    out += '}';
    return;
  }
  default:
    unsupported(line, std::string("tojson: Object of type ") + typeName(v) +
                          " is not JSON serializable");
  }
}

Value fromJson(const nlohmann::ordered_json &j, int depth) {
  if (depth > kMaxValueDepth)
    throw TemplateFail{RenderFailure::Unsupported,
                       "the context JSON nests too deeply"};
  switch (j.type()) {
  case nlohmann::ordered_json::value_t::null:
    return Value::none();
  case nlohmann::ordered_json::value_t::boolean:
    return Value::boolean(j.get<bool>());
  case nlohmann::ordered_json::value_t::number_integer:
    return Value::integer(j.get<int64_t>());
  case nlohmann::ordered_json::value_t::number_unsigned: {
    uint64_t u = j.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      return Value::number(double(u));
    return Value::integer(int64_t(u));
  }
  case nlohmann::ordered_json::value_t::number_float:
    return Value::number(j.get<double>());
  case nlohmann::ordered_json::value_t::string:
    return Value::string(j.get<std::string>());
  case nlohmann::ordered_json::value_t::array: {
    std::vector<Value> items;
    for (const auto &e : j)
      items.push_back(fromJson(e, depth + 1));
    return Value::makeList(std::move(items));
  }
  case nlohmann::ordered_json::value_t::object: {
    std::vector<std::pair<std::string, Value>> entries;
    for (auto it = j.begin(); it != j.end(); ++it)
      entries.emplace_back(it.key(), fromJson(it.value(), depth + 1));
    return makeDict(std::move(entries));
  }
  default:
    throw TemplateFail{RenderFailure::Unsupported,
                       "the context JSON holds an unsupported value"};
  }
}

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

enum class Tok : uint8_t {
  Data,
  VarBegin,
  VarEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Int,
  Float,
  Op,
  Eof,
};

struct Token {
  Tok type;
  std::string text; // data, name, string value, operator
  int line = 1;
  int64_t ival = 0;
  double fval = 0;
};

[[noreturn]] void syntaxError(int line, const std::string &msg) {
  throw TemplateFail{RenderFailure::Unsupported,
                     "line " + std::to_string(line) + ": " + msg};
}

/// Python's "unicode-escape" decoding of a string literal's body, as Jinja's
/// lexer does it (unknown escapes are kept).
std::string unescapeLiteral(const std::string &raw, int line) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out += c;
      continue;
    }
    char e = raw[++i];
    auto hex = [&](size_t digits) -> uint32_t {
      uint32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= raw.size())
          syntaxError(line, "truncated escape in a string literal");
        char h = raw[i + k];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0)
          syntaxError(line, "bad escape in a string literal");
        v = v * 16 + uint32_t(d);
      }
      i += digits;
      return v;
    };
    switch (e) {
    case '\n':
      break; // line continuation
    case '\\':
      out += '\\';
      break;
    case '\'':
      out += '\'';
      break;
    case '"':
      out += '"';
      break;
    case 'a':
      out += '\a';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'v':
      out += '\v';
      break;
    case 'x':
      appendUtf8(out, hex(2));
      break;
    case 'u':
      appendUtf8(out, hex(4));
      break;
    case 'U': {
      uint32_t cp = hex(8);
      if (cp > 0x10ffff)
        syntaxError(line, "\\U escape out of range");
      appendUtf8(out, cp);
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t v = uint32_t(e - '0');
        for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' &&
                        raw[i + 1] <= '7';
             ++k)
          v = v * 8 + uint32_t(raw[++i] - '0');
        appendUtf8(out, v);
      } else {
        out += '\\';
        out += e;
      }
    }
  }
  return out;
}

class Lexer {
public:
  Lexer(std::string_view source, size_t maxTokens) : maxTokens_(maxTokens) {
    // Jinja: newlines normalized to \n, one trailing newline dropped
    // (keep_trailing_newline=False).
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n')
          ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n')
      src_.pop_back();
  }

  std::vector<Token> run() {
    size_t n = src_.size();
    while (pos_ <= n) {
      size_t tag = findTag(pos_);
      size_t end = tag == std::string::npos ? n : tag;
      std::string text = src_.substr(pos_, end - pos_);
      if (tag == std::string::npos) {
        emitData(std::move(text));
        break;
      }
      char kind = src_[tag + 1];
      size_t p = tag + 2;
      char sign = 0;
      if (p < n && (src_[p] == '-' || src_[p] == '+'))
        sign = src_[p++];
      if (sign == '-') {
        text = pyStrip(text, false, true, nullptr);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: whitespace from the line start to a block or
        // comment tag goes.
        size_t nl = text.rfind('\n');
        size_t lpos = nl == std::string::npos ? 0 : nl + 1;
        if ((lpos > 0 || lineStarting_) && lpos < text.size() &&
            allPySpace(text.substr(lpos)))
          text.resize(lpos);
      }
      emitData(std::move(text));
      line_ = lineAt(tag);
      if (kind == '#') {
        lexComment(p);
      } else if (kind == '%' && isRawBegin(p)) {
        lexRaw(p);
      } else {
        lexTag(kind == '{', p);
      }
    }
    push({Tok::Eof, "", lineAt(n)});
    return std::move(tokens_);
  }

private:
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t lineCursor_ = 0;
  int lineCount_ = 1;
  bool lineStarting_ = true;
  size_t maxTokens_;
  std::vector<Token> tokens_;

  int lineAt(size_t off) {
    // Lines are counted incrementally (offsets only grow).
    if (off < lineCursor_) {
      lineCursor_ = 0;
      lineCount_ = 1;
    }
    for (; lineCursor_ < off && lineCursor_ < src_.size(); ++lineCursor_)
      if (src_[lineCursor_] == '\n')
        ++lineCount_;
    return lineCount_;
  }

  void push(Token t) {
    if (tokens_.size() >= maxTokens_)
      syntaxError(t.line, "the template has too many tokens");
    tokens_.push_back(std::move(t));
  }

  void emitData(std::string text) {
    if (!text.empty())
      push({Tok::Data, std::move(text), line_});
  }

  size_t findTag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' &&
          (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return std::string::npos;
  }

  /// After a tag end: `-` strips all following whitespace, trim_blocks one
  /// newline (block and comment ends only).
  void afterTagEnd(size_t p, bool stripAll, bool trimNewline) {
    size_t q = p;
    if (stripAll) {
      while (q < src_.size()) {
        size_t n;
        if (!isPySpace(decodeAt(src_, q, &n)))
          break;
        q += n;
      }
    } else if (trimNewline && q < src_.size() && src_[q] == '\n') {
      ++q;
    }
    lineStarting_ = q > p ? src_[q - 1] == '\n' : false;
    pos_ = q;
  }

  void lexComment(size_t p) {
    size_t q = src_.find("#}", p);
    if (q == std::string::npos)
      syntaxError(line_, "unclosed comment (no '#}')");
    bool strip = q > p && src_[q - 1] == '-';
    bool keep = q > p && src_[q - 1] == '+';
    afterTagEnd(q + 2, strip, /*trimNewline=*/!keep);
  }

  bool isRawBegin(size_t p) const {
    size_t q = p;
    while (q < src_.size() &&
           (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n'))
      ++q;
    if (src_.compare(q, 3, "raw") != 0)
      return false;
    q += 3;
    while (q < src_.size() &&
           (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n'))
      ++q;
    return src_.compare(q, 2, "%}") == 0 || src_.compare(q, 3, "-%}") == 0;
  }

  void lexRaw(size_t p) {
    size_t q = src_.find("%}", p);
    bool strip = src_[q - 1] == '-';
    size_t bodyStart = q + 2;
    if (strip)
      while (bodyStart < src_.size() && isPySpace(uint8_t(src_[bodyStart])))
        ++bodyStart;
    else if (bodyStart < src_.size() && src_[bodyStart] == '\n')
      ++bodyStart;
    // Find {%[-+]? endraw [-]?%}.
    for (size_t i = bodyStart; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%')
        continue;
      size_t k = i + 2;
      char sign = 0;
      if (k < src_.size() && (src_[k] == '-' || src_[k] == '+'))
        sign = src_[k++];
      while (k < src_.size() &&
             (src_[k] == ' ' || src_[k] == '\t' || src_[k] == '\n'))
        ++k;
      if (src_.compare(k, 6, "endraw") != 0)
        continue;
      k += 6;
      while (k < src_.size() &&
             (src_[k] == ' ' || src_[k] == '\t' || src_[k] == '\n'))
        ++k;
      bool endStrip = false;
      if (k < src_.size() && src_[k] == '-') {
        endStrip = true;
        ++k;
      }
      if (src_.compare(k, 2, "%}") != 0)
        continue;
      std::string body = src_.substr(bodyStart, i - bodyStart);
      if (sign == '-')
        body = pyStrip(body, false, true, nullptr);
      emitData(std::move(body));
      afterTagEnd(k + 2, endStrip, true);
      return;
    }
    syntaxError(line_, "unclosed raw block (no endraw)");
  }

  void lexTag(bool variable, size_t p) {
    push({variable ? Tok::VarBegin : Tok::BlockBegin, "", line_});
    std::vector<char> balance;
    size_t n = src_.size();
    while (true) {
      while (p < n && isPySpace(uint8_t(src_[p])))
        ++p;
      if (p >= n)
        syntaxError(lineAt(p), variable ? "unclosed '{{' (no '}}')"
                                        : "unclosed '{%' (no '%}')");
      int line = lineAt(p);
      if (balance.empty()) {
        if (variable) {
          if (src_.compare(p, 3, "-}}") == 0) {
            push({Tok::VarEnd, "", line});
            afterTagEnd(p + 3, true, false);
            return;
          }
          if (src_.compare(p, 2, "}}") == 0) {
            push({Tok::VarEnd, "", line});
            afterTagEnd(p + 2, false, false);
            return;
          }
        } else {
          if (src_.compare(p, 3, "-%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 3, true, true);
            return;
          }
          if (src_.compare(p, 3, "+%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 3, false, false);
            return;
          }
          if (src_.compare(p, 2, "%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 2, false, true);
            return;
          }
        }
      }
      char c = src_[p];
      if (c == '\'' || c == '"') {
        size_t q = p + 1;
        while (q < n && src_[q] != c) {
          if (src_[q] == '\\')
            ++q;
          ++q;
        }
        if (q >= n)
          syntaxError(line, "unterminated string literal");
        push({Tok::String, unescapeLiteral(src_.substr(p + 1, q - p - 1), line),
              line});
        p = q + 1;
        continue;
      }
      if (c >= '0' && c <= '9') {
        size_t q = p;
        auto digits = [&] {
          size_t start = q;
          while (q < n && ((src_[q] >= '0' && src_[q] <= '9') ||
                           (src_[q] == '_' && q > start && q + 1 < n &&
                            src_[q + 1] >= '0' && src_[q + 1] <= '9')))
            ++q;
        };
        digits();
        bool isFloat = false;
        if (q + 1 < n && src_[q] == '.' && src_[q + 1] >= '0' &&
            src_[q + 1] <= '9') {
          isFloat = true;
          ++q;
          digits();
        }
        if (q < n && (src_[q] == 'e' || src_[q] == 'E')) {
          size_t save = q;
          ++q;
          if (q < n && (src_[q] == '+' || src_[q] == '-'))
            ++q;
          if (q < n && src_[q] >= '0' && src_[q] <= '9') {
            isFloat = true;
            digits();
          } else {
            q = save;
          }
        }
        std::string num;
        for (size_t k = p; k < q; ++k)
          if (src_[k] != '_')
            num += src_[k];
        Token t{isFloat ? Tok::Float : Tok::Int, num, line};
        if (isFloat) {
          t.fval = std::strtod(num.c_str(), nullptr);
        } else {
          errno = 0;
          char *end = nullptr;
          long long v = std::strtoll(num.c_str(), &end, 10);
          if (errno == ERANGE)
            syntaxError(line, "integer literal " + num + " is out of range");
          t.ival = v;
        }
        push(std::move(t));
        p = q;
        continue;
      }
      if (isAsciiAlpha(c) || c == '_') {
        size_t q = p;
        while (q < n && (isAsciiAlpha(src_[q]) || src_[q] == '_' ||
                         (src_[q] >= '0' && src_[q] <= '9')))
          ++q;
        push({Tok::Name, src_.substr(p, q - p), line});
        p = q;
        continue;
      }
      static const char *kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+",
                                   "-",  "*",  "/",  "%",  "~",  "<",  ">",
                                   "=",  "(",  ")",  "[",  "]",  "{",  "}",
                                   ",",  ".",  ":",  "|",  ";"};
      const char *op = nullptr;
      for (const char *o : kOps)
        if (src_.compare(p, std::strlen(o), o) == 0) {
          op = o;
          break;
        }
      if (!op)
        syntaxError(line,
                    std::string("unexpected character '") + c + "' in a tag");
      if (*op == '(' || *op == '[' || *op == '{') {
        balance.push_back(*op);
      } else if (*op == ')' || *op == ']' || *op == '}') {
        char open = *op == ')' ? '(' : *op == ']' ? '[' : '{';
        if (balance.empty() || balance.back() != open)
          syntaxError(line, std::string("unexpected '") + op + "'");
        balance.pop_back();
      }
      push({Tok::Op, op, line});
      p += std::strlen(op);
    }
  }
};

//===----------------------------------------------------------------------===//
// AST
//===----------------------------------------------------------------------===//

struct Expr;
using ExprP = std::unique_ptr<Expr>;

enum class EK : uint8_t {
  Literal,
  Name,
  Attr,
  Item,
  Slice,
  Call,
  Filter,
  Test,
  Neg,
  Pos,
  Not,
  Binary, // + - * / // % ** ~
  Compare,
  And,
  Or,
  Cond,
  ListLit,
  TupleLit,
  DictLit,
};

struct Expr {
  EK kind;
  int line = 0;
  Value literal;
  std::string name; // Name, Attr, Filter, Test, Binary operator
  ExprP a, b, c, d; // operands (Slice: a[b:c:d]; Cond: b if a else c)
  std::vector<ExprP> args;
  std::vector<std::pair<std::string, ExprP>> kwargs;
  std::vector<std::pair<std::string, ExprP>> compares;
  bool negated = false;
};

struct Target {
  std::vector<std::string> names;
  bool tuple = false;
  std::string attr; // `set ns.attr = ...`: names[0] is the namespace
};

struct Stmt;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

enum class SK : uint8_t {
  Output,
  Print,
  If,
  For,
  Set,
  SetBlock,
  Break,
  Continue,
  Generation,
};

struct Stmt {
  SK kind;
  int line = 0;
  std::string text;
  ExprP expr;    // Print; Set value; For iterable
  ExprP filter;  // For `if`; SetBlock filter (a Filter node with null a)
  Target target; // For / Set / SetBlock
  std::vector<std::pair<ExprP, Body>> branches; // If
  Body body, elseBody;
};

// Names the parser accepts; an unknown filter or test is a parse error.
const std::set<std::string> &knownFilters() {
  static const std::set<std::string> s = {
      "abs",      "attr",    "capitalize", "count", "d",      "default",
      "dictsort", "e",       "escape",     "first", "float",  "indent",
      "int",      "items",   "join",       "last",  "length", "list",
      "lower",    "map",     "max",        "min",   "reject", "rejectattr",
      "replace",  "reverse", "round",      "safe",  "select", "selectattr",
      "sort",     "string",  "sum",        "title", "tojson", "trim",
      "unique",   "upper",   "wordcount"};
  return s;
}
const std::set<std::string> &knownTests() {
  static const std::set<std::string> s = {
      "boolean",     "callable", "defined",  "divisibleby", "eq",   "equalto",
      "escaped",     "even",     "false",    "float",       "ge",   "gt",
      "greaterthan", "in",       "integer",  "iterable",    "le",   "lessthan",
      "lower",       "lt",       "mapping",  "ne",          "none", "number",
      "odd",         "sameas",   "sequence", "string",      "true", "undefined",
      "upper",       "==",       "!=",       "<",           "<=",   ">",
      ">="};
  return s;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class Parser {
public:
  Parser(std::vector<Token> tokens, int maxDepth)
      : toks_(std::move(tokens)), maxDepth_(maxDepth) {}

  Body parseTemplate() {
    std::string end;
    Body body = parseBody({}, &end);
    if (cur().type != Tok::Eof)
      syntaxError(cur().line, "unexpected tag");
    return body;
  }

private:
  std::vector<Token> toks_;
  size_t p_ = 0;
  int depth_ = 0;
  int maxDepth_;

  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &parser) : p(parser) {
      if (++p.depth_ > p.maxDepth_)
        syntaxError(p.cur().line, "the template nests too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token &cur() const { return toks_[p_]; }
  const Token &peek(size_t k = 1) const {
    return toks_[std::min(p_ + k, toks_.size() - 1)];
  }
  Token next() {
    Token t = toks_[p_];
    if (p_ + 1 < toks_.size())
      ++p_;
    return t;
  }
  bool isOp(const char *op) const {
    return cur().type == Tok::Op && cur().text == op;
  }
  bool isName(const char *n) const {
    return cur().type == Tok::Name && cur().text == n;
  }
  bool skipOp(const char *op) {
    if (!isOp(op))
      return false;
    next();
    return true;
  }
  bool skipName(const char *n) {
    if (!isName(n))
      return false;
    next();
    return true;
  }
  void expectOp(const char *op) {
    if (!skipOp(op))
      syntaxError(cur().line, std::string("expected '") + op + "'" + found());
  }
  std::string expectName() {
    if (cur().type != Tok::Name)
      syntaxError(cur().line, "expected a name" + found());
    return next().text;
  }
  void expectBlockEnd() {
    if (cur().type != Tok::BlockEnd)
      syntaxError(cur().line, "expected the end of the tag ('%}')" + found());
    next();
  }
  std::string found() const {
    switch (cur().type) {
    case Tok::Eof:
      return ", found the end of the template";
    case Tok::BlockEnd:
      return ", found '%}'";
    case Tok::VarEnd:
      return ", found '}}'";
    case Tok::Data:
      return ", found text";
    default:
      return ", found '" + cur().text + "'";
    }
  }

  ExprP make(EK kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // Statements ------------------------------------------------------------

  /// Parses statements until a block tag whose keyword is in `ends` (left
  /// unconsumed after the BlockBegin: *endName is the keyword, consumed).
  Body parseBody(const std::set<std::string> &ends, std::string *endName) {
    DepthGuard g(*this);
    Body body;
    while (true) {
      const Token &t = cur();
      if (t.type == Tok::Eof) {
        if (!ends.empty()) {
          std::string list;
          for (const auto &e : ends)
            list += (list.empty() ? "" : " or ") + std::string("'") + e + "'";
          syntaxError(t.line, "unexpected end of template, expected " + list);
        }
        return body;
      }
      if (t.type == Tok::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = SK::Output;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
        continue;
      }
      if (t.type == Tok::VarBegin) {
        int line = t.line;
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = SK::Print;
        s->line = line;
        s->expr = parseTuple(true);
        if (cur().type != Tok::VarEnd)
          syntaxError(cur().line, "expected '}}'" + found());
        next();
        body.push_back(std::move(s));
        continue;
      }
      if (t.type != Tok::BlockBegin)
        syntaxError(t.line, "unexpected token" + found());
      int line = t.line;
      next();
      if (cur().type != Tok::Name)
        syntaxError(cur().line, "expected a tag name" + found());
      std::string kw = cur().text;
      if (ends.count(kw)) {
        next();
        *endName = kw;
        return body;
      }
      next();
      body.push_back(parseStatement(kw, line));
    }
  }

  StmtP parseStatement(const std::string &kw, int line) {
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (kw == "if") {
      s->kind = SK::If;
      while (true) {
        ExprP cond = parseTuple(false);
        expectBlockEnd();
        std::string end;
        Body body = parseBody({"elif", "else", "endif"}, &end);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "elif")
          continue;
        if (end == "else") {
          expectBlockEnd();
          s->elseBody = parseBody({"endif"}, &end);
        }
        expectBlockEnd();
        return s;
      }
    }
    if (kw == "for") {
      s->kind = SK::For;
      s->target = parseAssignTarget(false);
      if (!skipName("in"))
        syntaxError(cur().line, "expected 'in'" + found());
      s->expr = parseTuple(false);
      if (skipName("if"))
        s->filter = parseExpression(true);
      if (isName("recursive"))
        syntaxError(cur().line, "recursive loops are not supported");
      expectBlockEnd();
      std::string end;
      s->body = parseBody({"endfor", "else"}, &end);
      if (end == "else") {
        expectBlockEnd();
        s->elseBody = parseBody({"endfor"}, &end);
      }
      expectBlockEnd();
      return s;
    }
    if (kw == "set") {
      s->target = parseAssignTarget(true);
      if (skipOp("=")) {
        s->kind = SK::Set;
        s->expr = parseTuple(true);
        expectBlockEnd();
        return s;
      }
      if (!s->target.attr.empty() || s->target.tuple)
        syntaxError(line, "a set block assigns one plain name");
      s->kind = SK::SetBlock;
      if (isOp("|")) {
        s->filter = parseFilterChain(nullptr);
      }
      expectBlockEnd();
      std::string end;
      s->body = parseBody({"endset"}, &end);
      expectBlockEnd();
      return s;
    }
    if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? SK::Break : SK::Continue;
      expectBlockEnd();
      return s;
    }
    if (kw == "generation") {
      // transformers' AssistantTracker marks assistant text; it renders
      // its body unchanged.
      s->kind = SK::Generation;
      expectBlockEnd();
      std::string end;
      s->body = parseBody({"endgeneration"}, &end);
      expectBlockEnd();
      return s;
    }
    if (kw == "elif" || kw == "else" || kw == "endif" || kw == "endfor" ||
        kw == "endset" || kw == "endgeneration")
      syntaxError(line, "unexpected '" + kw + "'");
    syntaxError(line, "the '" + kw +
                          "' tag is not supported by etllm's chat template "
                          "interpreter");
  }

  Target parseAssignTarget(bool withNamespace) {
    Target t;
    std::string first = expectName();
    if (withNamespace && isOp(".")) {
      next();
      t.names.push_back(first);
      t.attr = expectName();
      return t;
    }
    t.names.push_back(first);
    while (skipOp(",")) {
      t.tuple = true;
      if (cur().type != Tok::Name)
        break;
      t.names.push_back(expectName());
    }
    for (const std::string &n : t.names)
      if (n == "true" || n == "false" || n == "none" || n == "True" ||
          n == "False" || n == "None")
        syntaxError(cur().line, "cannot assign to '" + n + "'");
    return t;
  }

  // Expressions -----------------------------------------------------------

  /// A tuple (a, b) without parentheses, or one expression.
  ExprP parseTuple(bool withCondExpr) {
    DepthGuard g(*this);
    int line = cur().line;
    ExprP first = parseExpression(withCondExpr);
    if (!isOp(","))
      return first;
    auto t = make(EK::TupleLit, line);
    t->args.push_back(std::move(first));
    while (skipOp(",")) {
      if (atTupleEnd())
        break;
      t->args.push_back(parseExpression(withCondExpr));
    }
    return t;
  }

  bool atTupleEnd() const {
    return cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd ||
           cur().type == Tok::Eof || isOp(")") || isName("if") ||
           isName("in") || isName("recursive");
  }

  ExprP parseExpression(bool withCondExpr) {
    DepthGuard g(*this);
    return withCondExpr ? parseCondExpr() : parseOr();
  }

  ExprP parseCondExpr() {
    ExprP e = parseOr();
    while (isName("if")) {
      int line = next().line;
      auto c = make(EK::Cond, line);
      c->a = parseOr(); // the condition
      c->b = std::move(e);
      if (skipName("else"))
        c->c = parseCondExpr();
      e = std::move(c);
    }
    return e;
  }

  ExprP parseOr() {
    ExprP left = parseAnd();
    while (isName("or")) {
      int line = next().line;
      auto o = make(EK::Or, line);
      o->a = std::move(left);
      o->b = parseAnd();
      left = std::move(o);
    }
    return left;
  }

  ExprP parseAnd() {
    ExprP left = parseNot();
    while (isName("and")) {
      int line = next().line;
      auto o = make(EK::And, line);
      o->a = std::move(left);
      o->b = parseNot();
      left = std::move(o);
    }
    return left;
  }

  ExprP parseNot() {
    DepthGuard g(*this);
    if (isName("not")) {
      int line = next().line;
      auto n = make(EK::Not, line);
      n->a = parseNot();
      return n;
    }
    return parseCompare();
  }

  ExprP parseCompare() {
    int line = cur().line;
    ExprP left = parseMath1();
    std::vector<std::pair<std::string, ExprP>> ops;
    while (true) {
      if (cur().type == Tok::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
           cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        std::string op = next().text;
        ops.emplace_back(op, parseMath1());
      } else if (isName("in")) {
        next();
        ops.emplace_back("in", parseMath1());
      } else if (isName("not") && peek().type == Tok::Name &&
                 peek().text == "in") {
        next();
        next();
        ops.emplace_back("notin", parseMath1());
      } else {
        break;
      }
    }
    if (ops.empty())
      return left;
    auto c = make(EK::Compare, line);
    c->a = std::move(left);
    c->compares = std::move(ops);
    return c;
  }

  ExprP binary(const std::string &op, ExprP l, ExprP r, int line) {
    auto b = make(EK::Binary, line);
    b->name = op;
    b->a = std::move(l);
    b->b = std::move(r);
    return b;
  }

  ExprP parseMath1() {
    ExprP left = parseConcat();
    while (isOp("+") || isOp("-")) {
      Token t = next();
      left = binary(t.text, std::move(left), parseConcat(), t.line);
    }
    return left;
  }

  ExprP parseConcat() {
    ExprP left = parseMath2();
    while (isOp("~")) {
      Token t = next();
      left = binary("~", std::move(left), parseMath2(), t.line);
    }
    return left;
  }

  ExprP parseMath2() {
    ExprP left = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      Token t = next();
      left = binary(t.text, std::move(left), parsePow(), t.line);
    }
    return left;
  }

  ExprP parsePow() {
    ExprP left = parseUnary(true);
    while (isOp("**")) {
      Token t = next();
      left = binary("**", std::move(left), parseUnary(true), t.line);
    }
    return left;
  }

  ExprP parseUnary(bool withFilter) {
    DepthGuard g(*this);
    ExprP node;
    if (isOp("-") || isOp("+")) {
      Token t = next();
      node = make(t.text == "-" ? EK::Neg : EK::Pos, t.line);
      node->a = parseUnary(false);
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(std::move(node));
    if (withFilter)
      node = parseFilterExpr(std::move(node));
    return node;
  }

  ExprP parsePrimary() {
    const Token &t = cur();
    int line = t.line;
    if (t.type == Tok::Name) {
      std::string n = next().text;
      auto e = make(EK::Literal, line);
      if (n == "true" || n == "True")
        e->literal = Value::boolean(true);
      else if (n == "false" || n == "False")
        e->literal = Value::boolean(false);
      else if (n == "none" || n == "None")
        e->literal = Value::none();
      else {
        e->kind = EK::Name;
        e->name = n;
      }
      return e;
    }
    if (t.type == Tok::String) {
      std::string s = next().text;
      while (cur().type == Tok::String)
        s += next().text; // adjacent literals concatenate
      auto e = make(EK::Literal, line);
      e->literal = Value::string(std::move(s));
      return e;
    }
    if (t.type == Tok::Int || t.type == Tok::Float) {
      Token n = next();
      auto e = make(EK::Literal, line);
      e->literal =
          n.type == Tok::Int ? Value::integer(n.ival) : Value::number(n.fval);
      return e;
    }
    if (isOp("(")) {
      next();
      if (skipOp(")")) {
        auto e = make(EK::TupleLit, line);
        return e;
      }
      ExprP first = parseExpression(true);
      if (skipOp(")"))
        return first;
      auto tup = make(EK::TupleLit, line);
      tup->args.push_back(std::move(first));
      while (skipOp(",")) {
        if (isOp(")"))
          break;
        tup->args.push_back(parseExpression(true));
      }
      expectOp(")");
      return tup;
    }
    if (isOp("[")) {
      next();
      auto l = make(EK::ListLit, line);
      while (!isOp("]")) {
        if (!l->args.empty())
          expectOp(",");
        if (isOp("]"))
          break;
        l->args.push_back(parseExpression(true));
      }
      expectOp("]");
      return l;
    }
    if (isOp("{")) {
      next();
      auto d = make(EK::DictLit, line);
      while (!isOp("}")) {
        if (!d->args.empty())
          expectOp(",");
        if (isOp("}"))
          break;
        d->args.push_back(parseExpression(true));
        expectOp(":");
        d->args.push_back(parseExpression(true));
      }
      expectOp("}");
      return d;
    }
    syntaxError(line, "expected an expression" + found());
  }

  ExprP parsePostfix(ExprP node) {
    while (true) {
      if (isOp(".")) {
        int line = next().line;
        if (cur().type == Tok::Int) {
          auto it = make(EK::Item, line);
          auto k = make(EK::Literal, line);
          k->literal = Value::integer(next().ival);
          it->a = std::move(node);
          it->b = std::move(k);
          node = std::move(it);
          continue;
        }
        auto at = make(EK::Attr, line);
        at->name = expectName();
        at->a = std::move(node);
        node = std::move(at);
      } else if (isOp("[")) {
        node = parseSubscript(std::move(node));
      } else if (isOp("(")) {
        node = parseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprP parseSubscript(ExprP node) {
    int line = next().line; // '['
    ExprP start, stop, step;
    bool slice = false;
    if (!isOp(":"))
      start = parseExpression(true);
    if (skipOp(":")) {
      slice = true;
      if (!isOp("]") && !isOp(":"))
        stop = parseExpression(true);
      if (skipOp(":"))
        if (!isOp("]"))
          step = parseExpression(true);
    }
    expectOp("]");
    if (!slice) {
      auto it = make(EK::Item, line);
      it->a = std::move(node);
      it->b = std::move(start);
      return it;
    }
    auto sl = make(EK::Slice, line);
    sl->a = std::move(node);
    sl->b = std::move(start);
    sl->c = std::move(stop);
    sl->d = std::move(step);
    return sl;
  }

  void parseCallArgs(Expr &call) {
    expectOp("(");
    while (!isOp(")")) {
      if (!call.args.empty() || !call.kwargs.empty())
        expectOp(",");
      if (isOp(")"))
        break;
      if (isOp("*") || isOp("**"))
        syntaxError(cur().line, "*args / **kwargs calls are not supported");
      if (cur().type == Tok::Name && peek().type == Tok::Op &&
          peek().text == "=") {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(key, parseExpression(true));
      } else {
        if (!call.kwargs.empty())
          syntaxError(cur().line,
                      "a positional argument follows a keyword argument");
        call.args.push_back(parseExpression(true));
      }
    }
    expectOp(")");
  }

  ExprP parseCall(ExprP callee) {
    auto c = make(EK::Call, cur().line);
    c->a = std::move(callee);
    parseCallArgs(*c);
    return c;
  }

  ExprP parseFilterExpr(ExprP node) {
    while (true) {
      if (isOp("|"))
        node = parseFilterChain(std::move(node));
      else if (isName("is"))
        node = parseTest(std::move(node));
      else if (isOp("("))
        node = parseCall(std::move(node));
      else
        return node;
    }
  }

  /// One or more `| name(args)` filters applied to `node` (null for a set
  /// block's filter).
  ExprP parseFilterChain(ExprP node) {
    while (isOp("|")) {
      int line = next().line;
      std::string name = expectName();
      if (!knownFilters().count(name))
        syntaxError(line, "unknown filter '" + name + "'");
      auto f = make(EK::Filter, line);
      f->name = name;
      f->a = std::move(node);
      if (isOp("("))
        parseCallArgs(*f);
      node = std::move(f);
    }
    return node;
  }

  ExprP parseTest(ExprP node) {
    int line = next().line; // 'is'
    auto t = make(EK::Test, line);
    t->negated = skipName("not");
    std::string name;
    if (cur().type == Tok::Name)
      name = next().text;
    else if (cur().type == Tok::Op &&
             (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
              cur().text == "<=" || cur().text == ">" || cur().text == ">="))
      name = next().text;
    else
      syntaxError(cur().line, "expected a test name" + found());
    if (!knownTests().count(name))
      syntaxError(line, "unknown test '" + name + "'");
    t->name = name;
    t->a = std::move(node);
    if (isOp("(")) {
      parseCallArgs(*t);
    } else if ((cur().type == Tok::Name || cur().type == Tok::String ||
                cur().type == Tok::Int || cur().type == Tok::Float ||
                isOp("(") || isOp("[") || isOp("{")) &&
               !isName("else") && !isName("or") && !isName("and")) {
      if (isName("is"))
        syntaxError(cur().line, "tests cannot be chained with 'is'");
      ExprP arg = parsePostfix(parsePrimary());
      t->args.push_back(std::move(arg));
    }
    return t;
  }
};

} // namespace

struct ChatTemplate::Program {
  std::string source, name;
  TemplateLimits limits;
  Body body;
};

namespace {

//===----------------------------------------------------------------------===//
// Evaluator
//===----------------------------------------------------------------------===//

enum class Flow { Normal, Break, Continue };

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

class Evaluator {
public:
  Evaluator(const ChatTemplate::Program &prog, Value globals) : prog_(prog) {
    frames_.emplace_back();
    for (auto &[k, v] : globals.dict->entries)
      frames_.back()[k] = v;
  }

  /// Namespaces are the one container a template can change after making
  /// it (`{% set ns.attr = value %}`), so the one way to a reference cycle
  /// (`{% set ns.me = ns %}`, or through a list or another namespace
  /// holding ns): shared_ptr never frees one. Emptying every namespace still
  /// alive when the render ends breaks them all; nothing of the render's values
  /// outlives it (it returns text).
  ~Evaluator() {
    for (const std::weak_ptr<DictData> &w : namespaces_)
      if (std::shared_ptr<DictData> d = w.lock())
        std::vector<std::pair<std::string, Value>>().swap(d->entries);
  }

  std::string run() {
    exec(prog_.body, 0);
    return std::move(out_);
  }

private:
  const ChatTemplate::Program &prog_;
  std::vector<std::weak_ptr<DictData>> namespaces_;
  std::vector<std::unordered_map<std::string, Value>> frames_;
  std::string out_;
  uint64_t steps_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    Evaluator &e;
    DepthGuard(Evaluator &ev, int line) : e(ev) {
      if (++e.depth_ > e.prog_.limits.maxDepth * 2)
        unsupported(line, "the template recurses too deeply");
    }
    ~DepthGuard() { --e.depth_; }
  };

  void step(int line) {
    if (++steps_ > prog_.limits.maxSteps)
      unsupported(line, "the template exceeded its evaluation budget (" +
                            std::to_string(prog_.limits.maxSteps) + " steps)");
  }

  void checkSize(size_t bytes, int line) const {
    if (bytes > prog_.limits.maxOutputBytes)
      unsupported(line, "the template's output is larger than the limit (" +
                            std::to_string(prog_.limits.maxOutputBytes) +
                            " bytes)");
  }

  void emit(const std::string &s, int line) {
    checkSize(out_.size() + s.size(), line);
    out_ += s;
  }

  // Variables -------------------------------------------------------------

  Value lookup(const std::string &name) const {
    for (size_t k = frames_.size(); k-- > 0;) {
      auto it = frames_[k].find(name);
      if (it != frames_[k].end())
        return it->second;
    }
    static const std::set<std::string> globals = {
        "range", "namespace", "dict", "raise_exception", "strftime_now"};
    if (globals.count(name))
      return Value::callable(name, nullptr);
    return Value::undefined("'" + name + "' is undefined");
  }

  void assign(const Target &t, const Value &v, int line) {
    if (!t.attr.empty()) {
      Value ns = lookup(t.names[0]);
      if (ns.kind != Kind::Namespace)
        unsupported(line, "cannot assign attribute '" + t.attr + "' of '" +
                              t.names[0] + "': it is not a namespace");
      ns.dict->set(t.attr, v);
      return;
    }
    if (!t.tuple) {
      frames_.back()[t.names[0]] = v;
      return;
    }
    std::vector<Value> items = iterate(v, line);
    if (items.size() != t.names.size())
      unsupported(line, "cannot unpack " + std::to_string(items.size()) +
                            " values into " + std::to_string(t.names.size()) +
                            " names");
    for (size_t k = 0; k < items.size(); ++k)
      frames_.back()[t.names[k]] = items[k];
  }

  // Statements ------------------------------------------------------------

  Flow exec(const Body &body, int line) {
    DepthGuard g(*this, line);
    for (const StmtP &s : body) {
      step(s->line);
      switch (s->kind) {
      case SK::Output:
        emit(s->text, s->line);
        break;
      case SK::Print:
        emit(toStr(eval(*s->expr)), s->line);
        break;
      case SK::If: {
        bool taken = false;
        for (const auto &[cond, branch] : s->branches)
          if (truthy(eval(*cond))) {
            taken = true;
            if (Flow f = exec(branch, s->line); f != Flow::Normal)
              return f;
            break;
          }
        if (!taken)
          if (Flow f = exec(s->elseBody, s->line); f != Flow::Normal)
            return f;
        break;
      }
      case SK::For:
        execFor(*s);
        break;
      case SK::Set:
        assign(s->target, eval(*s->expr), s->line);
        break;
      case SK::SetBlock: {
        std::string saved;
        saved.swap(out_);
        Flow f = exec(s->body, s->line);
        std::string captured;
        captured.swap(out_);
        out_.swap(saved);
        if (f != Flow::Normal)
          unsupported(s->line, "break/continue inside a set block");
        Value v = Value::string(std::move(captured));
        if (s->filter)
          v = applyFilterChain(*s->filter, v);
        assign(s->target, v, s->line);
        break;
      }
      case SK::Break:
        return Flow::Break;
      case SK::Continue:
        return Flow::Continue;
      case SK::Generation:
        if (Flow f = exec(s->body, s->line); f != Flow::Normal)
          return f;
        break;
      }
    }
    return Flow::Normal;
  }

  void execFor(const Stmt &s) {
    Value seq = eval(*s.expr);
    std::vector<Value> all = iterate(seq, s.line);
    std::vector<Value> items;
    if (s.filter) {
      // The loop filter sees the loop target (not `loop`).
      for (const Value &v : all) {
        step(s.line);
        frames_.emplace_back();
        assign(s.target, v, s.line);
        bool keep = truthy(eval(*s.filter));
        frames_.pop_back();
        if (keep)
          items.push_back(v);
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      exec(s.elseBody, s.line);
      return;
    }
    int64_t n = int64_t(items.size());
    for (int64_t k = 0; k < n; ++k) {
      step(s.line);
      frames_.emplace_back();
      std::vector<std::pair<std::string, Value>> loop = {
          {"index", Value::integer(k + 1)},
          {"index0", Value::integer(k)},
          {"revindex", Value::integer(n - k)},
          {"revindex0", Value::integer(n - k - 1)},
          {"first", Value::boolean(k == 0)},
          {"last", Value::boolean(k == n - 1)},
          {"length", Value::integer(n)},
          {"depth", Value::integer(1)},
          {"depth0", Value::integer(0)},
          {"previtem", k > 0 ? items[size_t(k - 1)]
                             : Value::undefined("there is no previous item")},
          {"nextitem", k + 1 < n ? items[size_t(k + 1)]
                                 : Value::undefined("there is no next item")},
      };
      loop.emplace_back(
          "cycle", Value::callable("loop.cycle", std::make_shared<const Value>(
                                                     Value::integer(k))));
      frames_.back()["loop"] = makeDict(std::move(loop));
      assign(s.target, items[size_t(k)], s.line);
      Flow f = exec(s.body, s.line);
      frames_.pop_back();
      if (f == Flow::Break)
        break;
    }
  }

  /// The items a for loop (or list()) sees.
  std::vector<Value> iterate(const Value &v, int line) {
    switch (v.kind) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      return *v.list;
    case Kind::Dict: {
      std::vector<Value> keys;
      for (const auto &e : v.dict->entries)
        keys.push_back(Value::string(e.first));
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      std::vector<size_t> offs = codepointOffsets(*v.s);
      for (size_t k = 0; k + 1 < offs.size(); ++k)
        chars.push_back(
            Value::string(v.s->substr(offs[k], offs[k + 1] - offs[k])));
      return chars;
    }
    default:
      unsupported(line,
                  std::string("'") + typeName(v) + "' object is not iterable");
    }
  }

  // Expressions -----------------------------------------------------------

  Value eval(const Expr &e) {
    DepthGuard g(*this, e.line);
    step(e.line);
    switch (e.kind) {
    case EK::Literal:
      return e.literal;
    case EK::Name:
      return lookup(e.name);
    case EK::Attr:
      return getAttr(eval(*e.a), e.name, e.line);
    case EK::Item:
      return getItem(eval(*e.a), eval(*e.b), e.line);
    case EK::Slice:
      return slice(eval(*e.a), e.b ? eval(*e.b) : Value::none(),
                   e.c ? eval(*e.c) : Value::none(),
                   e.d ? eval(*e.d) : Value::none(), e.line);
    case EK::Call: {
      Value callee = eval(*e.a);
      Args args;
      Kwargs kwargs;
      evalArgs(e, args, kwargs);
      return call(callee, args, kwargs, e.line);
    }
    case EK::Filter:
      return applyFilterChain(e, Value());
    case EK::Test: {
      Value v = eval(*e.a);
      Args args;
      Kwargs kwargs;
      evalArgs(e, args, kwargs);
      bool r = test(e.name, v, args, e.line);
      return Value::boolean(e.negated ? !r : r);
    }
    case EK::Neg:
    case EK::Pos: {
      Value v = eval(*e.a);
      if (v.kind == Kind::Undefined)
        unsupported(e.line, undefinedMessage(v));
      if (!v.isNumber())
        unsupported(e.line, std::string("bad operand type for unary ") +
                                (e.kind == EK::Neg ? "-" : "+") + ": '" +
                                typeName(v) + "'");
      if (e.kind == EK::Pos)
        return v.kind == Kind::Bool ? Value::integer(v.asInt()) : v;
      if (v.kind == Kind::Float)
        return Value::number(-v.f);
      if (v.asInt() == std::numeric_limits<int64_t>::min())
        unsupported(e.line, "integer overflow");
      return Value::integer(-v.asInt());
    }
    case EK::Not:
      return Value::boolean(!truthy(eval(*e.a)));
    case EK::And: {
      Value l = eval(*e.a);
      return truthy(l) ? eval(*e.b) : l;
    }
    case EK::Or: {
      Value l = eval(*e.a);
      return truthy(l) ? l : eval(*e.b);
    }
    case EK::Cond:
      if (truthy(eval(*e.a)))
        return eval(*e.b);
      return e.c ? eval(*e.c)
                 : Value::undefined("the conditional expression has no else");
    case EK::Binary:
      return binaryOp(e.name, eval(*e.a), eval(*e.b), e.line);
    case EK::Compare: {
      Value left = eval(*e.a);
      for (const auto &[op, rhsExpr] : e.compares) {
        Value right = eval(*rhsExpr);
        if (!compareOp(op, left, right, e.line))
          return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case EK::ListLit:
    case EK::TupleLit: {
      std::vector<Value> items;
      for (const ExprP &x : e.args)
        items.push_back(eval(*x));
      return Value::makeList(std::move(items), e.kind == EK::TupleLit);
    }
    case EK::DictLit: {
      Value d = makeDict({});
      for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
        Value key = eval(*e.args[k]);
        if (key.kind != Kind::String)
          unsupported(e.line, "dict literals take string keys");
        d.dict->set(*key.s, eval(*e.args[k + 1]));
      }
      return d;
    }
    }
    unsupported(e.line, "internal error: unknown expression");
  }

  void evalArgs(const Expr &e, Args &args, Kwargs &kwargs) {
    for (const ExprP &a : e.args)
      args.push_back(eval(*a));
    for (const auto &[k, v] : e.kwargs)
      kwargs.emplace_back(k, eval(*v));
  }

  static std::string undefinedMessage(const Value &v) {
    return v.name.empty() ? "a value is undefined" : v.name;
  }

  Value getAttr(const Value &obj, const std::string &name, int line) {
    switch (obj.kind) {
    case Kind::Undefined:
      unsupported(line, undefinedMessage(obj));
    case Kind::Dict: {
      static const std::set<std::string> methods = {"items", "keys", "values",
                                                    "get"};
      if (methods.count(name))
        return Value::callable("dict." + name,
                               std::make_shared<const Value>(obj));
      if (const Value *v = obj.dict->find(name))
        return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    case Kind::Namespace:
      if (const Value *v = obj.dict->find(name))
        return *v;
      return Value::undefined("the namespace has no attribute '" + name + "'");
    case Kind::String: {
      static const std::set<std::string> methods = {
          "strip",       "lstrip",     "rstrip",     "split",
          "rsplit",      "startswith", "endswith",   "upper",
          "lower",       "title",      "capitalize", "replace",
          "find",        "rfind",      "count",      "join",
          "splitlines",  "isdigit",    "isalpha",    "isspace",
          "isalnum",     "isupper",    "islower",    "removeprefix",
          "removesuffix"};
      if (methods.count(name))
        return Value::callable("str." + name,
                               std::make_shared<const Value>(obj));
      return Value::undefined("'str object' has no attribute '" + name + "'");
    }
    case Kind::List:
      if (name == "index" || name == "count")
        return Value::callable("list." + name,
                               std::make_shared<const Value>(obj));
      return Value::undefined("'list object' has no attribute '" + name + "'");
    default:
      return Value::undefined(std::string("'") + typeName(obj) +
                              " object' has no attribute '" + name + "'");
    }
  }

  static bool indexOf(int64_t idx, size_t size, size_t *out) {
    int64_t n = int64_t(size);
    if (idx < 0)
      idx += n;
    if (idx < 0 || idx >= n)
      return false;
    *out = size_t(idx);
    return true;
  }

  Value getItem(const Value &obj, const Value &key, int line) {
    switch (obj.kind) {
    case Kind::Undefined:
      unsupported(line, undefinedMessage(obj));
    case Kind::Dict:
    case Kind::Namespace:
      if (key.kind == Kind::String) {
        if (const Value *v = obj.dict->find(*key.s))
          return *v;
        return getAttr(obj, *key.s, line);
      }
      return Value::undefined("the dict has no such key");
    case Kind::List: {
      size_t at;
      if (key.isIntLike()) {
        if (indexOf(key.asInt(), obj.list->size(), &at))
          return (*obj.list)[at];
        return Value::undefined("list index out of range");
      }
      if (key.kind == Kind::String)
        return getAttr(obj, *key.s, line);
      return Value::undefined("list indices must be integers");
    }
    case Kind::String: {
      if (key.isIntLike()) {
        std::vector<size_t> offs = codepointOffsets(*obj.s);
        size_t at;
        if (indexOf(key.asInt(), offs.size() - 1, &at))
          return Value::string(
              obj.s->substr(offs[at], offs[at + 1] - offs[at]));
        return Value::undefined("string index out of range");
      }
      if (key.kind == Kind::String)
        return getAttr(obj, *key.s, line);
      return Value::undefined("string indices must be integers");
    }
    default:
      return Value::undefined(std::string("'") + typeName(obj) +
                              "' object is not subscriptable");
    }
  }

  Value slice(const Value &obj, const Value &start, const Value &stop,
              const Value &stepV, int line) {
    if (obj.kind == Kind::Undefined)
      unsupported(line, undefinedMessage(obj));
    auto idx = [&](const Value &v, const char *what) -> std::optional<int64_t> {
      if (v.kind == Kind::None)
        return std::nullopt;
      if (!v.isIntLike())
        unsupported(line, std::string("slice ") + what +
                              " must be an integer or none");
      return v.asInt();
    };
    std::optional<int64_t> b = idx(start, "start"), e = idx(stop, "stop"),
                           st = idx(stepV, "step");
    int64_t stepN = st.value_or(1);
    if (stepN == 0)
      unsupported(line, "slice step cannot be zero");
    auto pick = [&](int64_t n) {
      // Python's slice.indices().
      int64_t lo, hi;
      if (stepN > 0) {
        lo = b ? (*b < 0 ? std::max<int64_t>(*b + n, 0) : std::min(*b, n)) : 0;
        hi = e ? (*e < 0 ? std::max<int64_t>(*e + n, 0) : std::min(*e, n)) : n;
      } else {
        lo = b ? (*b < 0 ? std::max<int64_t>(*b + n, -1) : std::min(*b, n - 1))
               : n - 1;
        hi = e ? (*e < 0 ? std::max<int64_t>(*e + n, -1) : std::min(*e, n - 1))
               : -1;
      }
      std::vector<int64_t> out;
      if (stepN > 0)
        for (int64_t k = lo; k < hi; k += stepN)
          out.push_back(k);
      else
        for (int64_t k = lo; k > hi; k += stepN)
          out.push_back(k);
      return out;
    };
    if (obj.kind == Kind::List) {
      std::vector<Value> out;
      for (int64_t k : pick(int64_t(obj.list->size())))
        out.push_back((*obj.list)[size_t(k)]);
      return Value::makeList(std::move(out), obj.tuple);
    }
    if (obj.kind == Kind::String) {
      std::vector<size_t> offs = codepointOffsets(*obj.s);
      std::string out;
      for (int64_t k : pick(int64_t(offs.size() - 1)))
        out.append(*obj.s, offs[size_t(k)],
                   offs[size_t(k) + 1] - offs[size_t(k)]);
      return Value::string(std::move(out));
    }
    return Value::undefined(std::string("'") + typeName(obj) +
                            "' object is not subscriptable");
  }

  // Operators -------------------------------------------------------------

  static bool addOverflows(int64_t a, int64_t b, int64_t *r) {
    return __builtin_add_overflow(a, b, r);
  }

  Value binaryOp(const std::string &op, const Value &l, const Value &r,
                 int line) {
    if (op == "~") {
      std::string s = toStr(l) + toStr(r);
      checkSize(s.size(), line);
      return Value::string(std::move(s));
    }
    if (l.kind == Kind::Undefined)
      unsupported(line, undefinedMessage(l));
    if (r.kind == Kind::Undefined)
      unsupported(line, undefinedMessage(r));
    auto typeError = [&]() -> Value {
      unsupported(line, "unsupported operand type(s) for " + op + ": '" +
                            typeName(l) + "' and '" + typeName(r) + "'");
    };
    if (l.isNumber() && r.isNumber()) {
      bool ints = l.isIntLike() && r.isIntLike();
      if (ints) {
        int64_t a = l.asInt(), b = r.asInt(), res = 0;
        bool ovf = false;
        if (op == "+")
          ovf = addOverflows(a, b, &res);
        else if (op == "-")
          ovf = __builtin_sub_overflow(a, b, &res);
        else if (op == "*")
          ovf = __builtin_mul_overflow(a, b, &res);
        else if (op == "/") {
          if (b == 0)
            unsupported(line, "division by zero");
          return Value::number(double(a) / double(b));
        } else if (op == "//" || op == "%") {
          if (b == 0)
            unsupported(line, "integer division or modulo by zero");
          if (a == std::numeric_limits<int64_t>::min() && b == -1)
            unsupported(line, "integer overflow");
          int64_t q = a / b, m = a % b;
          if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
          }
          res = op == "//" ? q : m;
        } else if (op == "**") {
          if (b < 0)
            return Value::number(std::pow(double(a), double(b)));
          res = 1;
          for (int64_t k = 0; k < b && !ovf; ++k) {
            ovf = __builtin_mul_overflow(res, a, &res);
            step(line);
          }
        } else {
          return typeError();
        }
        if (ovf)
          unsupported(line, "integer overflow");
        return Value::integer(res);
      }
      double a = l.asDouble(), b = r.asDouble();
      if (op == "+")
        return Value::number(a + b);
      if (op == "-")
        return Value::number(a - b);
      if (op == "*")
        return Value::number(a * b);
      if (op == "/") {
        if (b == 0)
          unsupported(line, "float division by zero");
        return Value::number(a / b);
      }
      if (op == "//" || op == "%") {
        if (b == 0)
          unsupported(line, "float modulo by zero");
        double m = std::fmod(a, b);
        if (m != 0 && ((m < 0) != (b < 0)))
          m += b;
        if (op == "%")
          return Value::number(m);
        return Value::number(std::floor(a / b));
      }
      if (op == "**")
        return Value::number(std::pow(a, b));
      return typeError();
    }
    if (op == "+") {
      if (l.kind == Kind::String && r.kind == Kind::String) {
        checkSize(l.s->size() + r.s->size(), line);
        return Value::string(*l.s + *r.s);
      }
      if (l.kind == Kind::List && r.kind == Kind::List && l.tuple == r.tuple) {
        std::vector<Value> items = *l.list;
        items.insert(items.end(), r.list->begin(), r.list->end());
        checkSize(items.size(), line);
        return Value::makeList(std::move(items), l.tuple);
      }
      return typeError();
    }
    if (op == "*") {
      const Value *seq = nullptr, *count = nullptr;
      if ((l.kind == Kind::String || l.kind == Kind::List) && r.isIntLike()) {
        seq = &l;
        count = &r;
      } else if ((r.kind == Kind::String || r.kind == Kind::List) &&
                 l.isIntLike()) {
        seq = &r;
        count = &l;
      }
      if (!seq)
        return typeError();
      int64_t times = std::max<int64_t>(count->asInt(), 0);
      size_t unit =
          seq->kind == Kind::String ? seq->s->size() : seq->list->size();
      if (unit && uint64_t(times) > prog_.limits.maxOutputBytes / unit)
        checkSize(prog_.limits.maxOutputBytes + 1, line);
      if (seq->kind == Kind::String) {
        std::string out;
        for (int64_t k = 0; k < times; ++k)
          out += *seq->s;
        return Value::string(std::move(out));
      }
      std::vector<Value> out;
      for (int64_t k = 0; k < times; ++k)
        out.insert(out.end(), seq->list->begin(), seq->list->end());
      return Value::makeList(std::move(out), seq->tuple);
    }
    if (op == "%" && l.kind == Kind::String)
      unsupported(line, "printf-style string formatting is not supported");
    return typeError();
  }

  bool contains(const Value &container, const Value &item, int line) {
    switch (container.kind) {
    case Kind::Undefined:
      return false;
    case Kind::String:
      if (item.kind != Kind::String)
        unsupported(line, std::string("'in <string>' requires string as left "
                                      "operand, not ") +
                              typeName(item));
      return container.s->find(*item.s) != std::string::npos;
    case Kind::List:
      for (const Value &v : *container.list)
        if (equals(v, item))
          return true;
      return false;
    case Kind::Dict:
      return item.kind == Kind::String && container.dict->find(*item.s);
    default:
      unsupported(line, std::string("argument of type '") +
                            typeName(container) + "' is not iterable");
    }
  }

  bool compareOp(const std::string &op, const Value &l, const Value &r,
                 int line) {
    if (op == "==")
      return equals(l, r);
    if (op == "!=")
      return !equals(l, r);
    if (op == "in")
      return contains(r, l, line);
    if (op == "notin")
      return !contains(r, l, line);
    int c = compareValues(l, r, line, op.c_str());
    if (op == "<")
      return c < 0;
    if (op == "<=")
      return c <= 0;
    if (op == ">")
      return c > 0;
    return c >= 0;
  }

  // Calls -----------------------------------------------------------------

  static const Value *kwarg(const Kwargs &kw, const char *name) {
    for (const auto &[k, v] : kw)
      if (k == name)
        return &v;
    return nullptr;
  }

  /// Argument `pos` (positional) or `name` (keyword), or null.
  static const Value *argAt(const Args &args, const Kwargs &kw, size_t pos,
                            const char *name) {
    if (pos < args.size())
      return &args[pos];
    return kwarg(kw, name);
  }

  std::string strArg(const Value *v, const char *fn, int line,
                     const std::string &dflt = std::string()) {
    if (!v)
      return dflt;
    if (v->kind != Kind::String)
      unsupported(line, std::string(fn) + ": expected a string argument, got " +
                            typeName(*v));
    return *v->s;
  }

  int64_t intArg(const Value *v, const char *fn, int line, int64_t dflt) {
    if (!v || v->kind == Kind::None)
      return dflt;
    if (!v->isIntLike())
      unsupported(line, std::string(fn) +
                            ": expected an integer argument, got " +
                            typeName(*v));
    return v->asInt();
  }

  Value call(const Value &callee, const Args &args, const Kwargs &kw,
             int line) {
    if (callee.kind == Kind::Undefined)
      unsupported(line, undefinedMessage(callee));
    if (callee.kind != Kind::Callable)
      unsupported(line, std::string("'") + typeName(callee) +
                            "' object is not callable");
    const std::string &n = callee.name;
    if (n == "raise_exception") {
      std::string msg = args.empty() ? "" : toStr(args[0]);
      throw TemplateFail{RenderFailure::Raised, msg};
    }
    if (n == "range") {
      if (args.empty() || args.size() > 3)
        unsupported(line, "range expects 1 to 3 arguments");
      for (const Value &a : args)
        if (!a.isIntLike())
          unsupported(line, "range: arguments must be integers");
      int64_t start = 0, stop, stepN = 1;
      if (args.size() == 1) {
        stop = args[0].asInt();
      } else {
        start = args[0].asInt();
        stop = args[1].asInt();
        if (args.size() == 3)
          stepN = args[2].asInt();
      }
      if (stepN == 0)
        unsupported(line, "range() arg 3 must not be zero");
      std::vector<Value> out;
      for (int64_t k = start; stepN > 0 ? k < stop : k > stop; k += stepN) {
        out.push_back(Value::integer(k));
        checkSize(out.size(), line);
        step(line);
        if ((stepN > 0 && k > std::numeric_limits<int64_t>::max() - stepN) ||
            (stepN < 0 && k < std::numeric_limits<int64_t>::min() - stepN))
          break;
      }
      return Value::makeList(std::move(out));
    }
    if (n == "namespace" || n == "dict") {
      Value d = makeDict({}, n == "namespace" ? Kind::Namespace : Kind::Dict);
      if (d.kind == Kind::Namespace)
        namespaces_.push_back(d.dict);
      for (const Value &a : args) {
        if (a.kind != Kind::Dict && a.kind != Kind::Namespace)
          unsupported(line, n + ": positional arguments must be mappings");
        for (const auto &[k, v] : a.dict->entries)
          d.dict->set(k, v);
      }
      for (const auto &[k, v] : kw)
        d.dict->set(k, v);
      return d;
    }
    if (n == "strftime_now") {
      std::string fmt =
          strArg(argAt(args, kw, 0, "format"), "strftime_now", line);
      if (fmt.size() > 256)
        unsupported(line, "strftime_now: the format is too long");
      std::time_t t = std::time(nullptr);
      std::tm tm{};
      localtime_r(&t, &tm);
      char buf[1024];
      size_t len =
          fmt.empty() ? 0 : std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
      return Value::string(std::string(buf, len));
    }
    if (n == "loop.cycle") {
      if (args.empty())
        unsupported(line, "loop.cycle needs at least one argument");
      return args[size_t(callee.self->i) % args.size()];
    }
    const Value &self = *callee.self;
    if (n.compare(0, 4, "str.") == 0)
      return strMethod(n.substr(4), *self.s, args, kw, line);
    if (n == "dict.items") {
      std::vector<Value> out;
      for (const auto &[k, v] : self.dict->entries)
        out.push_back(Value::makeList({Value::string(k), v}, true));
      return Value::makeList(std::move(out));
    }
    if (n == "dict.keys" || n == "dict.values") {
      std::vector<Value> out;
      for (const auto &[k, v] : self.dict->entries)
        out.push_back(n == "dict.keys" ? Value::string(k) : v);
      return Value::makeList(std::move(out));
    }
    if (n == "dict.get") {
      const Value *key = argAt(args, kw, 0, "key");
      if (!key)
        unsupported(line, "get expects a key");
      if (key->kind == Kind::String)
        if (const Value *v = self.dict->find(*key->s))
          return *v;
      const Value *d = argAt(args, kw, 1, "default");
      return d ? *d : Value::none();
    }
    if (n == "list.index" || n == "list.count") {
      if (args.empty())
        unsupported(line, n + " expects an argument");
      int64_t count = 0;
      for (size_t k = 0; k < self.list->size(); ++k)
        if (equals((*self.list)[k], args[0])) {
          if (n == "list.index")
            return Value::integer(int64_t(k));
          ++count;
        }
      if (n == "list.index")
        unsupported(line, "list.index(x): x not in list");
      return Value::integer(count);
    }
    unsupported(line, "'" + n + "' cannot be called");
  }

  Value strMethod(const std::string &m, const std::string &s, const Args &args,
                  const Kwargs &kw, int line) {
    const char *fn = m.c_str();
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
      const Value *c = argAt(args, kw, 0, "chars");
      std::string chars;
      bool haveChars = c && c->kind != Kind::None;
      if (haveChars)
        chars = strArg(c, fn, line);
      return Value::string(pyStrip(s, m != "rstrip", m != "lstrip",
                                   haveChars ? &chars : nullptr));
    }
    if (m == "upper")
      return Value::string(asciiUpper(s));
    if (m == "lower")
      return Value::string(asciiLower(s));
    if (m == "title" || m == "capitalize")
      return Value::string(m == "title" ? pyTitle(s) : pyCapitalize(s));
    if (m == "startswith" || m == "endswith") {
      const Value *p = argAt(args, kw, 0, "prefix");
      if (!p)
        unsupported(line, m + " expects an argument");
      std::vector<std::string> options;
      if (p->kind == Kind::List) {
        for (const Value &v : *p->list)
          options.push_back(strArg(&v, fn, line));
      } else {
        options.push_back(strArg(p, fn, line));
      }
      for (const std::string &o : options) {
        if (o.size() > s.size())
          continue;
        if (m == "startswith"
                ? s.compare(0, o.size(), o) == 0
                : s.compare(s.size() - o.size(), o.size(), o) == 0)
          return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (m == "split" || m == "rsplit") {
      const Value *sepV = argAt(args, kw, 0, "sep");
      int64_t maxsplit = intArg(argAt(args, kw, 1, "maxsplit"), fn, line, -1);
      std::vector<Value> out;
      if (!sepV || sepV->kind == Kind::None) {
        // Runs of whitespace, no empty strings; after maxsplit splits the
        // rest (leading whitespace dropped) is the last item.
        if (m == "rsplit" && maxsplit >= 0)
          unsupported(line, "rsplit() with maxsplit and no separator is not "
                            "supported");
        size_t k = 0;
        auto spaceAt = [&](size_t at, size_t *len) {
          return isPySpace(decodeAt(s, at, len));
        };
        while (k < s.size()) {
          size_t len;
          while (k < s.size() && spaceAt(k, &len))
            k += len;
          if (k >= s.size())
            break;
          if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) {
            out.push_back(Value::string(s.substr(k)));
            break;
          }
          size_t wordStart = k;
          while (k < s.size() && !spaceAt(k, &len))
            k += len;
          out.push_back(Value::string(s.substr(wordStart, k - wordStart)));
          step(line);
        }
        return Value::makeList(std::move(out));
      }
      std::string sep = strArg(sepV, fn, line);
      if (sep.empty())
        unsupported(line, "empty separator");
      std::vector<std::string> parts;
      if (m == "split") {
        size_t start = 0;
        while (true) {
          size_t at = (maxsplit < 0 || int64_t(parts.size()) < maxsplit)
                          ? s.find(sep, start)
                          : std::string::npos;
          if (at == std::string::npos) {
            parts.push_back(s.substr(start));
            break;
          }
          parts.push_back(s.substr(start, at - start));
          start = at + sep.size();
          step(line);
        }
      } else {
        size_t end = s.size();
        while (true) {
          size_t at = (maxsplit < 0 || int64_t(parts.size()) < maxsplit) &&
                              end >= sep.size()
                          ? s.rfind(sep, end - sep.size())
                          : std::string::npos;
          if (at == std::string::npos) {
            parts.push_back(s.substr(0, end));
            break;
          }
          parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
          end = at;
          step(line);
        }
        std::reverse(parts.begin(), parts.end());
      }
      for (auto &p : parts)
        out.push_back(Value::string(p));
      return Value::makeList(std::move(out));
    }
    if (m == "splitlines") {
      std::vector<Value> out;
      size_t start = 0;
      for (size_t k = 0; k < s.size(); ++k)
        if (s[k] == '\n' || s[k] == '\r') {
          out.push_back(Value::string(s.substr(start, k - start)));
          if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n')
            ++k;
          start = k + 1;
        }
      if (start < s.size())
        out.push_back(Value::string(s.substr(start)));
      return Value::makeList(std::move(out));
    }
    if (m == "replace") {
      std::string from = strArg(argAt(args, kw, 0, "old"), fn, line);
      std::string to = strArg(argAt(args, kw, 1, "new"), fn, line);
      int64_t count = intArg(argAt(args, kw, 2, "count"), fn, line, -1);
      return Value::string(replaceAll(s, from, to, count, line));
    }
    if (m == "find" || m == "rfind" || m == "count") {
      std::string sub = strArg(argAt(args, kw, 0, "sub"), fn, line);
      if (m == "count") {
        if (sub.empty())
          return Value::integer(int64_t(codepointOffsets(s).size()));
        int64_t c = 0;
        for (size_t at = s.find(sub); at != std::string::npos;
             at = s.find(sub, at + sub.size()))
          ++c;
        return Value::integer(c);
      }
      size_t at = m == "find" ? s.find(sub) : s.rfind(sub);
      if (at == std::string::npos)
        return Value::integer(-1);
      // Code point index.
      return Value::integer(
          int64_t(codepointOffsets(s.substr(0, at)).size() - 1));
    }
    if (m == "join") {
      const Value *it = argAt(args, kw, 0, "iterable");
      if (!it)
        unsupported(line, "join expects an iterable");
      std::string out;
      std::vector<Value> items = iterate(*it, line);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k)
          out += s;
        out += strArg(&items[k], fn, line);
        checkSize(out.size(), line);
      }
      return Value::string(std::move(out));
    }
    if (m == "removeprefix" || m == "removesuffix") {
      std::string a = strArg(argAt(args, kw, 0, "prefix"), fn, line);
      if (m == "removeprefix" && s.compare(0, a.size(), a) == 0)
        return Value::string(s.substr(a.size()));
      if (m == "removesuffix" && a.size() <= s.size() &&
          s.compare(s.size() - a.size(), a.size(), a) == 0 && !a.empty())
        return Value::string(s.substr(0, s.size() - a.size()));
      return Value::string(s);
    }
    if (m.compare(0, 2, "is") == 0) {
      if (s.empty())
        return Value::boolean(false);
      bool all = true, anyCased = false;
      for (unsigned char c : s) {
        bool ok = m == "isdigit"   ? (c >= '0' && c <= '9')
                  : m == "isalpha" ? isAsciiAlpha(char(c))
                  : m == "isalnum"
                      ? (isAsciiAlpha(char(c)) || (c >= '0' && c <= '9'))
                  : m == "isspace" ? isPySpace(c)
                  : m == "isupper" ? !(c >= 'a' && c <= 'z')
                                   : !(c >= 'A' && c <= 'Z');
        if (isAsciiAlpha(char(c)))
          anyCased = true;
        all = all && ok;
      }
      if (m == "isupper" || m == "islower")
        return Value::boolean(all && anyCased);
      return Value::boolean(all);
    }
    unsupported(line, "str." + m + " is not supported");
  }

  static std::string pyTitle(const std::string &s) {
    std::string out = s;
    bool prevCased = false;
    for (char &c : out) {
      if (isAsciiAlpha(c)) {
        c = prevCased ? (c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c)
                      : (c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c);
        prevCased = true;
      } else {
        prevCased = false;
      }
    }
    return out;
  }

  static std::string pyCapitalize(const std::string &s) {
    std::string out = asciiLower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
      out[0] = char(out[0] - 'a' + 'A');
    return out;
  }

  std::string replaceAll(const std::string &s, const std::string &from,
                         const std::string &to, int64_t count, int line) {
    std::string out;
    if (from.empty()) {
      // Python inserts `to` around every code point.
      std::vector<size_t> offs = codepointOffsets(s);
      int64_t done = 0;
      for (size_t k = 0; k + 1 < offs.size(); ++k) {
        if (count < 0 || done < count) {
          out += to;
          ++done;
        }
        out.append(s, offs[k], offs[k + 1] - offs[k]);
        checkSize(out.size(), line);
      }
      if (count < 0 || done < count)
        out += to;
      return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
      size_t at = s.find(from, start);
      if (at == std::string::npos)
        break;
      out.append(s, start, at - start);
      out += to;
      checkSize(out.size(), line);
      start = at + from.size();
      ++done;
    }
    out.append(s, start, std::string::npos);
    return out;
  }

  // Filters ---------------------------------------------------------------

  /// Applies filter node `f`; a set block's chain ends in a filter with no
  /// operand, which takes `input`.
  Value applyFilterChain(const Expr &f, const Value &input) {
    Value v = !f.a                      ? input
              : f.a->kind == EK::Filter ? applyFilterChain(*f.a, input)
                                        : eval(*f.a);
    Args args;
    Kwargs kw;
    evalArgs(f, args, kw);
    return filter(f.name, v, args, kw, f.line);
  }

  int64_t length(const Value &v, int line) {
    switch (v.kind) {
    case Kind::Undefined:
      return 0;
    case Kind::String:
      return int64_t(codepointOffsets(*v.s).size() - 1);
    case Kind::List:
      return int64_t(v.list->size());
    case Kind::Dict:
    case Kind::Namespace:
      return int64_t(v.dict->entries.size());
    default:
      unsupported(line, std::string("object of type '") + typeName(v) +
                            "' has no len()");
    }
  }

  /// Jinja's attribute lookup for filters (dotted paths, integer parts).
  Value attributePath(const Value &item, const std::string &path, int line) {
    Value v = item;
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(
          start, dot == std::string::npos ? std::string::npos : dot - start);
      bool digits = !part.empty() &&
                    std::all_of(part.begin(), part.end(),
                                [](char c) { return c >= '0' && c <= '9'; });
      v = digits ? getItem(v, Value::integer(std::atoll(part.c_str())), line)
                 : getItem(v, Value::string(part), line);
      if (dot == std::string::npos)
        return v;
      start = dot + 1;
    }
  }

  Value filter(const std::string &n, const Value &v, const Args &args,
               const Kwargs &kw, int line) {
    const char *fn = n.c_str();
    if (n == "trim") {
      const Value *c = argAt(args, kw, 0, "chars");
      std::string chars;
      bool have = c && c->kind != Kind::None;
      if (have)
        chars = strArg(c, fn, line);
      return Value::string(
          pyStrip(toStr(v), true, true, have ? &chars : nullptr));
    }
    if (n == "length" || n == "count")
      return Value::integer(length(v, line));
    if (n == "tojson") {
      JsonStyle st;
      if (const Value *ea = kwarg(kw, "ensure_ascii"))
        st.ensureAscii = truthy(*ea);
      const Value *ind = argAt(args, kw, 0, "indent");
      if (ind && ind->kind != Kind::None) {
        st.indented = true;
        if (ind->isIntLike())
          st.indent = std::string(
              size_t(std::clamp<int64_t>(ind->asInt(), 0, 64)), ' ');
        else if (ind->kind == Kind::String)
          st.indent = *ind->s;
        else
          unsupported(line, "tojson: indent must be an integer or a string");
        st.itemSep = ",";
      }
      if (const Value *sep = kwarg(kw, "separators");
          sep && sep->kind != Kind::None) {
        if (sep->kind != Kind::List || sep->list->size() != 2 ||
            (*sep->list)[0].kind != Kind::String ||
            (*sep->list)[1].kind != Kind::String)
          unsupported(line, "tojson: separators must be a pair of strings");
        st.itemSep = *(*sep->list)[0].s;
        st.keySep = *(*sep->list)[1].s;
      }
      if (const Value *sk = kwarg(kw, "sort_keys"))
        st.sortKeys = truthy(*sk);
      std::string out;
      toJson(out, v, st, 0, line, prog_.limits.maxOutputBytes);
      checkSize(out.size(), line);
      return Value::string(std::move(out));
    }
    if (n == "string")
      return Value::string(toStr(v));
    if (n == "upper")
      return Value::string(asciiUpper(toStr(v)));
    if (n == "lower")
      return Value::string(asciiLower(toStr(v)));
    if (n == "capitalize")
      return Value::string(pyCapitalize(toStr(v)));
    if (n == "title")
      return Value::string(pyTitle(toStr(v)));
    if (n == "safe")
      return v;
    if (n == "e" || n == "escape") {
      std::string out;
      for (char c : toStr(v)) {
        switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&#34;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += c;
        }
      }
      return Value::string(std::move(out));
    }
    if (n == "d" || n == "default") {
      const Value *dflt = argAt(args, kw, 0, "default_value");
      const Value *boolean = argAt(args, kw, 1, "boolean");
      bool useDefault = v.kind == Kind::Undefined ||
                        (boolean && truthy(*boolean) && !truthy(v));
      if (useDefault)
        return dflt ? *dflt : Value::string("");
      return v;
    }
    if (n == "items") {
      if (v.kind == Kind::Undefined)
        return Value::makeList({});
      if (v.kind != Kind::Dict)
        unsupported(line, "items: expected a mapping, got " +
                              std::string(typeName(v)));
      Args none;
      return call(
          Value::callable("dict.items", std::make_shared<const Value>(v)), none,
          {}, line);
    }
    if (n == "list")
      return Value::makeList(iterate(v, line));
    if (n == "join") {
      std::string sep = strArg(argAt(args, kw, 0, "d"), fn, line);
      const Value *attr = argAt(args, kw, 1, "attribute");
      std::string out;
      std::vector<Value> items = iterate(v, line);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k)
          out += sep;
        out += toStr(attr ? attributePath(items[k], toStr(*attr), line)
                          : items[k]);
        checkSize(out.size(), line);
      }
      return Value::string(std::move(out));
    }
    if (n == "first" || n == "last") {
      std::vector<Value> items = iterate(v, line);
      if (items.empty())
        return Value::undefined(std::string("no ") + fn +
                                " item, sequence was empty");
      return n == "first" ? items.front() : items.back();
    }
    if (n == "reverse") {
      if (v.kind == Kind::String) {
        std::vector<size_t> offs = codepointOffsets(*v.s);
        std::string out;
        for (size_t k = offs.size() - 1; k-- > 0;)
          out.append(*v.s, offs[k], offs[k + 1] - offs[k]);
        return Value::string(std::move(out));
      }
      std::vector<Value> items = iterate(v, line);
      std::reverse(items.begin(), items.end());
      return Value::makeList(std::move(items));
    }
    if (n == "replace") {
      std::string from = strArg(argAt(args, kw, 0, "old"), fn, line);
      std::string to = strArg(argAt(args, kw, 1, "new"), fn, line);
      int64_t count = intArg(argAt(args, kw, 2, "count"), fn, line, -1);
      return Value::string(replaceAll(toStr(v), from, to, count, line));
    }
    if (n == "int") {
      const Value *dflt = argAt(args, kw, 0, "default");
      Value d = dflt ? *dflt : Value::integer(0);
      if (v.isIntLike())
        return Value::integer(v.asInt());
      if (v.kind == Kind::Float)
        return std::isfinite(v.f) && std::fabs(v.f) < 9.2e18
                   ? Value::integer(int64_t(v.f))
                   : d;
      if (v.kind == Kind::String) {
        std::string t = pyStrip(*v.s, true, true, nullptr);
        char *end = nullptr;
        errno = 0;
        long long x = std::strtoll(t.c_str(), &end, 10);
        if (!t.empty() && end && *end == '\0' && errno == 0)
          return Value::integer(x);
        double f = std::strtod(t.c_str(), &end);
        if (!t.empty() && end && *end == '\0' && std::isfinite(f) &&
            std::fabs(f) < 9.2e18)
          return Value::integer(int64_t(f));
      }
      return d;
    }
    if (n == "float") {
      const Value *dflt = argAt(args, kw, 0, "default");
      if (v.isNumber())
        return Value::number(v.asDouble());
      if (v.kind == Kind::String) {
        std::string t = pyStrip(*v.s, true, true, nullptr);
        char *end = nullptr;
        double f = std::strtod(t.c_str(), &end);
        if (!t.empty() && end && *end == '\0')
          return Value::number(f);
      }
      return dflt ? *dflt : Value::number(0.0);
    }
    if (n == "abs") {
      if (v.kind == Kind::Float)
        return Value::number(std::fabs(v.f));
      if (v.isIntLike()) {
        if (v.asInt() == std::numeric_limits<int64_t>::min())
          unsupported(line, "integer overflow");
        return Value::integer(std::llabs(v.asInt()));
      }
      unsupported(line, std::string("bad operand type for abs(): '") +
                            typeName(v) + "'");
    }
    if (n == "round") {
      int64_t precision = intArg(argAt(args, kw, 0, "precision"), fn, line, 0);
      std::string method =
          strArg(argAt(args, kw, 1, "method"), fn, line, "common");
      if (!v.isNumber())
        unsupported(line, "round: expected a number");
      double x = v.asDouble(), scale = std::pow(10.0, double(precision));
      double r = method == "ceil"    ? std::ceil(x * scale) / scale
                 : method == "floor" ? std::floor(x * scale) / scale
                                     : std::nearbyint(x * scale) / scale;
      return Value::number(r);
    }
    if (n == "wordcount") {
      Value words = strMethod("split", toStr(v), {}, {}, line);
      return Value::integer(int64_t(words.list->size()));
    }
    if (n == "indent") {
      // Jinja's do_indent, line for line.
      const Value *w = argAt(args, kw, 0, "width");
      std::string pad =
          w && w->kind == Kind::String
              ? *w->s
              : std::string(
                    size_t(std::clamp<int64_t>(intArg(w, fn, line, 4), 0, 256)),
                    ' ');
      const Value *firstV = argAt(args, kw, 1, "first");
      const Value *blankV = argAt(args, kw, 2, "blank");
      bool first = firstV && truthy(*firstV), blank = blankV && truthy(*blankV);
      std::string s = toStr(v) + "\n";
      std::vector<std::string> lines;
      size_t start = 0;
      for (size_t k = 0; k < s.size(); ++k)
        if (s[k] == '\n') {
          lines.push_back(s.substr(start, k - start));
          start = k + 1;
        }
      std::string out;
      if (blank) {
        for (size_t k = 0; k < lines.size(); ++k)
          out += (k ? "\n" + pad : std::string()) + lines[k];
      } else {
        out = lines.empty() ? std::string() : lines[0];
        for (size_t k = 1; k < lines.size(); ++k)
          out += "\n" + (lines[k].empty() ? std::string() : pad) + lines[k];
      }
      if (first)
        out = pad + out;
      checkSize(out.size(), line);
      return Value::string(std::move(out));
    }
    if (n == "attr") {
      return getAttr(v, strArg(argAt(args, kw, 0, "name"), fn, line), line);
    }
    if (n == "select" || n == "reject") {
      std::vector<Value> out;
      std::string testName = args.empty() ? "" : strArg(&args[0], fn, line);
      Args testArgs(args.size() > 1 ? args.begin() + 1 : args.end(),
                    args.end());
      for (const Value &item : iterate(v, line)) {
        step(line);
        bool r = testName.empty() ? truthy(item)
                                  : test(checkedTestName(testName, line), item,
                                         testArgs, line);
        if (r == (n == "select"))
          out.push_back(item);
      }
      return Value::makeList(std::move(out));
    }
    if (n == "selectattr" || n == "rejectattr") {
      if (args.empty())
        unsupported(line, n + " expects an attribute name");
      std::string attr = strArg(&args[0], fn, line);
      std::string testName = args.size() > 1 ? strArg(&args[1], fn, line) : "";
      Args testArgs(args.size() > 2 ? args.begin() + 2 : args.end(),
                    args.end());
      std::vector<Value> out;
      for (const Value &item : iterate(v, line)) {
        step(line);
        Value a = attributePath(item, attr, line);
        bool r = testName.empty()
                     ? truthy(a)
                     : test(checkedTestName(testName, line), a, testArgs, line);
        if (r == (n == "selectattr"))
          out.push_back(item);
      }
      return Value::makeList(std::move(out));
    }
    if (n == "map") {
      std::vector<Value> out;
      if (const Value *attr = kwarg(kw, "attribute")) {
        const Value *dflt = kwarg(kw, "default");
        for (const Value &item : iterate(v, line)) {
          step(line);
          Value a = attributePath(item, toStr(*attr), line);
          out.push_back(a.kind == Kind::Undefined && dflt ? *dflt : a);
        }
        return Value::makeList(std::move(out));
      }
      if (args.empty())
        unsupported(line, "map expects a filter name or attribute=");
      std::string filterName = strArg(&args[0], fn, line);
      if (!knownFilters().count(filterName))
        unsupported(line, "map: unknown filter '" + filterName + "'");
      Args rest(args.begin() + 1, args.end());
      for (const Value &item : iterate(v, line)) {
        step(line);
        out.push_back(filter(filterName, item, rest, {}, line));
      }
      return Value::makeList(std::move(out));
    }
    if (n == "unique" || n == "sort" || n == "min" || n == "max" ||
        n == "dictsort" || n == "sum") {
      std::vector<Value> items = n == "dictsort"
                                     ? filter("items", v, {}, {}, line).items()
                                     : iterate(v, line);
      if (n == "sum") {
        const Value *attr = argAt(args, kw, 0, "attribute");
        const Value *start = argAt(args, kw, 1, "start");
        Value acc = start ? *start : Value::integer(0);
        for (const Value &item : items)
          acc = binaryOp("+", acc,
                         attr ? attributePath(item, toStr(*attr), line) : item,
                         line);
        return acc;
      }
      bool caseSensitive = false;
      const Value *attr = nullptr;
      bool reverse = false;
      if (n == "sort") {
        const Value *r = argAt(args, kw, 0, "reverse");
        reverse = r && truthy(*r);
        const Value *cs = argAt(args, kw, 1, "case_sensitive");
        caseSensitive = cs && truthy(*cs);
        attr = argAt(args, kw, 2, "attribute");
      } else if (n == "dictsort") {
        const Value *cs = argAt(args, kw, 0, "case_sensitive");
        caseSensitive = cs && truthy(*cs);
        const Value *r = argAt(args, kw, 2, "reverse");
        reverse = r && truthy(*r);
      } else {
        const Value *cs = argAt(args, kw, 0, "case_sensitive");
        caseSensitive = cs && truthy(*cs);
        attr = argAt(args, kw, 1, "attribute");
      }
      auto keyOf = [&](const Value &item) -> Value {
        Value k = item;
        if (n == "dictsort") {
          const Value *by = argAt(args, kw, 1, "by");
          k = (*item.list)[by && toStr(*by) == "value" ? 1 : 0];
        } else if (attr) {
          k = attributePath(item, toStr(*attr), line);
        }
        if (!caseSensitive && k.kind == Kind::String)
          k = Value::string(asciiLower(*k.s));
        return k;
      };
      if (n == "unique") {
        std::vector<Value> out, keys;
        for (const Value &item : items) {
          Value k = keyOf(item);
          bool seen = false;
          for (const Value &s : keys)
            if (equals(s, k))
              seen = true;
          if (!seen) {
            keys.push_back(k);
            out.push_back(item);
          }
        }
        return Value::makeList(std::move(out));
      }
      if (n == "min" || n == "max") {
        if (items.empty())
          return Value::undefined(std::string("no ") + fn +
                                  " item, sequence was empty");
        size_t best = 0;
        for (size_t k = 1; k < items.size(); ++k) {
          int c = compareValues(keyOf(items[k]), keyOf(items[best]), line, "<");
          if (n == "min" ? c < 0 : c > 0)
            best = k;
        }
        return items[best];
      }
      std::stable_sort(items.begin(), items.end(),
                       [&](const Value &a, const Value &b) {
                         int c = compareValues(keyOf(a), keyOf(b), line, "<");
                         return reverse ? c > 0 : c < 0;
                       });
      return Value::makeList(std::move(items));
    }
    unsupported(line, "the filter '" + n + "' is not supported");
  }

  std::string checkedTestName(const std::string &name, int line) {
    if (!knownTests().count(name))
      unsupported(line, "unknown test '" + name + "'");
    return name;
  }

  // Tests -----------------------------------------------------------------

  bool test(const std::string &n, const Value &v, const Args &args, int line) {
    auto arg = [&](size_t k) -> const Value & {
      if (k >= args.size())
        unsupported(line, "the test '" + n + "' needs an argument");
      return args[k];
    };
    if (n == "defined")
      return v.kind != Kind::Undefined;
    if (n == "undefined")
      return v.kind == Kind::Undefined;
    if (n == "none")
      return v.kind == Kind::None;
    if (n == "boolean")
      return v.kind == Kind::Bool;
    if (n == "true")
      return v.kind == Kind::Bool && v.b;
    if (n == "false")
      return v.kind == Kind::Bool && !v.b;
    if (n == "integer")
      return v.kind == Kind::Int;
    if (n == "float")
      return v.kind == Kind::Float;
    if (n == "number")
      return v.isNumber();
    if (n == "string")
      return v.kind == Kind::String;
    if (n == "mapping")
      return v.kind == Kind::Dict;
    if (n == "iterable")
      return v.kind == Kind::String || v.kind == Kind::List ||
             v.kind == Kind::Dict || v.kind == Kind::Undefined;
    if (n == "sequence")
      return v.kind == Kind::String || v.kind == Kind::List ||
             v.kind == Kind::Dict;
    if (n == "callable")
      return v.kind == Kind::Callable;
    if (n == "escaped")
      return false;
    if (n == "lower" || n == "upper") {
      std::string s = toStr(v);
      return n == "lower" ? asciiLower(s) == s : asciiUpper(s) == s;
    }
    if (n == "odd" || n == "even" || n == "divisibleby") {
      if (!v.isIntLike())
        unsupported(line, "the test '" + n + "' needs an integer");
      int64_t x = v.asInt();
      if (n == "divisibleby") {
        const Value &d = arg(0);
        if (!d.isIntLike() || d.asInt() == 0)
          unsupported(line, "divisibleby needs a non-zero integer");
        return x % d.asInt() == 0;
      }
      return (x % 2 != 0) == (n == "odd");
    }
    if (n == "eq" || n == "equalto" || n == "==")
      return equals(v, arg(0));
    if (n == "ne" || n == "!=")
      return !equals(v, arg(0));
    if (n == "lt" || n == "lessthan" || n == "<")
      return compareValues(v, arg(0), line, "<") < 0;
    if (n == "le" || n == "<=")
      return compareValues(v, arg(0), line, "<=") <= 0;
    if (n == "gt" || n == "greaterthan" || n == ">")
      return compareValues(v, arg(0), line, ">") > 0;
    if (n == "ge" || n == ">=")
      return compareValues(v, arg(0), line, ">=") >= 0;
    if (n == "in")
      return contains(arg(0), v, line);
    if (n == "sameas") {
      const Value &o = arg(0);
      if (v.kind != o.kind)
        return false;
      if (v.kind == Kind::None || v.kind == Kind::Undefined)
        return true;
      if (v.kind == Kind::Bool)
        return v.b == o.b;
      if (v.kind == Kind::Dict || v.kind == Kind::Namespace)
        return v.dict == o.dict;
      if (v.kind == Kind::List)
        return v.list == o.list;
      return false;
    }
    unsupported(line, "the test '" + n + "' is not supported");
  }
};

Value contextValue(const ChatContext &c) {
  std::vector<Value> messages;
  for (const ChatMessage &m : c.messages)
    messages.push_back(makeDict({{"role", Value::string(m.role)},
                                 {"content", Value::string(m.content)}}));
  return makeDict({
      {"messages", Value::makeList(std::move(messages))},
      {"tools", Value::none()},
      {"documents", Value::none()},
      {"add_generation_prompt", Value::boolean(c.addGenerationPrompt)},
      {"bos_token", Value::string(c.bosToken)},
      {"eos_token", Value::string(c.eosToken)},
  });
}

Result<std::string> renderValue(const ChatTemplate::Program &prog,
                                Value globals, RenderFailure *failure) {
  if (failure)
    *failure = RenderFailure::None;
  try {
    Evaluator ev(prog, std::move(globals));
    return ev.run();
  } catch (const TemplateFail &f) {
    if (failure)
      *failure = f.kind;
    if (f.kind == RenderFailure::Raised)
      return Error(
          prog.name +
          ": the chat template rejects the conversation: " + f.message);
    return Error(prog.name + ": " + f.message);
  } catch (const std::bad_alloc &) {
    if (failure)
      *failure = RenderFailure::Unsupported;
    return Error(prog.name + ": out of memory while rendering the template");
  }
}

} // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string_view source,
                                         const std::string &name,
                                         const TemplateLimits &limits) {
  if (source.size() > limits.maxSourceBytes)
    return Error(
        name + ": the chat template is " + std::to_string(source.size()) +
        " bytes, more than the limit " + std::to_string(limits.maxSourceBytes));
  auto prog = std::make_shared<Program>();
  prog->source = std::string(source);
  prog->name = name;
  prog->limits = limits;
  try {
    Lexer lexer(source, /*maxTokens=*/limits.maxSourceBytes);
    Parser parser(lexer.run(), limits.maxDepth);
    prog->body = parser.parseTemplate();
  } catch (const TemplateFail &f) {
    return Error(name + ": " + f.message);
  } catch (const std::bad_alloc &) {
    return Error(name + ": out of memory while parsing the template");
  }
  ChatTemplate t;
  t.program_ = std::move(prog);
  return t;
}

const std::string &ChatTemplate::source() const { return program_->source; }

Result<std::string> ChatTemplate::render(const ChatContext &context,
                                         RenderFailure *failure) const {
  return renderValue(*program_, contextValue(context), failure);
}

Result<std::string> ChatTemplate::renderJson(std::string_view contextJson,
                                             RenderFailure *failure) const {
  if (failure)
    *failure = RenderFailure::Unsupported;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      contextJson, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Error(program_->name + ": the render context is not a JSON object");
  Value globals;
  try {
    globals = fromJson(j, 0);
  } catch (const TemplateFail &f) {
    return Error(program_->name + ": " + f.message);
  }
  return renderValue(*program_, std::move(globals), failure);
}

std::vector<std::string> endOfTurnMarkers(std::string_view templateSource) {
  // The end-of-turn markers of the chat formats in the families etllm
  // imports (ChatML, Llama 3, Gemma, Phi-3) and a few common others.
  static const char *kMarkers[] = {"<|im_end|>",
                                   "<|eot_id|>",
                                   "<|eom_id|>",
                                   "<end_of_turn>",
                                   "<|end|>",
                                   "<|endoftext|>",
                                   "<|END_OF_TURN_TOKEN|>",
                                   "<|end_of_text|>"};
  std::vector<std::string> out;
  for (const char *m : kMarkers)
    if (templateSource.find(m) != std::string_view::npos)
      out.push_back(m);
  return out;
}

} // namespace etllm::rt::llm
