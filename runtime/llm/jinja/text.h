//===- text.h - UTF-8 and Python string helpers for Jinja -------*- C++ -*-===//
//
// The string operations the interpreter needs with Python's semantics:
// code points of UTF-8 text (an invalid byte is a code point of its own, so
// arbitrary bytes never fail), str.isspace / strip / title / capitalize,
// and the repr() of floats and strings.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_JINJA_TEXT_H
#define ETLLM_RUNTIME_LLM_JINJA_TEXT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::llm::jinja {

/// Decodes the code point at `pos` (an invalid byte counts as one code point
/// of its own value, so arbitrary bytes never fail).
uint32_t decodeAt(const std::string &s, size_t pos, size_t *len);

/// Appends code point `cp` as UTF-8.
void appendUtf8(std::string &out, uint32_t cp);

/// Start offsets of the code points of `s`, then s.size().
std::vector<size_t> codepointOffsets(const std::string &s);

/// Python's str.isspace for one code point.
bool isPySpace(uint32_t cp);

/// Python str.strip/lstrip/rstrip; `chars` null = whitespace.
std::string pyStrip(const std::string &s, bool left, bool right,
                    const std::string *chars);

/// Whether every code point of `s` is whitespace (true for "").
bool allPySpace(const std::string &s);

/// ASCII case mapping (Jinja on str: non-ASCII letters are kept).
std::string asciiLower(std::string s);
std::string asciiUpper(std::string s);
bool isAsciiAlpha(char c);

/// Python's str.title and str.capitalize (ASCII letters).
std::string pyTitle(const std::string &s);
std::string pyCapitalize(const std::string &s);

/// Python float repr (shortest round-trip digits; scientific notation when
/// the exponent is < -4 or >= 16).
std::string pyFloatRepr(double v);

/// Python's repr() of a str.
std::string pyStrRepr(const std::string &s);

} // namespace etllm::rt::llm::jinja

#endif // ETLLM_RUNTIME_LLM_JINJA_TEXT_H
