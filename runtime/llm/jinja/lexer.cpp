//===- lexer.cpp - Jinja template source to tokens ------------------------===//
//
// Part of etllm's chat-template interpreter (see chat_template.h).
//
//===----------------------------------------------------------------------===//
#include "lexer.h"

#include "failure.h"
#include "text.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace etllm::rt::llm::jinja {
namespace {

/// Python's "unicode-escape" decoding of a string literal's body, as Jinja's
/// lexer does it (unknown escapes are kept).
std::string unescapeLiteral(const std::string &raw, int line) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out += c;
      continue;
    }
    char e = raw[++i];
    auto hex = [&](size_t digits) -> uint32_t {
      uint32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= raw.size())
          syntaxError(line, "truncated escape in a string literal");
        char h = raw[i + k];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0)
          syntaxError(line, "bad escape in a string literal");
        v = v * 16 + uint32_t(d);
      }
      i += digits;
      return v;
    };
    switch (e) {
    case '\n':
      break; // line continuation
    case '\\':
      out += '\\';
      break;
    case '\'':
      out += '\'';
      break;
    case '"':
      out += '"';
      break;
    case 'a':
      out += '\a';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'v':
      out += '\v';
      break;
    case 'x':
      appendUtf8(out, hex(2));
      break;
    case 'u':
      appendUtf8(out, hex(4));
      break;
    case 'U': {
      uint32_t cp = hex(8);
      if (cp > 0x10ffff)
        syntaxError(line, "\\U escape out of range");
      appendUtf8(out, cp);
      break;
    }
    default:
      if (e >= '0' && e <= '7') {
        uint32_t v = uint32_t(e - '0');
        for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' &&
                        raw[i + 1] <= '7';
             ++k)
          v = v * 8 + uint32_t(raw[++i] - '0');
        appendUtf8(out, v);
      } else {
        out += '\\';
        out += e;
      }
    }
  }
  return out;
}

class Lexer {
public:
  Lexer(std::string_view source, size_t maxTokens) : maxTokens_(maxTokens) {
    // Jinja: newlines normalized to \n, one trailing newline dropped
    // (keep_trailing_newline=False).
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n')
          ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n')
      src_.pop_back();
  }

  std::vector<Token> run() {
    size_t n = src_.size();
    while (pos_ <= n) {
      size_t tag = findTag(pos_);
      size_t end = tag == std::string::npos ? n : tag;
      std::string text = src_.substr(pos_, end - pos_);
      if (tag == std::string::npos) {
        emitData(std::move(text));
        break;
      }
      char kind = src_[tag + 1];
      size_t p = tag + 2;
      char sign = 0;
      if (p < n && (src_[p] == '-' || src_[p] == '+'))
        sign = src_[p++];
      if (sign == '-') {
        text = pyStrip(text, false, true, nullptr);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: whitespace from the line start to a block or
        // comment tag goes.
        size_t nl = text.rfind('\n');
        size_t lpos = nl == std::string::npos ? 0 : nl + 1;
        if ((lpos > 0 || lineStarting_) && lpos < text.size() &&
            allPySpace(text.substr(lpos)))
          text.resize(lpos);
      }
      emitData(std::move(text));
      line_ = lineAt(tag);
      if (kind == '#') {
        lexComment(p);
      } else if (kind == '%' && isRawBegin(p)) {
        lexRaw(p);
      } else {
        lexTag(kind == '{', p);
      }
    }
    push({Tok::Eof, "", lineAt(n)});
    return std::move(tokens_);
  }

private:
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t lineCursor_ = 0;
  int lineCount_ = 1;
  bool lineStarting_ = true;
  size_t maxTokens_;
  std::vector<Token> tokens_;

  int lineAt(size_t off) {
    // Lines are counted incrementally (offsets only grow).
    if (off < lineCursor_) {
      lineCursor_ = 0;
      lineCount_ = 1;
    }
    for (; lineCursor_ < off && lineCursor_ < src_.size(); ++lineCursor_)
      if (src_[lineCursor_] == '\n')
        ++lineCount_;
    return lineCount_;
  }

