//===- methods.cpp - Jinja globals and methods ----------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h): the
// globals (range, namespace, dict, raise_exception, strftime_now) and the
// Python str/dict/list methods templates call, as declared in builtins.def.
//
//===----------------------------------------------------------------------===//
#include "builtins.h"

#include "evaluator.h"
#include "failure.h"
#include "text.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <limits>

namespace etllm::rt::llm::jinja {

//===----------------------------------------------------------------------===//
// Globals
//===----------------------------------------------------------------------===//

Value globalRaiseException(Evaluator &ev, const Call &c) {
  std::string msg = c.args.empty() ? "" : toStr(c.args[0]);
  throw TemplateFail{RenderFailure::Raised, msg};
}

Value globalRange(Evaluator &ev, const Call &c) {
  const Args &args = c.args;
  int line = c.line;
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
    ev.checkSize(out.size(), line);
    ev.step(line);
    if ((stepN > 0 && k > std::numeric_limits<int64_t>::max() - stepN) ||
        (stepN < 0 && k < std::numeric_limits<int64_t>::min() - stepN))
      break;
  }
  return Value::makeList(std::move(out));
}

/// namespace(...) and dict(...).
Value globalMapping(Evaluator &ev, const Call &c) {
  Value d = makeDict({}, c.name == "namespace" ? Kind::Namespace : Kind::Dict);
  if (d.kind == Kind::Namespace)
    ev.trackNamespace(d);
  for (const Value &a : c.args) {
    if (a.kind != Kind::Dict && a.kind != Kind::Namespace)
      unsupported(c.line, c.name + ": positional arguments must be mappings");
    for (const auto &[k, v] : a.dict->entries)
      d.dict->set(k, v);
  }
  for (const auto &[k, v] : c.kw)
    d.dict->set(k, v);
  return d;
}

Value globalStrftimeNow(Evaluator &ev, const Call &c) {
  std::string fmt = c.str(c.arg(0, "format"));
  if (fmt.size() > 256)
    unsupported(c.line, "strftime_now: the format is too long");
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[1024];
  size_t len =
      fmt.empty() ? 0 : std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
  return Value::string(std::string(buf, len));
}

//===----------------------------------------------------------------------===//
// loop, dict and list methods
//===----------------------------------------------------------------------===//

Value loopCycle(Evaluator &ev, const Call &c) {
  if (c.args.empty())
    unsupported(c.line, "loop.cycle needs at least one argument");
  return c.args[size_t(c.self.i) % c.args.size()];
}

Value dictItems(Evaluator &ev, const Call &c) {
  std::vector<Value> out;
  for (const auto &[k, v] : c.self.dict->entries)
    out.push_back(Value::makeList({Value::string(k), v}, true));
  return Value::makeList(std::move(out));
}

Value dictKeys(Evaluator &ev, const Call &c) {
  std::vector<Value> out;
  for (const auto &e : c.self.dict->entries)
    out.push_back(Value::string(e.first));
  return Value::makeList(std::move(out));
}

Value dictValues(Evaluator &ev, const Call &c) {
  std::vector<Value> out;
  for (const auto &e : c.self.dict->entries)
    out.push_back(e.second);
  return Value::makeList(std::move(out));
}

Value dictGet(Evaluator &ev, const Call &c) {
  const Value *key = c.arg(0, "key");
  if (!key)
    unsupported(c.line, "get expects a key");
  if (key->kind == Kind::String)
    if (const Value *v = c.self.dict->find(*key->s))
      return *v;
  const Value *d = c.arg(1, "default");
  return d ? *d : Value::none();
}

Value listIndex(Evaluator &ev, const Call &c) {
  if (c.args.empty())
    unsupported(c.line, "list.index expects an argument");
  for (size_t k = 0; k < c.self.list->size(); ++k)
    if (equals((*c.self.list)[k], c.args[0]))
      return Value::integer(int64_t(k));
  unsupported(c.line, "list.index(x): x not in list");
}

Value listCount(Evaluator &ev, const Call &c) {
  if (c.args.empty())
    unsupported(c.line, "list.count expects an argument");
  int64_t count = 0;
  for (const Value &v : *c.self.list)
    if (equals(v, c.args[0]))
      ++count;
  return Value::integer(count);
}

//===----------------------------------------------------------------------===//
// str methods
//===----------------------------------------------------------------------===//

/// strip, lstrip, rstrip.
Value strStrip(Evaluator &ev, const Call &c) {
  const Value *chars = c.arg(0, "chars");
  bool haveChars = chars && chars->kind != Kind::None;
  std::string set = haveChars ? c.str(chars) : std::string();
  return Value::string(pyStrip(*c.self.s, c.name != "rstrip",
                               c.name != "lstrip", haveChars ? &set : nullptr));
}

Value strUpper(Evaluator &ev, const Call &c) {
  return Value::string(asciiUpper(*c.self.s));
}

Value strLower(Evaluator &ev, const Call &c) {
  return Value::string(asciiLower(*c.self.s));
}

