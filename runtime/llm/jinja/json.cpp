//===- json.cpp - Jinja values to and from JSON ---------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h).
//
//===----------------------------------------------------------------------===//
#include "json.h"

#include "failure.h"
#include "text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace etllm::rt::llm::jinja {

namespace {

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

} // namespace

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

} // namespace etllm::rt::llm::jinja
