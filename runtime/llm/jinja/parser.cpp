//===- parser.cpp - Jinja tokens to a syntax tree -------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h). A
// recursive-descent parser with Jinja's operator precedence; a filter or
// test is resolved against the builtins table here, so a template that uses
// one the interpreter lacks fails at parse time (and so at export).
//
//===----------------------------------------------------------------------===//
#include "parser.h"

#include "builtins.h"
#include "failure.h"

#include <algorithm>
#include <set>

namespace etllm::rt::llm::jinja {
namespace {

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
      const Builtin *builtin = findBuiltin(BuiltinKind::Filter, name);
      if (!builtin)
        syntaxError(line, "unknown filter '" + name + "'");
      auto f = make(EK::Filter, line);
      f->name = name;
      f->builtin = builtin;
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
    const Builtin *builtin = findBuiltin(BuiltinKind::Test, name);
    if (!builtin)
      syntaxError(line, "unknown test '" + name + "'");
    t->name = name;
    t->builtin = builtin;
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

Body parse(std::vector<Token> tokens, int maxDepth) {
  return Parser(std::move(tokens), maxDepth).parseTemplate();
}

} // namespace etllm::rt::llm::jinja
