//===- text.cpp - UTF-8 and Python string helpers for Jinja ---------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h).
//
//===----------------------------------------------------------------------===//
#include "text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace etllm::rt::llm::jinja {

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

std::string pyTitle(const std::string &s) {
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

std::string pyCapitalize(const std::string &s) {
  std::string out = asciiLower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
    out[0] = char(out[0] - 'a' + 'A');
  return out;
}

} // namespace etllm::rt::llm::jinja
