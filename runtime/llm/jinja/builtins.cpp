//===- builtins.cpp - The table of Jinja builtins -------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h): the table
// builtins.def declares, its lookup, and the argument helpers the
// implementations share.
//
//===----------------------------------------------------------------------===//
#include "builtins.h"

#include "evaluator.h"
#include "failure.h"
#include "text.h"

#include <string_view>
#include <unordered_map>

namespace etllm::rt::llm::jinja {
namespace {

constexpr Builtin kBuiltins[] = {
#define JINJA_BUILTIN(Kind, Name, Function) {BuiltinKind::Kind, Name, Function},
#include "builtins.def"
};

} // namespace

const Builtin *findBuiltin(BuiltinKind kind, const std::string &name) {
  // Keyed by the kind's byte then the name.
  static const std::unordered_map<std::string, const Builtin *> index = [] {
    std::unordered_map<std::string, const Builtin *> m;
    for (const Builtin &b : kBuiltins)
      m.emplace(std::string(1, char(b.kind)) + b.name, &b);
    return m;
  }();
  auto it = index.find(std::string(1, char(kind)) + name);
  return it == index.end() ? nullptr : it->second;
}

const Value *Call::kwarg(const char *key) const {
  for (const auto &[k, v] : kw)
    if (k == key)
      return &v;
  return nullptr;
}

const Value *Call::arg(size_t pos, const char *key) const {
  if (pos < args.size())
    return &args[pos];
  return kwarg(key);
}

std::string Call::str(const Value *v, const std::string &dflt) const {
  if (!v)
    return dflt;
  if (v->kind != Kind::String)
    unsupported(line,
                name + ": expected a string argument, got " + typeName(*v));
  return *v->s;
}

int64_t Call::integer(const Value *v, int64_t dflt) const {
  if (!v || v->kind == Kind::None)
    return dflt;
  if (!v->isIntLike())
    unsupported(line,
                name + ": expected an integer argument, got " + typeName(*v));
  return v->asInt();
}

std::string replaceAll(Evaluator &ev, const std::string &s,
                       const std::string &from, const std::string &to,
                       int64_t count, int line) {
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
      ev.checkSize(out.size(), line);
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
    ev.checkSize(out.size(), line);
    start = at + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

} // namespace etllm::rt::llm::jinja