  void push(Token t) {
    if (tokens_.size() >= maxTokens_)
      syntaxError(t.line, "the template has too many tokens");
    tokens_.push_back(std::move(t));
  }

  void emitData(std::string text) {
    if (!text.empty())
      push({Tok::Data, std::move(text), line_});
  }

  size_t findTag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' &&
          (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return std::string::npos;
  }

  /// After a tag end: `-` strips all following whitespace, trim_blocks one
  /// newline (block and comment ends only).
  void afterTagEnd(size_t p, bool stripAll, bool trimNewline) {
    size_t q = p;
    if (stripAll) {
      while (q < src_.size()) {
        size_t n;
        if (!isPySpace(decodeAt(src_, q, &n)))
          break;
        q += n;
      }
    } else if (trimNewline && q < src_.size() && src_[q] == '\n') {
      ++q;
    }
    lineStarting_ = q > p ? src_[q - 1] == '\n' : false;
    pos_ = q;
  }

  void lexComment(size_t p) {
    size_t q = src_.find("#}", p);
    if (q == std::string::npos)
      syntaxError(line_, "unclosed comment (no '#}')");
    bool strip = q > p && src_[q - 1] == '-';
    bool keep = q > p && src_[q - 1] == '+';
    afterTagEnd(q + 2, strip, /*trimNewline=*/!keep);
  }

