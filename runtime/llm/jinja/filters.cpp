//===- filters.cpp - Jinja filters (`x | name`) ---------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h): the
// Jinja built-in filters chat templates use, with Jinja 3.1's behaviour,
// and `tojson` as transformers defines it; declared in builtins.def.
//
//===----------------------------------------------------------------------===//
#include "builtins.h"

#include "evaluator.h"
#include "failure.h"
#include "json.h"
#include "text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace etllm::rt::llm::jinja {
namespace {

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
Value attributePath(Evaluator &ev, const Value &item, const std::string &path,
                    int line) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(
        start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() &&
                  std::all_of(part.begin(), part.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? ev.getItem(v, Value::integer(std::atoll(part.c_str())), line)
               : ev.getItem(v, Value::string(part), line);
    if (dot == std::string::npos)
      return v;
    start = dot + 1;
  }
}

/// The test `name` (select, selectattr, ...).
const Builtin &testNamed(const std::string &name, int line) {
  const Builtin *test = findBuiltin(BuiltinKind::Test, name);
  if (!test)
    unsupported(line, "unknown test '" + name + "'");
  return *test;
}

} // namespace

//===----------------------------------------------------------------------===//
// Strings
//===----------------------------------------------------------------------===//

Value filterTrim(Evaluator &ev, const Call &c) {
  const Value *chars = c.arg(0, "chars");
  bool have = chars && chars->kind != Kind::None;
  std::string set = have ? c.str(chars) : std::string();
  return Value::string(
      pyStrip(toStr(c.self), true, true, have ? &set : nullptr));
}

Value filterString(Evaluator &ev, const Call &c) {
  return Value::string(toStr(c.self));
}

Value filterUpper(Evaluator &ev, const Call &c) {
  return Value::string(asciiUpper(toStr(c.self)));
}

Value filterLower(Evaluator &ev, const Call &c) {
  return Value::string(asciiLower(toStr(c.self)));
}

Value filterCapitalize(Evaluator &ev, const Call &c) {
  return Value::string(pyCapitalize(toStr(c.self)));
}

Value filterTitle(Evaluator &ev, const Call &c) {
  return Value::string(pyTitle(toStr(c.self)));
}

Value filterSafe(Evaluator &ev, const Call &c) { return c.self; }

/// e, escape: HTML escaping (the value is never marked safe).
Value filterEscape(Evaluator &ev, const Call &c) {
  std::string out;
  for (char ch : toStr(c.self)) {
    switch (ch) {
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
      out += ch;
    }
  }
  return Value::string(std::move(out));
}

Value filterReplace(Evaluator &ev, const Call &c) {
  std::string from = c.str(c.arg(0, "old"));
  std::string to = c.str(c.arg(1, "new"));
  int64_t count = c.integer(c.arg(2, "count"), -1);
  return Value::string(replaceAll(ev, toStr(c.self), from, to, count, c.line));
}

Value filterWordcount(Evaluator &ev, const Call &c) {
  Value text = Value::string(toStr(c.self));
  Args none;
  Value words = strSplit(ev, Call{"split", text, none, {}, c.line});
  return Value::integer(int64_t(words.list->size()));
}

Value filterIndent(Evaluator &ev, const Call &c) {
  // Jinja's do_indent, line for line.
  const Value *w = c.arg(0, "width");
  std::string pad =
      w && w->kind == Kind::String
          ? *w->s
          : std::string(size_t(std::clamp<int64_t>(c.integer(w, 4), 0, 256)),
                        ' ');
  const Value *firstV = c.arg(1, "first");
  const Value *blankV = c.arg(2, "blank");
  bool first = firstV && truthy(*firstV), blank = blankV && truthy(*blankV);
  std::string s = toStr(c.self) + "\n";
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
  ev.checkSize(out.size(), c.line);
  return Value::string(std::move(out));
}

