//===- ModelConfigRecords.cpp - The model config's fields, read -----------===//
//
// Reads and checks the records of include/etllm/Models/ModelConfig.td for
// the model-config generators (ModelConfigRecords.h).
//
//===----------------------------------------------------------------------===//
#include "ModelConfigRecords.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/TableGen/Error.h"

#include <functional>
#include <map>

namespace etllm::tblgen {

[[noreturn]] void fail(const Record *def, const llvm::Twine &msg) {
  llvm::PrintFatalError(def, msg);
}

bool isSnakeCase(StringRef s) {
  return !s.empty() && llvm::isLower(s.front()) &&
         llvm::all_of(s, [](char c) {
           return llvm::isLower(c) || llvm::isDigit(c) || c == '_';
         });
}

/// The field's enumerator in models::ConfigField ("numExperts" ->
/// "NumExperts").
std::string enumerator(StringRef member) {
  std::string s = member.str();
  s[0] = llvm::toUpper(s[0]);
  return s;
}

/// The name of an AttrDef parameter's getter, as mlir-tblgen spells it.
std::string getter(StringRef key) {
  return "get" + llvm::convertToCamelFromSnakeCase(key, true);
}

/// A parameter struct member ("n_group" -> "nGroup").
std::string paramMember(StringRef key) {
  return llvm::convertToCamelFromSnakeCase(key, false);
}

/// "GET_" + upper snake of a struct name + "_MEMBERS".
std::string membersSection(StringRef structName) {
  std::string out = "GET_";
  for (size_t i = 0; i < structName.size(); ++i) {
    char c = structName[i];
    if (i > 0 && llvm::isUpper(c))
      out += '_';
    out += llvm::toUpper(c);
  }
  return out + "_MEMBERS";
}

/// `text` as `///` lines of at most 80 columns after `indent`.
void emitDoc(llvm::raw_ostream &os, StringRef text, StringRef indent) {
  llvm::SmallVector<StringRef> words;
  llvm::SplitString(text, words);
  std::string line;
  size_t width = 80 - indent.size() - 4;
  for (StringRef w : words) {
    if (!line.empty() && line.size() + 1 + w.size() > width) {
      os << indent << "/// " << line << "\n";
      line.clear();
    }
    if (!line.empty())
      line += ' ';
    line += w.str();
  }
  if (!line.empty())
    os << indent << "/// " << line << "\n";
}

/// A C++ string literal of `s`.
std::string quoted(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// "a, b or c".
std::string alternatives(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

/// A real default as a C++ double literal ("1" -> "1.0").
std::string realLiteral(StringRef v) {
  std::string s = v.empty() ? "0.0" : v.str();
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string scalarInit(const Field &f, StringRef v) {
  if (f.kind == "int")
    return " = " + (v.empty() ? std::string("0") : v.str());
  if (f.kind == "real")
    return " = " + realLiteral(v);
  if (f.kind == "bool")
    return " = " + (v.empty() ? std::string("false") : v.str());
  if ((f.kind == "string" || f.kind == "choice") && !v.empty())
    return " = " + quoted(v);
  return "";
}

static void checkNumber(const Field &f, StringRef v, bool integer) {
  if (v.empty())
    return;
  if (integer) {
    int64_t i;
    if (v.getAsInteger(10, i))
      fail(f.def, "field '" + f.key + "': default '" + v +
                      "' is not an integer");
  } else {
    double d;
    if (v.getAsDouble(d))
      fail(f.def, "field '" + f.key + "': default '" + v +
                      "' is not a number");
  }
}

/// The spelling a (possibly empty) enum default stands for.
const EnumCase &enumDefault(const Field &f, StringRef v) {
  if (v.empty())
    return f.cases.front();
  for (const EnumCase &c : f.cases)
    if (c.spelling == v)
      return c;
  fail(f.def, "field '" + f.key + "': default '" + v + "' is not one of " +
                  f.enumName + "'s spellings");
}

static std::vector<EnumCase> readCases(const Record *enumDef) {
  std::vector<EnumCase> cases;
  for (const Record *c : enumDef->getValueAsListOfDefs("cases"))
    cases.push_back({c->getValueAsString("cppName").str(),
                     c->getValueAsString("spelling").str(),
                     c->getValueAsString("description").str()});
  if (cases.empty())
    fail(enumDef, "an enum needs a case");
  return cases;
}

/// The fields, in the order of the defset, checked.
std::vector<Field> readFields(const RecordKeeper &records) {
  const auto *list =
      llvm::dyn_cast_or_null<llvm::ListInit>(records.getGlobal(
          "ModelConfigFields"));
  if (!list)
    llvm::PrintFatalError("no defset 'ModelConfigFields' (ModelConfig.td)");
  std::vector<Field> fields;
  std::map<std::string, llvm::StringSet<>> keys, members;
  llvm::StringSet<> attrKeys;
  for (const llvm::Init *init : *list) {
    const Record *def = llvm::cast<llvm::DefInit>(init)->getDef();
    Field f;
    f.def = def;
    f.key = def->getValueAsString("key").str();
    f.member = def->getValueAsString("member").str();
    f.summary = def->getValueAsString("summary").str();
    f.description = def->getValueAsString("description").str();
    const Record *type = def->getValueAsDef("type");
    f.kind = type->getValueAsString("kind").str();
    f.cppType = type->getValueAsString("cppType").str();
    f.owner = def->getValueAsDef("owner")->getValueAsString("structName").str();
    f.group = def->getValueAsDef("attr")->getValueAsString("cppName").str();
    f.defaultValue = def->getValueAsString("default").str();
    f.attrDefault = def->getValueAsString("attrDefault").str();
    f.attrValue = def->getValueAsString("attrValue").str();
    f.check = def->getValueAsDef("check")->getValueAsString("name").str();
    f.familyKey = def->getValueAsBit("familyKey");
    f.jsonOnlyWhenSet = def->getValueAsBit("jsonOnlyWhenSet");
    if (f.kind == "enum") {
      f.enumName = type->getValueAsString("enumName").str();
      f.cases = readCases(type);
    } else if (f.kind == "choice") {
      for (StringRef c : type->getValueAsListOfStrings("choices"))
        f.choices.push_back(c.str());
    } else if (f.kind == "nested") {
      f.nestedGroup =
          type->getValueAsDef("group")->getValueAsString("cppName").str();
    }

    if (!isSnakeCase(f.key))
      fail(def, "field key '" + f.key + "' is not snake_case");
    if (!keys[f.owner].insert(f.key).second)
      fail(def, "duplicate key '" + f.key + "' in " + f.owner);
    if (f.inStruct() && !members[f.owner].insert(f.member).second)
      fail(def, "duplicate member '" + f.member + "' in " + f.owner);
    if (!f.inStruct() && !f.inAttr())
      fail(def, "field '" + f.key + "' is neither a member nor in the IR");
    if (f.inAttr()) {
      if (f.owner != "ModelConfig")
        fail(def, "field '" + f.key + "': only ModelConfig's fields can be "
                                      "in the IR attribute");
      if (!attrKeys.insert(f.key).second)
        fail(def, "duplicate IR key '" + f.key + "'");
      if (f.kind == "struct" || f.kind == "float_list")
        fail(def, "field '" + f.key + "': a " + f.kind +
                      " cannot be an IR parameter");
      if (!f.inStruct() && f.attrValue.empty() && f.kind != "nested")
        fail(def, "field '" + f.key +
                      "' is only in the IR: it needs an attrValue");
      if (f.kind == "nested" && f.group != "ModelConfig")
        fail(def, "field '" + f.key + "': groups nest in the core only");
    } else if (f.kind == "nested" || f.kind == "choice") {
      fail(def, "field '" + f.key + "': a " + f.kind +
                    " field belongs to the IR attribute");
    }
    if (f.familyKey) {
      static const llvm::StringSet<> familyKinds = {"int", "real", "bool",
                                                    "enum", "int_list"};
      if (f.owner != "ModelConfig" || !f.inStruct() ||
          !familyKinds.contains(f.kind))
        fail(def, "field '" + f.key +
                      "': a family key is an int, real, bool, enum or int "
                      "list member of ModelConfig");
    }
    if ((f.check == "non_negative" && f.kind != "int") ||
        (f.check == "finite_non_negative" && f.kind != "real"))
      fail(def, "field '" + f.key + "': check " + f.check +
                    " does not apply to a " + f.kind);
    for (StringRef v : {StringRef(f.defaultValue), StringRef(f.attrDefault)}) {
      if (f.kind == "int")
        checkNumber(f, v, true);
      else if (f.kind == "real")
        checkNumber(f, v, false);
      else if (f.kind == "bool" && !v.empty() && v != "true" && v != "false")
        fail(def, "field '" + f.key + "': a bool default is true or false");
      else if (f.kind == "enum")
        (void)enumDefault(f, v);
      else if (f.kind == "choice" && !v.empty() &&
               !llvm::is_contained(f.choices, v.str()))
        fail(def, "field '" + f.key + "': default '" + v +
                      "' is not a choice");
      else if ((StringRef(f.kind).ends_with("list") || f.kind == "struct" ||
                f.kind == "nested") &&
               !v.empty())
        fail(def, "field '" + f.key + "': a " + f.kind +
                      " defaults to empty");
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

/// The enums the fields use, in order of first use.
std::vector<const Field *> enumsOf(const std::vector<Field> &fields) {
  std::vector<const Field *> out;
  llvm::StringSet<> seen;
  for (const Field &f : fields)
    if (f.kind == "enum" && seen.insert(f.enumName).second)
      out.push_back(&f);
  return out;
}

/// The structs, each after the structs its members use.
std::vector<std::string> structsOf(const std::vector<Field> &fields) {
  std::vector<std::string> out;
  std::function<void(const std::string &)> visit =
      [&](const std::string &name) {
        if (llvm::is_contained(out, name))
          return;
        for (const Field &f : fields)
          if (f.owner == name && f.kind == "struct")
            visit(f.cppType);
        out.push_back(name);
      };
  for (const Field &f : fields)
    visit(f.owner);
  return out;
}

} // namespace etllm::tblgen