  bool isRawBegin(size_t p) const {
    size_t q = p;
    while (q < src_.size() &&
           (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n'))
      ++q;
    if (src_.compare(q, 3, "raw") != 0)
      return false;
    q += 3;
    while (q < src_.size() &&
           (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n'))
      ++q;
    return src_.compare(q, 2, "%}") == 0 || src_.compare(q, 3, "-%}") == 0;
  }

  void lexRaw(size_t p) {
    size_t q = src_.find("%}", p);
    bool strip = src_[q - 1] == '-';
    size_t bodyStart = q + 2;
    if (strip)
      while (bodyStart < src_.size() && isPySpace(uint8_t(src_[bodyStart])))
        ++bodyStart;
    else if (bodyStart < src_.size() && src_[bodyStart] == '\n')
      ++bodyStart;
    // Find {%[-+]? endraw [-]?%}.
    for (size_t i = bodyStart; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%')
        continue;
      size_t k = i + 2;
      char sign = 0;
      if (k < src_.size() && (src_[k] == '-' || src_[k] == '+'))
        sign = src_[k++];
      while (k < src_.size() &&
             (src_[k] == ' ' || src_[k] == '\t' || src_[k] == '\n'))
        ++k;
      if (src_.compare(k, 6, "endraw") != 0)
        continue;
      k += 6;
      while (k < src_.size() &&
             (src_[k] == ' ' || src_[k] == '\t' || src_[k] == '\n'))
        ++k;
      bool endStrip = false;
      if (k < src_.size() && src_[k] == '-') {
        endStrip = true;
        ++k;
      }
      if (src_.compare(k, 2, "%}") != 0)
        continue;
      std::string body = src_.substr(bodyStart, i - bodyStart);
      if (sign == '-')
        body = pyStrip(body, false, true, nullptr);
      emitData(std::move(body));
      afterTagEnd(k + 2, endStrip, true);
      return;
    }
    syntaxError(line_, "unclosed raw block (no endraw)");
  }

  void lexTag(bool variable, size_t p) {
    push({variable ? Tok::VarBegin : Tok::BlockBegin, "", line_});
    std::vector<char> balance;
    size_t n = src_.size();
    while (true) {
      while (p < n && isPySpace(uint8_t(src_[p])))
        ++p;
      if (p >= n)
        syntaxError(lineAt(p), variable ? "unclosed '{{' (no '}}')"
                                        : "unclosed '{%' (no '%}')");
      int line = lineAt(p);
      if (balance.empty()) {
        if (variable) {
          if (src_.compare(p, 3, "-}}") == 0) {
            push({Tok::VarEnd, "", line});
            afterTagEnd(p + 3, true, false);
            return;
          }
          if (src_.compare(p, 2, "}}") == 0) {
            push({Tok::VarEnd, "", line});
            afterTagEnd(p + 2, false, false);
            return;
          }
        } else {
          if (src_.compare(p, 3, "-%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 3, true, true);
            return;
          }
          if (src_.compare(p, 3, "+%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 3, false, false);
            return;
          }
          if (src_.compare(p, 2, "%}") == 0) {
            push({Tok::BlockEnd, "", line});
            afterTagEnd(p + 2, false, true);
            return;
          }
        }
      }
      char c = src_[p];
      if (c == '\'' || c == '"') {
        size_t q = p + 1;
        while (q < n && src_[q] != c) {
          if (src_[q] == '\\')
            ++q;
          ++q;
        }
        if (q >= n)
          syntaxError(line, "unterminated string literal");
        push({Tok::String, unescapeLiteral(src_.substr(p + 1, q - p - 1), line),
              line});
        p = q + 1;
        continue;
      }
      if (c >= '0' && c <= '9') {
        size_t q = p;
        auto digits = [&] {
          size_t start = q;
          while (q < n && ((src_[q] >= '0' && src_[q] <= '9') ||
                           (src_[q] == '_' && q > start && q + 1 < n &&
                            src_[q + 1] >= '0' && src_[q + 1] <= '9')))
            ++q;
        };
        digits();
        bool isFloat = false;
        if (q + 1 < n && src_[q] == '.' && src_[q + 1] >= '0' &&
            src_[q + 1] <= '9') {
          isFloat = true;
          ++q;
          digits();
        }
        if (q < n && (src_[q] == 'e' || src_[q] == 'E')) {
          size_t save = q;
          ++q;
          if (q < n && (src_[q] == '+' || src_[q] == '-'))
            ++q;
          if (q < n && src_[q] >= '0' && src_[q] <= '9') {
            isFloat = true;
            digits();
          } else {
            q = save;
          }
        }
        std::string num;
        for (size_t k = p; k < q; ++k)
          if (src_[k] != '_')
            num += src_[k];
        Token t{isFloat ? Tok::Float : Tok::Int, num, line};
        if (isFloat) {
          t.fval = std::strtod(num.c_str(), nullptr);
        } else {
          errno = 0;
          char *end = nullptr;
          long long v = std::strtoll(num.c_str(), &end, 10);
          if (errno == ERANGE)
            syntaxError(line, "integer literal " + num + " is out of range");
          t.ival = v;
        }
        push(std::move(t));
        p = q;
        continue;
      }
      if (isAsciiAlpha(c) || c == '_') {
        size_t q = p;
        while (q < n && (isAsciiAlpha(src_[q]) || src_[q] == '_' ||
                         (src_[q] >= '0' && src_[q] <= '9')))
          ++q;
        push({Tok::Name, src_.substr(p, q - p), line});
        p = q;
        continue;
      }
      static const char *kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+",
                                   "-",  "*",  "/",  "%",  "~",  "<",  ">",
                                   "=",  "(",  ")",  "[",  "]",  "{",  "}",
                                   ",",  ".",  ":",  "|",  ";"};
      const char *op = nullptr;
      for (const char *o : kOps)
        if (src_.compare(p, std::strlen(o), o) == 0) {
          op = o;
          break;
        }
      if (!op)
        syntaxError(line,
                    std::string("unexpected character '") + c + "' in a tag");
      if (*op == '(' || *op == '[' || *op == '{') {
        balance.push_back(*op);
      } else if (*op == ')' || *op == ']' || *op == '}') {
        char open = *op == ')' ? '(' : *op == ']' ? '[' : '{';
        if (balance.empty() || balance.back() != open)
          syntaxError(line, std::string("unexpected '") + op + "'");
        balance.pop_back();
      }
      push({Tok::Op, op, line});
      p += std::strlen(op);
    }
  }
};

} // namespace

std::vector<Token> lex(std::string_view source, size_t maxTokens) {
  return Lexer(source, maxTokens).run();
}

} // namespace etllm::rt::llm::jinja
