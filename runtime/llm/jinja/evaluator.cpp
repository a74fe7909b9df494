//===- evaluator.cpp - Rendering a Jinja syntax tree ----------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h).
//
//===----------------------------------------------------------------------===//
#include "evaluator.h"

#include "failure.h"
#include "text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace etllm::rt::llm::jinja {
namespace {

bool indexOf(int64_t idx, size_t size, size_t *out) {
  int64_t n = int64_t(size);
  if (idx < 0)
    idx += n;
  if (idx < 0 || idx >= n)
    return false;
  *out = size_t(idx);
  return true;
}

bool addOverflows(int64_t a, int64_t b, int64_t *r) {
  return __builtin_add_overflow(a, b, r);
}

} // namespace

Evaluator::DepthGuard::DepthGuard(Evaluator &ev, int line) : e(ev) {
  if (++e.depth_ > e.limits_.maxDepth * 2)
    unsupported(line, "the template recurses too deeply");
}

Evaluator::Evaluator(const Body &body, const TemplateLimits &limits,
                     Value globals)
    : body_(body), limits_(limits) {
  frames_.emplace_back();
  for (auto &[k, v] : globals.dict->entries)
    frames_.back()[k] = v;
}

Evaluator::~Evaluator() {
  for (const std::weak_ptr<DictData> &w : namespaces_)
    if (std::shared_ptr<DictData> d = w.lock())
      std::vector<std::pair<std::string, Value>>().swap(d->entries);
}

std::string Evaluator::run() {
  exec(body_, 0);
  return std::move(out_);
}

void Evaluator::step(int line) {
  if (++steps_ > limits_.maxSteps)
    unsupported(line, "the template exceeded its evaluation budget (" +
                          std::to_string(limits_.maxSteps) + " steps)");
}

void Evaluator::checkSize(size_t bytes, int line) const {
  if (bytes > limits_.maxOutputBytes)
    unsupported(line, "the template's output is larger than the limit (" +
                          std::to_string(limits_.maxOutputBytes) + " bytes)");
}

void Evaluator::emit(const std::string &s, int line) {
  checkSize(out_.size() + s.size(), line);
  out_ += s;
}

// Variables -------------------------------------------------------------------

Value Evaluator::lookup(const std::string &name) const {
  for (size_t k = frames_.size(); k-- > 0;) {
    auto it = frames_[k].find(name);
    if (it != frames_[k].end())
      return it->second;
  }
  if (const Builtin *global = findBuiltin(BuiltinKind::Global, name))
    return Value::callable(name, global, nullptr);
  return Value::undefined("'" + name + "' is undefined");
}

void Evaluator::assign(const Target &t, const Value &v, int line) {
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

// Statements ------------------------------------------------------------------

Evaluator::Flow Evaluator::exec(const Body &body, int line) {
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

void Evaluator::execFor(const Stmt &s) {
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
  static const Builtin *cycle = findBuiltin(BuiltinKind::LoopMethod, "cycle");
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
    loop.emplace_back("cycle", Value::callable("loop.cycle", cycle,
                                               std::make_shared<const Value>(
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
std::vector<Value> Evaluator::iterate(const Value &v, int line) {
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

// Expressions -----------------------------------------------------------------

Value Evaluator::eval(const Expr &e) {
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
    bool r =
        truthy(e.builtin->fn(*this, Call{e.name, v, args, kwargs, e.line}));
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

void Evaluator::evalArgs(const Expr &e, Args &args, Kwargs &kwargs) {
  for (const ExprP &a : e.args)
    args.push_back(eval(*a));
  for (const auto &[k, v] : e.kwargs)
    kwargs.emplace_back(k, eval(*v));
}

Value Evaluator::getAttr(const Value &obj, const std::string &name, int line) {
  switch (obj.kind) {
  case Kind::Undefined:
    unsupported(line, undefinedMessage(obj));
  case Kind::Dict: {
    if (const Builtin *method = findBuiltin(BuiltinKind::DictMethod, name))
      return Value::callable("dict." + name, method,
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
    if (const Builtin *method = findBuiltin(BuiltinKind::StrMethod, name))
      return Value::callable("str." + name, method,
                             std::make_shared<const Value>(obj));
    return Value::undefined("'str object' has no attribute '" + name + "'");
  }
  case Kind::List:
    if (const Builtin *method = findBuiltin(BuiltinKind::ListMethod, name))
      return Value::callable("list." + name, method,
                             std::make_shared<const Value>(obj));
    return Value::undefined("'list object' has no attribute '" + name + "'");
  default:
    return Value::undefined(std::string("'") + typeName(obj) +
                            " object' has no attribute '" + name + "'");
  }
}

Value Evaluator::getItem(const Value &obj, const Value &key, int line) {
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
        return Value::string(obj.s->substr(offs[at], offs[at + 1] - offs[at]));
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

Value Evaluator::slice(const Value &obj, const Value &start, const Value &stop,
                       const Value &stepV, int line) {
  if (obj.kind == Kind::Undefined)
    unsupported(line, undefinedMessage(obj));
  auto idx = [&](const Value &v, const char *what) -> std::optional<int64_t> {
    if (v.kind == Kind::None)
      return std::nullopt;
    if (!v.isIntLike())
      unsupported(line,
                  std::string("slice ") + what + " must be an integer or none");
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

// Operators -------------------------------------------------------------------

Value Evaluator::binaryOp(const std::string &op, const Value &l, const Value &r,
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
    if (unit && uint64_t(times) > limits_.maxOutputBytes / unit)
      checkSize(limits_.maxOutputBytes + 1, line);
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

bool Evaluator::contains(const Value &container, const Value &item, int line) {
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
    unsupported(line, std::string("argument of type '") + typeName(container) +
                          "' is not iterable");
  }
}

bool Evaluator::compareOp(const std::string &op, const Value &l, const Value &r,
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

// Calls -----------------------------------------------------------------------

Value Evaluator::call(const Value &callee, const Args &args, const Kwargs &kw,
                      int line) {
  if (callee.kind == Kind::Undefined)
    unsupported(line, undefinedMessage(callee));
  if (callee.kind != Kind::Callable)
    unsupported(line, std::string("'") + typeName(callee) +
                          "' object is not callable");
  if (!callee.builtin)
    unsupported(line, "'" + callee.name + "' cannot be called");
  static const Value none = Value::none();
  return callee.builtin->fn(*this, Call{callee.builtin->name,
                                        callee.self ? *callee.self : none, args,
                                        kw, line});
}

Value Evaluator::applyFilterChain(const Expr &f, const Value &input) {
  Value v = !f.a                      ? input
            : f.a->kind == EK::Filter ? applyFilterChain(*f.a, input)
                                      : eval(*f.a);
  Args args;
  Kwargs kw;
  evalArgs(f, args, kw);
  return f.builtin->fn(*this, Call{f.name, v, args, kw, f.line});
}

} // namespace etllm::rt::llm::jinja
