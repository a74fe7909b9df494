//===- ast.h - The syntax tree of a Jinja template --------------*- C++ -*-===//
//
// What the parser builds and the evaluator walks: statements (text, prints,
// if/for/set blocks, loop controls) holding expressions. Filter and test
// nodes carry the builtin the parser resolved their name to.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_AST_H
#define ETLLM_RUNTIME_LLM_JINJA_AST_H

#include "value.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt::llm::jinja {

struct Builtin;

struct Expr;
using ExprP = std::unique_ptr<Expr>;

/// An expression kind.
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

/// An expression node.
struct Expr {
  EK kind;
  int line = 0;
  Value literal;
  std::string name;                 // Name, Attr, Filter, Test, Binary operator
  const Builtin *builtin = nullptr; // Filter, Test: resolved by the parser
  ExprP a, b, c, d; // operands (Slice: a[b:c:d]; Cond: b if a else c)
  std::vector<ExprP> args;
  std::vector<std::pair<std::string, ExprP>> kwargs;
  std::vector<std::pair<std::string, ExprP>> compares;
  bool negated = false;
};

/// What a for loop or set statement assigns to.
struct Target {
  std::vector<std::string> names;
  bool tuple = false;
  std::string attr; // `set ns.attr = ...`: names[0] is the namespace
};

struct Stmt;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

/// A statement kind.
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

/// A statement node.
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

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_AST_H