Value strTitle(Evaluator &ev, const Call &c) {
  return Value::string(pyTitle(*c.self.s));
}

Value strCapitalize(Evaluator &ev, const Call &c) {
  return Value::string(pyCapitalize(*c.self.s));
}

/// startswith, endswith (a string or a list of strings).
Value strStartsOrEndsWith(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  const Value *p = c.arg(0, "prefix");
  if (!p)
    unsupported(c.line, c.name + " expects an argument");
  std::vector<std::string> options;
  if (p->kind == Kind::List) {
    for (const Value &v : *p->list)
      options.push_back(c.str(&v));
  } else {
    options.push_back(c.str(p));
  }
  for (const std::string &o : options) {
    if (o.size() > s.size())
      continue;
    if (c.name == "startswith"
            ? s.compare(0, o.size(), o) == 0
            : s.compare(s.size() - o.size(), o.size(), o) == 0)
      return Value::boolean(true);
  }
  return Value::boolean(false);
}

/// split, rsplit.
Value strSplit(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  int line = c.line;
  const Value *sepV = c.arg(0, "sep");
  int64_t maxsplit = c.integer(c.arg(1, "maxsplit"), -1);
  std::vector<Value> out;
  if (!sepV || sepV->kind == Kind::None) {
    // Runs of whitespace, no empty strings; after maxsplit splits the
    // rest (leading whitespace dropped) is the last item.
    if (c.name == "rsplit" && maxsplit >= 0)
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
      ev.step(line);
    }
    return Value::makeList(std::move(out));
  }
  std::string sep = c.str(sepV);
  if (sep.empty())
    unsupported(line, "empty separator");
  std::vector<std::string> parts;
  if (c.name == "split") {
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
      ev.step(line);
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
      ev.step(line);
    }
    std::reverse(parts.begin(), parts.end());
  }
  for (auto &p : parts)
    out.push_back(Value::string(p));
  return Value::makeList(std::move(out));
}

Value strSplitlines(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
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

Value strReplace(Evaluator &ev, const Call &c) {
  std::string from = c.str(c.arg(0, "old"));
  std::string to = c.str(c.arg(1, "new"));
  int64_t count = c.integer(c.arg(2, "count"), -1);
  return Value::string(replaceAll(ev, *c.self.s, from, to, count, c.line));
}

Value strCount(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  std::string sub = c.str(c.arg(0, "sub"));
  if (sub.empty())
    return Value::integer(int64_t(codepointOffsets(s).size()));
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos;
       at = s.find(sub, at + sub.size()))
    ++n;
  return Value::integer(n);
}

/// find, rfind (a code point index, or -1).
Value strFind(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  std::string sub = c.str(c.arg(0, "sub"));
  size_t at = c.name == "find" ? s.find(sub) : s.rfind(sub);
  if (at == std::string::npos)
    return Value::integer(-1);
  return Value::integer(int64_t(codepointOffsets(s.substr(0, at)).size() - 1));
}

Value strJoin(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  const Value *it = c.arg(0, "iterable");
  if (!it)
    unsupported(c.line, "join expects an iterable");
  std::string out;
  std::vector<Value> items = ev.iterate(*it, c.line);
  for (size_t k = 0; k < items.size(); ++k) {
    if (k)
      out += s;
    out += c.str(&items[k]);
    ev.checkSize(out.size(), c.line);
  }
  return Value::string(std::move(out));
}

/// removeprefix, removesuffix.
Value strRemoveAffix(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  std::string a = c.str(c.arg(0, "prefix"));
  if (c.name == "removeprefix" && s.compare(0, a.size(), a) == 0)
    return Value::string(s.substr(a.size()));
  if (c.name == "removesuffix" && a.size() <= s.size() &&
      s.compare(s.size() - a.size(), a.size(), a) == 0 && !a.empty())
    return Value::string(s.substr(0, s.size() - a.size()));
  return Value::string(s);
}

/// isdigit, isalpha, isalnum, isspace, isupper, islower (ASCII classes).
Value strIsClass(Evaluator &ev, const Call &c) {
  const std::string &s = *c.self.s;
  const std::string &m = c.name;
  if (s.empty())
    return Value::boolean(false);
  bool all = true, anyCased = false;
  for (unsigned char ch : s) {
    bool ok = m == "isdigit"   ? (ch >= '0' && ch <= '9')
              : m == "isalpha" ? isAsciiAlpha(char(ch))
              : m == "isalnum"
                  ? (isAsciiAlpha(char(ch)) || (ch >= '0' && ch <= '9'))
              : m == "isspace" ? isPySpace(ch)
              : m == "isupper" ? !(ch >= 'a' && ch <= 'z')
                               : !(ch >= 'A' && ch <= 'Z');
    if (isAsciiAlpha(char(ch)))
      anyCased = true;
    all = all && ok;
  }
  if (m == "isupper" || m == "islower")
    return Value::boolean(all && anyCased);
  return Value::boolean(all);
}

} // namespace etllm::rt::llm::jinja