Value filterTojson(Evaluator &ev, const Call &c) {
  int line = c.line;
  JsonStyle st;
  if (const Value *ea = c.kwarg("ensure_ascii"))
    st.ensureAscii = truthy(*ea);
  const Value *ind = c.arg(0, "indent");
  if (ind && ind->kind != Kind::None) {
    st.indented = true;
    if (ind->isIntLike())
      st.indent =
          std::string(size_t(std::clamp<int64_t>(ind->asInt(), 0, 64)), ' ');
    else if (ind->kind == Kind::String)
      st.indent = *ind->s;
    else
      unsupported(line, "tojson: indent must be an integer or a string");
    st.itemSep = ",";
  }
  if (const Value *sep = c.kwarg("separators");
      sep && sep->kind != Kind::None) {
    if (sep->kind != Kind::List || sep->list->size() != 2 ||
        (*sep->list)[0].kind != Kind::String ||
        (*sep->list)[1].kind != Kind::String)
      unsupported(line, "tojson: separators must be a pair of strings");
    st.itemSep = *(*sep->list)[0].s;
    st.keySep = *(*sep->list)[1].s;
  }
  if (const Value *sk = c.kwarg("sort_keys"))
    st.sortKeys = truthy(*sk);
  std::string out;
  toJson(out, c.self, st, 0, line, ev.limits().maxOutputBytes);
  ev.checkSize(out.size(), line);
  return Value::string(std::move(out));
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

Value filterInt(Evaluator &ev, const Call &c) {
  const Value &v = c.self;
  const Value *dflt = c.arg(0, "default");
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

Value filterFloat(Evaluator &ev, const Call &c) {
  const Value &v = c.self;
  const Value *dflt = c.arg(0, "default");
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

Value filterAbs(Evaluator &ev, const Call &c) {
  const Value &v = c.self;
  if (v.kind == Kind::Float)
    return Value::number(std::fabs(v.f));
  if (v.isIntLike()) {
    if (v.asInt() == std::numeric_limits<int64_t>::min())
      unsupported(c.line, "integer overflow");
    return Value::integer(std::llabs(v.asInt()));
  }
  unsupported(c.line,
              std::string("bad operand type for abs(): '") + typeName(v) + "'");
}

Value filterRound(Evaluator &ev, const Call &c) {
  int64_t precision = c.integer(c.arg(0, "precision"), 0);
  std::string method = c.str(c.arg(1, "method"), "common");
  if (!c.self.isNumber())
    unsupported(c.line, "round: expected a number");
  double x = c.self.asDouble(), scale = std::pow(10.0, double(precision));
  double r = method == "ceil"    ? std::ceil(x * scale) / scale
             : method == "floor" ? std::floor(x * scale) / scale
                                 : std::nearbyint(x * scale) / scale;
  return Value::number(r);
}

//===----------------------------------------------------------------------===//
// Values and sequences
//===----------------------------------------------------------------------===//

/// length, count.
Value filterLength(Evaluator &ev, const Call &c) {
  return Value::integer(length(c.self, c.line));
}

/// d, default.
Value filterDefault(Evaluator &ev, const Call &c) {
  const Value *dflt = c.arg(0, "default_value");
  const Value *boolean = c.arg(1, "boolean");
  bool useDefault = c.self.kind == Kind::Undefined ||
                    (boolean && truthy(*boolean) && !truthy(c.self));
  if (useDefault)
    return dflt ? *dflt : Value::string("");
  return c.self;
}

Value filterAttr(Evaluator &ev, const Call &c) {
  return ev.getAttr(c.self, c.str(c.arg(0, "name")), c.line);
}

Value filterItems(Evaluator &ev, const Call &c) {
  if (c.self.kind == Kind::Undefined)
    return Value::makeList({});
  if (c.self.kind != Kind::Dict)
    unsupported(c.line, "items: expected a mapping, got " +
                            std::string(typeName(c.self)));
  Args none;
  return dictItems(ev, Call{"items", c.self, none, {}, c.line});
}

Value filterList(Evaluator &ev, const Call &c) {
  return Value::makeList(ev.iterate(c.self, c.line));
}

Value filterJoin(Evaluator &ev, const Call &c) {
  std::string sep = c.str(c.arg(0, "d"));
  const Value *attr = c.arg(1, "attribute");
  std::string out;
  std::vector<Value> items = ev.iterate(c.self, c.line);
  for (size_t k = 0; k < items.size(); ++k) {
    if (k)
      out += sep;
    out += toStr(attr ? attributePath(ev, items[k], toStr(*attr), c.line)
                      : items[k]);
    ev.checkSize(out.size(), c.line);
  }
  return Value::string(std::move(out));
}

/// first, last.
Value filterFirstOrLast(Evaluator &ev, const Call &c) {
  std::vector<Value> items = ev.iterate(c.self, c.line);
  if (items.empty())
    return Value::undefined("no " + c.name + " item, sequence was empty");
  return c.name == "first" ? items.front() : items.back();
}

Value filterReverse(Evaluator &ev, const Call &c) {
  const Value &v = c.self;
  if (v.kind == Kind::String) {
    std::vector<size_t> offs = codepointOffsets(*v.s);
    std::string out;
    for (size_t k = offs.size() - 1; k-- > 0;)
      out.append(*v.s, offs[k], offs[k + 1] - offs[k]);
    return Value::string(std::move(out));
  }
  std::vector<Value> items = ev.iterate(v, c.line);
  std::reverse(items.begin(), items.end());
  return Value::makeList(std::move(items));
}

/// select, reject: the items a test (or truth) keeps.
Value filterSelect(Evaluator &ev, const Call &c) {
  int line = c.line;
  std::vector<Value> out;
  std::string testName = c.args.empty() ? "" : c.str(&c.args[0]);
  Args testArgs(c.args.size() > 1 ? c.args.begin() + 1 : c.args.end(),
                c.args.end());
  for (const Value &item : ev.iterate(c.self, line)) {
    ev.step(line);
    bool r =
        testName.empty()
            ? truthy(item)
            : truthy(testNamed(testName, line)
                         .fn(ev, Call{testName, item, testArgs, {}, line}));
    if (r == (c.name == "select"))
      out.push_back(item);
  }
  return Value::makeList(std::move(out));
}

/// selectattr, rejectattr: the items whose attribute a test (or truth)
/// keeps.
Value filterSelectAttr(Evaluator &ev, const Call &c) {
  int line = c.line;
  if (c.args.empty())
    unsupported(line, c.name + " expects an attribute name");
  std::string attr = c.str(&c.args[0]);
  std::string testName = c.args.size() > 1 ? c.str(&c.args[1]) : "";
  Args testArgs(c.args.size() > 2 ? c.args.begin() + 2 : c.args.end(),
                c.args.end());
  std::vector<Value> out;
  for (const Value &item : ev.iterate(c.self, line)) {
    ev.step(line);
    Value a = attributePath(ev, item, attr, line);
    bool r = testName.empty()
                 ? truthy(a)
                 : truthy(testNamed(testName, line)
                              .fn(ev, Call{testName, a, testArgs, {}, line}));
    if (r == (c.name == "selectattr"))
      out.push_back(item);
  }
  return Value::makeList(std::move(out));
}

Value filterMap(Evaluator &ev, const Call &c) {
  int line = c.line;
  std::vector<Value> out;
  if (const Value *attr = c.kwarg("attribute")) {
    const Value *dflt = c.kwarg("default");
    for (const Value &item : ev.iterate(c.self, line)) {
      ev.step(line);
      Value a = attributePath(ev, item, toStr(*attr), line);
      out.push_back(a.kind == Kind::Undefined && dflt ? *dflt : a);
    }
    return Value::makeList(std::move(out));
  }
  if (c.args.empty())
    unsupported(line, "map expects a filter name or attribute=");
  std::string filterName = c.str(&c.args[0]);
  const Builtin *filter = findBuiltin(BuiltinKind::Filter, filterName);
  if (!filter)
    unsupported(line, "map: unknown filter '" + filterName + "'");
  Args rest(c.args.begin() + 1, c.args.end());
  for (const Value &item : ev.iterate(c.self, line)) {
    ev.step(line);
    out.push_back(filter->fn(ev, Call{filterName, item, rest, {}, line}));
  }
  return Value::makeList(std::move(out));
}

Value filterSum(Evaluator &ev, const Call &c) {
  const Value *attr = c.arg(0, "attribute");
  const Value *start = c.arg(1, "start");
  Value acc = start ? *start : Value::integer(0);
  for (const Value &item : ev.iterate(c.self, c.line))
    acc = ev.binaryOp(
        "+", acc, attr ? attributePath(ev, item, toStr(*attr), c.line) : item,
        c.line);
  return acc;
}

/// unique, sort, min, max, dictsort: the filters that order or compare
/// items by a key (the item, an attribute of it, or a dict entry's key or
/// value), case-insensitively by default.
Value filterOrdered(Evaluator &ev, const Call &c) {
  const std::string &n = c.name;
  int line = c.line;
  std::vector<Value> items =
      n == "dictsort" ? filterItems(ev, c).items() : ev.iterate(c.self, line);
  bool caseSensitive = false;
  const Value *attr = nullptr;
  bool reverse = false;
  if (n == "sort") {
    const Value *r = c.arg(0, "reverse");
    reverse = r && truthy(*r);
    const Value *cs = c.arg(1, "case_sensitive");
    caseSensitive = cs && truthy(*cs);
    attr = c.arg(2, "attribute");
  } else if (n == "dictsort") {
    const Value *cs = c.arg(0, "case_sensitive");
    caseSensitive = cs && truthy(*cs);
    const Value *r = c.arg(2, "reverse");
    reverse = r && truthy(*r);
  } else {
    const Value *cs = c.arg(0, "case_sensitive");
    caseSensitive = cs && truthy(*cs);
    attr = c.arg(1, "attribute");
  }
  auto keyOf = [&](const Value &item) -> Value {
    Value k = item;
    if (n == "dictsort") {
      const Value *by = c.arg(1, "by");
      k = (*item.list)[by && toStr(*by) == "value" ? 1 : 0];
    } else if (attr) {
      k = attributePath(ev, item, toStr(*attr), line);
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
      return Value::undefined("no " + n + " item, sequence was empty");
    size_t best = 0;
    for (size_t k = 1; k < items.size(); ++k) {
      int cmp = compareValues(keyOf(items[k]), keyOf(items[best]), line, "<");
      if (n == "min" ? cmp < 0 : cmp > 0)
        best = k;
    }
    return items[best];
  }
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value &a, const Value &b) {
                     int cmp = compareValues(keyOf(a), keyOf(b), line, "<");
                     return reverse ? cmp > 0 : cmp < 0;
                   });
  return Value::makeList(std::move(items));
}

} // namespace etllm::rt::llm::jinja
