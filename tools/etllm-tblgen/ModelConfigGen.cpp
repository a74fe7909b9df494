//===- ModelConfigGen.cpp - The model config's struct-side backend --------===//
//
// Every field of the model configuration is one record of
// include/etllm/Models/ModelConfig.td (the `ModelConfigFields` defset, read
// by ModelConfigRecords.cpp). Two generators read them:
//
//   -gen-etllm-model-config       (here; from ModelConfig.td, no MLIR in the
//                                 output) the enums, `models::ConfigField`,
//                                 the members of `formats::ModelConfig` and
//                                 `RopeScaling`, getField/setField/listField
//                                 for the family keys, and the structs' JSON
//                                 form (one key per field);
//   -gen-etllm-model-config-attr  (ModelConfigAttrGen.cpp) the IR attribute's
//                                 parameter structs, verification, metadata
//                                 JSON and builder.
//
// Each registers itself (a static GenRegistration, as mlir-tblgen's
// backends do); etllm-tblgen.cpp holds the op contract's generators.
//
//===----------------------------------------------------------------------===//
#include "ModelConfigRecords.h"

#include "mlir/TableGen/GenInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace etllm::tblgen;

namespace {

//===----------------------------------------------------------------------===//
// -gen-etllm-model-config
//===----------------------------------------------------------------------===//

/// The member's C++ default initializer (" = ..." or "").
std::string memberInit(const Field &f) {
  const std::string &v = f.defaultValue;
  if (f.kind == "enum")
    return " = models::" + f.enumName + "::" + enumDefault(f, v).cppName;
  return scalarInit(f, v);
}

void emitEnums(const std::vector<Field> &fields, llvm::raw_ostream &os) {
  os << "#ifdef GET_CONFIG_ENUMS\n#undef GET_CONFIG_ENUMS\n\n";
  for (const Field *f : enumsOf(fields)) {
    const Record *type = f->def->getValueAsDef("type");
    emitDoc(os, type->getValueAsString("description"), "");
    os << "enum class " << f->enumName << " : uint8_t {\n";
    for (const EnumCase &c : f->cases) {
      if (!c.description.empty())
        emitDoc(os, c.description, "  ");
      os << "  " << c.cppName << ",\n";
    }
    os << "};\n";
    os << "/// The spellings of " << f->enumName
       << " (config.json, the IR), by value.\n";
    os << "inline constexpr const char *k" << f->enumName << "Names[] = {";
    llvm::interleaveComma(f->cases, os,
                          [&](const EnumCase &c) { os << quoted(c.spelling); });
    os << "};\n\n";
  }
  os << "#endif // GET_CONFIG_ENUMS\n\n";
}

void emitConfigFieldEnum(const std::vector<Field> &fields,
                         llvm::raw_ostream &os) {
  os << "#ifdef GET_CONFIG_FIELD_ENUM\n#undef GET_CONFIG_FIELD_ENUM\n\n";
  os << "/// A ModelConfig field a family key reads and writes "
        "(ModelConfig.td: familyKey).\n";
  os << "enum class ConfigField : uint8_t {\n";
  for (const Field &f : fields)
    if (f.familyKey) {
      if (f.kind == "int_list")
        os << "  /// A list: ModelConfig::" << f.member
           << " (KeyType::IntList).\n";
      os << "  " << enumerator(f.member) << ",\n";
    }
  os << "};\n\n#endif // GET_CONFIG_FIELD_ENUM\n\n";
}

void emitMembers(const std::vector<Field> &fields, llvm::raw_ostream &os) {
  for (const std::string &s : structsOf(fields)) {
    std::string section = membersSection(s);
    os << "#ifdef " << section << "\n#undef " << section << "\n";
    for (const Field &f : fields) {
      if (f.owner != s || !f.inStruct())
        continue;
      os << "\n";
      emitDoc(os,
              "`" + f.key + "`: " +
                  (f.description.empty() ? f.summary : f.description),
              "  ");
      os << "  " << f.cppType << " " << f.member << memberInit(f) << ";\n";
    }
    os << "\n#endif // " << section << "\n\n";
  }
}

void emitAccessors(const std::vector<Field> &fields, llvm::raw_ostream &os) {
  os << "#ifdef GET_CONFIG_FIELD_ACCESSORS\n"
        "#undef GET_CONFIG_FIELD_ACCESSORS\n\n";
  os << "/// The value of a family key's field (0 for a list: listField).\n"
        "inline double getField(const ModelConfig &c, "
        "models::ConfigField field) {\n  switch (field) {\n";
  for (const Field &f : fields) {
    if (!f.familyKey)
      continue;
    os << "  case models::ConfigField::" << enumerator(f.member) << ":\n";
    if (f.kind == "real")
      os << "    return c." << f.member << ";\n";
    else if (f.kind == "bool")
      os << "    return c." << f.member << " ? 1 : 0;\n";
    else if (f.kind == "int_list")
      os << "    return 0; // a list: listField\n";
    else
      os << "    return static_cast<double>(c." << f.member << ");\n";
  }
  os << "  }\n  return 0;\n}\n\n";

  os << "/// Sets a family key's field (nothing for a list: listField).\n"
        "inline void setField(ModelConfig &c, models::ConfigField field, "
        "double v) {\n  switch (field) {\n";
  for (const Field &f : fields) {
    if (!f.familyKey)
      continue;
    os << "  case models::ConfigField::" << enumerator(f.member) << ":\n";
    if (f.kind == "real")
      os << "    c." << f.member << " = v;\n";
    else if (f.kind == "bool")
      os << "    c." << f.member << " = v != 0;\n";
    else if (f.kind == "int")
      os << "    c." << f.member << " = static_cast<int64_t>(v);\n";
    else if (f.kind == "enum")
      os << "    c." << f.member << " = static_cast<models::" << f.enumName
         << ">(static_cast<int>(v));\n";
    else
      os << "    (void)v; // a list: listField\n";
    os << "    return;\n";
  }
  os << "  }\n}\n\n";

  os << "/// The list a KeyType::IntList key reads and writes (null for the "
        "others).\n"
        "inline std::vector<int64_t> *listField(ModelConfig &c, "
        "models::ConfigField field) {\n";
  for (const Field &f : fields)
    if (f.familyKey && f.kind == "int_list")
      os << "  if (field == models::ConfigField::" << enumerator(f.member)
         << ")\n    return &c." << f.member << ";\n";
  os << "  (void)c;\n  (void)field;\n  return nullptr;\n}\n"
        "inline const std::vector<int64_t> *listField(const ModelConfig &c, "
        "models::ConfigField field) {\n"
        "  return listField(const_cast<ModelConfig &>(c), field);\n}\n\n";
  os << "#endif // GET_CONFIG_FIELD_ACCESSORS\n\n";
}

/// The structs' JSON form: an object with one key per member (nested
/// structs as objects), read strictly.
void emitStructJson(const std::vector<Field> &fields, llvm::raw_ostream &os) {
  os << "#ifdef GET_CONFIG_JSON\n#undef GET_CONFIG_JSON\n\n";
  std::vector<std::string> structs = structsOf(fields);
  for (const std::string &s : structs)
    os << "static Status readFields(" << s
       << " &s, const nlohmann::json &j, const std::string &where);\n";
  os << "\n";
  for (const std::string &s : structs) {
    os << "/// A " << s
       << " from its JSON object (keys of ModelConfig.td); absent keys keep "
          "their defaults.\n";
    os << "static Status readFields(" << s
       << " &s, const nlohmann::json &j, const std::string &where) {\n"
          "  if (!j.is_object())\n"
          "    return Error(where + \": must be an object\");\n"
          "  for (auto it = j.begin(); it != j.end(); ++it) {\n"
          "    const std::string &k = it.key();\n"
          "    const nlohmann::json &v = it.value();\n"
          "    auto bad = [&](const char *what) {\n"
          "      return Error(where + \": '\" + k + \"' must be \" + what);\n"
          "    };\n";
    for (const Field &f : fields) {
      if (f.owner != s || !f.inStruct())
        continue;
      os << "    if (k == " << quoted(f.key) << ") {\n";
      std::string m = "s." + f.member;
      if (f.kind == "int")
        os << "      if (!v.is_number_integer())\n"
              "        return bad(\"an integer\");\n"
           << "      " << m << " = v.get<int64_t>();\n";
      else if (f.kind == "real")
        os << "      if (!v.is_number())\n        return bad(\"a number\");\n"
           << "      " << m << " = v.get<double>();\n";
      else if (f.kind == "bool")
        os << "      if (!v.is_boolean())\n        return bad(\"a boolean\");\n"
           << "      " << m << " = v.get<bool>();\n";
      else if (f.kind == "string")
        os << "      if (!v.is_string())\n        return bad(\"a string\");\n"
           << "      " << m << " = v.get<std::string>();\n";
      else if (f.kind == "enum") {
        os << "      bool found = false;\n"
           << "      for (size_t i = 0; v.is_string() && i < std::size(models::k"
           << f.enumName << "Names); ++i)\n"
           << "        if (v.get<std::string>() == models::k" << f.enumName
           << "Names[i]) {\n"
           << "          " << m << " = static_cast<models::" << f.enumName
           << ">(i);\n"
           << "          found = true;\n        }\n"
           << "      if (!found)\n        return bad(\"one of "
           << alternatives([&] {
                std::vector<std::string> n;
                for (const EnumCase &c : f.cases)
                  n.push_back(c.spelling);
                return n;
              }())
           << "\");\n";
      } else if (f.kind == "int_list" || f.kind == "bool_list" ||
                 f.kind == "float_list") {
        StringRef is = f.kind == "int_list"    ? "is_number_integer"
                       : f.kind == "bool_list" ? "is_boolean"
                                               : "is_number";
        StringRef elem = f.kind == "int_list"    ? "int64_t"
                         : f.kind == "bool_list" ? "bool"
                                                 : "float";
        StringRef what = f.kind == "int_list"    ? "a list of integers"
                         : f.kind == "bool_list" ? "a list of booleans"
                                                 : "a list of numbers";
        os << "      if (!v.is_array())\n        return bad(\"" << what
           << "\");\n"
           << "      " << m << ".clear();\n"
           << "      for (const nlohmann::json &e : v) {\n"
           << "        if (!e." << is << "())\n          return bad(\"" << what
           << "\");\n"
           << "        " << m << ".push_back(e.get<" << elem << ">());\n"
           << "      }\n";
      } else if (f.kind == "struct") {
        os << "      ETLLM_RETURN_IF_ERROR(readFields(" << m
           << ", v, where + \".\" + k));\n";
      }
      os << "      continue;\n    }\n";
    }
    os << "    return Error(where + \": " << s
       << " has no field '\" + k + \"'\");\n  }\n  return Status();\n}\n\n";
  }
  for (const std::string &s : structs) {
    os << "/// The JSON object of a " << s << ".\n";
    os << "static nlohmann::json writeFields(const " << s << " &s) {\n"
       << "  nlohmann::json j = nlohmann::json::object();\n";
    for (const Field &f : fields) {
      if (f.owner != s || !f.inStruct())
        continue;
      std::string m = "s." + f.member;
      if (f.kind == "enum")
        os << "  j[" << quoted(f.key) << "] = models::k" << f.enumName
           << "Names[static_cast<size_t>(" << m << ")];\n";
      else if (f.kind == "struct")
        os << "  j[" << quoted(f.key) << "] = writeFields(" << m << ");\n";
      else
        os << "  j[" << quoted(f.key) << "] = " << m << ";\n";
    }
    os << "  return j;\n}\n\n";
  }
  os << "#endif // GET_CONFIG_JSON\n\n";
}

bool emitModelConfig(const RecordKeeper &records, llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader("The model configuration (ModelConfig.td)", os,
                             records);
  std::vector<Field> fields = readFields(records);
  emitEnums(fields, os);
  emitConfigFieldEnum(fields, os);
  emitMembers(fields, os);
  emitAccessors(fields, os);
  emitStructJson(fields, os);
  return false;
}

mlir::GenRegistration
    genModelConfig("gen-etllm-model-config",
                   "Generate the model config's enums, struct members, field "
                   "table and JSON (ModelConfig.td)",
                   emitModelConfig);

} // namespace
