//===- flags.cpp - Checked numbers from command lines and APIs ------------===//
#include "etllm/runtime/flags.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace etllm::rt {

namespace {

std::string quoted(const char *text) {
  std::string s(text ? text : "");
  if (s.size() > 64)
    s = s.substr(0, 64) + "...";
  return "'" + s + "'";
}

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18)
    return std::to_string(int64_t(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string prefix(std::string_view name) { return std::string(name) + ": "; }

Error missing(std::string_view name) {
  return Error(prefix(name) + "the value is missing");
}

bool inRange(double v, const NumberRange &r) {
  if (r.minOpen ? !(v > r.min) : !(v >= r.min))
    return false;
  if (r.maxOpen ? !(v < r.max) : !(v <= r.max))
    return false;
  return true;
}

/// Digits with an optional sign, nothing else.
bool isIntegerText(const char *s) {
  if (*s == '-' || *s == '+')
    ++s;
  if (!*s)
    return false;
  for (; *s; ++s)
    if (!std::isdigit(static_cast<unsigned char>(*s)))
      return false;
  return true;
}

} // namespace

std::string describe(const NumberRange &r) {
  return std::string(r.integer ? "an integer in " : "a number in ") +
         (r.minOpen ? "(" : "[") + number(r.min) + ", " + number(r.max) +
         (r.maxOpen ? ")" : "]");
}

Status checkNumber(std::string_view name, double value,
                   const NumberRange &range) {
  if (!std::isfinite(value))
    return Error(prefix(name) + number(value) + " is not a finite number");
  if (range.integer && value != std::floor(value))
    return Error(prefix(name) + number(value) + " is not an integer");
  if (!inRange(value, range))
    return Error(prefix(name) + number(value) + " is out of range (" +
                 describe(range) + ")");
  return Status();
}

Result<double> parseNumber(std::string_view name, const char *text,
                           const NumberRange &range) {
  if (!text)
    return missing(name);
  if (!text || !*text || std::isspace(static_cast<unsigned char>(*text)))
    return Error(prefix(name) + quoted(text) + " is not a number");
  if (range.integer) {
    if (!isIntegerText(text))
      return Error(prefix(name) + quoted(text) + " is not an integer");
  }
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (end == text || *end)
    return Error(prefix(name) + quoted(text) + " is not a number");
  if (!std::isfinite(v))
    return Error(prefix(name) + quoted(text) + " is not a finite number");
  if (!inRange(v, range))
    return Error(prefix(name) + quoted(text) + " is out of range (" +
                 describe(range) + ")");
  return v;
}

Result<int64_t> parseInteger(std::string_view name, const char *text,
                             int64_t min, int64_t max) {
  if (!text)
    return missing(name);
  if (!text || !isIntegerText(text))
    return Error(prefix(name) + quoted(text) + " is not an integer");
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno == ERANGE || *end || v < min || v > max)
    return Error(prefix(name) + quoted(text) +
                 " is out of range (an integer "
                 "in [" +
                 std::to_string(min) + ", " + std::to_string(max) + "])");
  return int64_t(v);
}

Result<uint64_t> parseUnsigned(std::string_view name, const char *text) {
  if (!text)
    return missing(name);
  if (!text || !*text || !isIntegerText(text) || *text == '-' || *text == '+')
    return Error(prefix(name) + quoted(text) +
                 " is not a non-negative integer");
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno == ERANGE || *end)
    return Error(prefix(name) + quoted(text) +
                 " is out of range (an integer in [0, 2^64 - 1])");
  return uint64_t(v);
}

Result<uint64_t> parseByteSize(std::string_view name, const char *text) {
  if (!text)
    return missing(name);
  std::string s(text ? text : "");
  size_t digits = 0;
  while (digits < s.size() &&
         std::isdigit(static_cast<unsigned char>(s[digits])))
    ++digits;
  std::string unit = s.substr(digits);
  int shift = -1;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "K" || unit == "KiB")
    shift = 10;
  else if (unit == "M" || unit == "MiB")
    shift = 20;
  else if (unit == "G" || unit == "GiB")
    shift = 30;
  else if (unit == "T" || unit == "TiB")
    shift = 40;
  if (digits == 0 || shift < 0)
    return Error(prefix(name) + quoted(text) +
                 " is not a byte count (digits with an optional K, M, G or "
                 "T suffix, e.g. 512M)");
  constexpr uint64_t kMax = uint64_t(1) << 60;
  errno = 0;
  unsigned long long v =
      std::strtoull(s.substr(0, digits).c_str(), nullptr, 10);
  if (errno == ERANGE || v > (kMax >> shift))
    return Error(prefix(name) + quoted(text) +
                 " is out of range (at most 2^60 bytes)");
  return uint64_t(v) << shift;
}

size_t hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

Status checkThreads(std::string_view name, int64_t threads) {
  if (threads < 1 || uint64_t(threads) > hardwareThreads())
    return Error(prefix(name) + std::to_string(threads) +
                 " is out of range (1 to the machine's " +
                 std::to_string(hardwareThreads()) + " hardware threads)");
  return Status();
}

Result<size_t> parseThreads(std::string_view name, const char *text) {
  Result<int64_t> n = parseInteger(name, text, 1, int64_t(hardwareThreads()));
  if (!n.ok()) {
    // The same message as checkThreads for a number out of the bound.
    Result<int64_t> any = parseInteger(name, text, INT64_MIN, INT64_MAX);
    if (any.ok())
      return Error(checkThreads(name, *any).message());
    return n.error();
  }
  return size_t(*n);
}

Result<std::pair<std::string, double>>
parsePathAndScale(std::string_view name, std::string_view text) {
  std::string w(name);
  if (text.empty())
    return Error(w + ": empty adapter path");
  std::pair<std::string, double> out{std::string(text), 1.0};
  size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    std::string tail(text.substr(colon + 1));
    char *end = nullptr;
    errno = 0;
    double v = tail.empty() ? 0 : std::strtod(tail.c_str(), &end);
    bool numeric = !tail.empty() && end == tail.c_str() + tail.size();
    if (numeric) {
      if (!std::isfinite(v) || errno == ERANGE)
        return Error(w + " '" + std::string(text) + "': the scale '" + tail +
                     "' is not a finite number");
      out.first = std::string(text.substr(0, colon));
      out.second = v;
      if (out.first.empty())
        return Error(w + " '" + std::string(text) + "': empty adapter path");
    }
  }
  return out;
}

} // namespace etllm::rt
