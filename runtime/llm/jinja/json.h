//===- json.h - Jinja values to and from JSON -------------------*- C++ -*-===//
//
// `tojson` as transformers defines it (Python's json.dumps with its
// ensure_ascii, indent, separators and sort_keys), and the render context
// read from JSON (ChatTemplate::renderJson).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_JSON_H
#define ETLLM_RUNTIME_LLM_JINJA_JSON_H

#include "value.h"

#include <nlohmann/json.hpp>

#include <string>

namespace etllm::rt::llm::jinja {

/// json.dumps' formatting options.
struct JsonStyle {
  bool indented = false;
  std::string indent; // per level
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false, ensureAscii = false;
};

/// Appends the JSON of `v` to `out` (json.dumps); fails at template line
/// `line` on a value JSON cannot hold, on nesting deeper than
/// kMaxValueDepth and once `out` is longer than `limit` bytes.
void toJson(std::string &out, const Value &v, const JsonStyle &st, int level,
            int line, size_t limit);

/// The value of JSON `j` (objects keep their key order).
Value fromJson(const nlohmann::ordered_json &j, int depth);

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_JSON_H
