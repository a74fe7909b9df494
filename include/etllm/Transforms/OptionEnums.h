//===- OptionEnums.h - Enumerated options, from one declaration -*- C++ -*-===//
//
// The enums of OptionEnums.def with their spellings (no LLVM: the
// export_config library uses them too): parse and print a
// value, list the spellings (for messages and the export_config schema),
// and `optionValues<E>()`, the modifier that gives a pass option (Passes.td)
// or a command-line option its accepted values and their help.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TRANSFORMS_OPTIONENUMS_H
#define ETLLM_TRANSFORMS_OPTIONENUMS_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace etllm {

// One `enum class` per ETLLM_OPTION_ENUM, its enumerators in declaration
// order.
#define ETLLM_OPTION_ENUM(Type, What) enum class Type : int {
#define ETLLM_OPTION_VALUE(Type, Enumerator, Spelling, Help) Enumerator,
#define ETLLM_OPTION_END(Type)                                                 \
  }                                                                            \
  ;
#include "etllm/Transforms/OptionEnums.def"

/// One value of an option enum.
struct OptionEnumValue {
  int value;
  const char *spelling;
  const char *help;
};

/// The values of one enum, in declaration order.
struct OptionEnumValues {
  const OptionEnumValue *first;
  size_t count;
  const OptionEnumValue *begin() const { return first; }
  const OptionEnumValue *end() const { return first + count; }
};

/// Every value of `E` in declaration order, and what `E` chooses.
template <typename E> OptionEnumValues optionEnumValues();
template <typename E> const char *optionEnumWhat();

#define ETLLM_OPTION_ENUM(Type, What)                                          \
  template <> inline const char *optionEnumWhat<Type>() { return What; }       \
  template <> inline OptionEnumValues optionEnumValues<Type>() {               \
    static const OptionEnumValue values[] = {
#define ETLLM_OPTION_VALUE(Type, Enumerator, Spelling, Help)                   \
  {int(Type::Enumerator), Spelling, Help},
#define ETLLM_OPTION_END(Type)                                                 \
  }                                                                            \
  ;                                                                            \
  return {values, sizeof(values) / sizeof(values[0])};                         \
  }
#include "etllm/Transforms/OptionEnums.def"

/// The value spelled `text`, if any.
template <typename E> std::optional<E> parseOptionEnum(std::string_view text) {
  for (const OptionEnumValue &v : optionEnumValues<E>())
    if (text == v.spelling)
      return E(v.value);
  return std::nullopt;
}

/// The spelling of `value`.
template <typename E> const char *spell(E value) {
  for (const OptionEnumValue &v : optionEnumValues<E>())
    if (v.value == int(value))
      return v.spelling;
  return "?";
}

/// "none, int4, int8" (for messages).
template <typename E> std::string optionEnumSpellings() {
  std::string out;
  for (const OptionEnumValue &v : optionEnumValues<E>())
    out += (out.empty() ? "" : ", ") + std::string(v.spelling);
  return out;
}

/// "<what E chooses>: <spellings> (default: the recipe's)", the help of a
/// recipe option that overrides the recipe's value of E (Pipelines.h).
template <typename E> const std::string &recipeOptionHelp() {
  static const std::string text = std::string(optionEnumWhat<E>()) + ": " +
                                  optionEnumSpellings<E>() +
                                  " (default: the recipe's)";
  return text;
}

/// A command-line option modifier (as llvm::cl::values) listing every value
/// of `E` with its help: `Option<..., "::etllm::LinearScheme", ...,
/// "::etllm::optionValues<::etllm::LinearScheme>()">` in Passes.td.
template <typename E> struct OptionValues {
  template <typename Opt> void apply(Opt &o) const {
    for (const OptionEnumValue &v : optionEnumValues<E>())
      o.getParser().addLiteralOption(v.spelling, E(v.value), v.help);
  }
};
template <typename E> OptionValues<E> optionValues() { return {}; }

} // namespace etllm

#endif // ETLLM_TRANSFORMS_OPTIONENUMS_H
