//===- result.h - Error values for the etllm runtime ------------*- C++ -*-===//
//
// Errors in the runtime are values, never crashes or exceptions: every
// function that can fail on user input returns `Status` or `Result<T>`.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_RESULT_H
#define ETLLM_RUNTIME_RESULT_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace etllm::rt {

/// A failure: a human-readable message that names the file/field at fault.
class Error {
public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string &message() const { return message_; }

private:
  std::string message_;
};

/// Success, or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error e) : error_(std::move(e.message())), ok_(false) {}
  static Status success() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string &message() const { return error_; }

private:
  std::string error_;
  bool ok_ = true;
};

/// A value of type T, or an Error.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T &value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  T &&value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  const T &value() const & {
    assert(ok());
    return std::get<T>(v_);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const std::string &message() const {
    assert(!ok());
    return std::get<Error>(v_).message();
  }
  Error error() const { return std::get<Error>(v_); }
  /// Converts a failed result to a Status (for propagation).
  Status status() const { return ok() ? Status() : Status(error()); }

private:
  std::variant<T, Error> v_;
};

} // namespace etllm::rt

/// Propagates a failed Status/Result from the enclosing function.
#define ETLLM_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    auto etllm_status_ = (expr);                                               \
    if (!etllm_status_.ok())                                                   \
      return ::etllm::rt::Error(etllm_status_.message());                      \
  } while (0)

/// Assigns a Result's value to `lhs`, or propagates its error from the
/// enclosing function.
#define ETLLM_ASSIGN_OR_RETURN(lhs, expr)                                      \
  do {                                                                         \
    auto etllm_result_ = (expr);                                               \
    if (!etllm_result_.ok())                                                   \
      return etllm_result_.error();                                            \
    lhs = std::move(etllm_result_.value());                                    \
  } while (0)

#endif // ETLLM_RUNTIME_RESULT_H
