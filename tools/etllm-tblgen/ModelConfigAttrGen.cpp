//===- ModelConfigAttrGen.cpp - #etllm.model_config's TableGen backend ----===//
//
// -gen-etllm-model-config-attr (from EtllmModelConfig.td, whose AttrDefs
// build their parameters from the records of etllm/Models/ModelConfig.td):
// the parameter structs of `#etllm.model_config` and its groups, their
// generic verification (ranges, choices; the rules between fields are
// hand-written), the metadata JSON in both directions (flat keys) and the
// builder from `formats::ModelConfig`. The records are read by
// ModelConfigRecords.cpp; ModelConfigGen.cpp generates the struct side.
//
//===----------------------------------------------------------------------===//
#include "ModelConfigRecords.h"

#include "mlir/TableGen/AttrOrTypeDef.h"
#include "mlir/TableGen/GenInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <algorithm>
#include <map>

using namespace etllm::tblgen;

namespace {

//===----------------------------------------------------------------------===//
// -gen-etllm-model-config-attr
//===----------------------------------------------------------------------===//

/// One config AttrDef: a group of fields and the declared parameters.
struct ConfigAttr {
  std::string cppName; // "ModelConfig"
  std::string attrClass, paramsStruct;
  std::vector<const Field *> fields;
  std::vector<std::string> paramTypes; // the declared C++ types, in order
  std::string present;                 // the group's condition over `c`
};

/// The parameter struct member's type and default.
std::string paramType(const Field &f) {
  if (f.kind == "int")
    return "int64_t";
  if (f.kind == "real")
    return "double";
  if (f.kind == "bool")
    return "bool";
  if (f.kind == "int_list")
    return "::llvm::SmallVector<int64_t>";
  if (f.kind == "bool_list")
    return "::llvm::SmallVector<bool>";
  if (f.kind == "nested")
    return f.cppType;
  return "std::string";
}
std::string paramInit(const Field &f) {
  const std::string &v = f.attrDefault;
  if (f.kind == "enum")
    return " = " + quoted(enumDefault(f, v).spelling);
  return scalarInit(f, v);
}

std::vector<ConfigAttr> readAttrs(const RecordKeeper &records,
                                  const std::vector<Field> &fields) {
  std::map<const Record *, const Field *> byDef;
  for (const Field &f : fields)
    byDef[f.def] = &f;
  std::vector<ConfigAttr> attrs;
  for (const Record *def : records.getAllDerivedDefinitions("AttrDef")) {
    mlir::tblgen::AttrDef attrDef(def);
    ConfigAttr a;
    for (const mlir::tblgen::AttrOrTypeParameter &p :
         attrDef.getParameters()) {
      const auto *pdef = llvm::dyn_cast<llvm::DefInit>(p.getDef());
      if (!pdef || !pdef->getDef()->isSubClassOf("Etllm_ConfigParameter"))
        break;
      const Record *fdef = pdef->getDef()->getValueAsDef("configField");
      auto it = byDef.find(fdef);
      if (it == byDef.end())
        fail(def, "parameter '" + p.getName() +
                      "' is not a field of ModelConfigFields");
      a.fields.push_back(it->second);
      a.paramTypes.push_back(p.getCppType().str());
    }
    if (a.fields.empty() || a.fields.size() != attrDef.getNumParameters())
      continue;
    a.cppName = a.fields.front()->group;
    a.attrClass = attrDef.getCppClassName().str();
    if (a.attrClass != a.cppName + "Attr")
      fail(def, "the AttrDef of group " + a.cppName + " must be " + a.cppName +
                    "Attr");
    a.paramsStruct = a.cppName + "Params";
    for (const Field *f : a.fields)
      if (f->group != a.cppName)
        fail(def, "field '" + f->key + "' is not in group " + a.cppName);
    a.present = def->getValueAsDef("configGroup")->getValueAsString("present")
                    .str();
    attrs.push_back(std::move(a));
  }
  // Every group of a field has its AttrDef.
  for (const Field &f : fields)
    if (f.inAttr() && !llvm::any_of(attrs, [&](const ConfigAttr &a) {
          return a.cppName == f.group;
        }))
      fail(f.def, "field '" + f.key + "': no AttrDef builds group " + f.group +
                      " (Etllm_ConfigAttr in EtllmModelConfig.td)");
  // Nested groups first (the core's builder and reader use them).
  std::stable_sort(attrs.begin(), attrs.end(),
                   [](const ConfigAttr &x, const ConfigAttr &y) {
                     return x.cppName != "ModelConfig" &&
                            y.cppName == "ModelConfig";
                   });
  if (attrs.empty() || attrs.back().cppName != "ModelConfig")
    llvm::PrintFatalError("no ModelConfigAttr among the config AttrDefs");
  return attrs;
}

const ConfigAttr &attrOf(const std::vector<ConfigAttr> &attrs,
                         StringRef cppName) {
  for (const ConfigAttr &a : attrs)
    if (a.cppName == cppName)
      return a;
  llvm::PrintFatalError("no config AttrDef for group " + cppName);
}

void emitAttrDecls(const std::vector<ConfigAttr> &attrs,
                   llvm::raw_ostream &os) {
  os << "#ifdef GET_MODEL_CONFIG_ATTR_DECLS\n"
        "#undef GET_MODEL_CONFIG_ATTR_DECLS\n\n"
        "namespace mlir::etllm {\n\n";
  for (const ConfigAttr &a : attrs) {
    os << "/// The parameters of " << a.attrClass
       << ", by name (ModelConfig.td), with their defaults.\n";
    os << "struct " << a.paramsStruct << " {\n";
    for (const Field *f : a.fields) {
      emitDoc(os, "`" + f->key + "`: " + f->summary, "  ");
      os << "  " << paramType(*f) << " " << paramMember(f->key)
         << paramInit(*f) << ";\n";
    }
    os << "};\n\n";
    os << "/// The " << a.attrClass << " of `params` (unchecked).\n"
       << a.attrClass << " get" << a.attrClass
       << "(::mlir::MLIRContext *context, const " << a.paramsStruct
       << " &params);\n";
    os << "/// The " << a.attrClass
       << " of `params`, or null after an error from its verifier.\n"
       << a.attrClass << " get" << a.attrClass
       << "Checked(::llvm::function_ref<::mlir::InFlightDiagnostic()> "
          "emitError, ::mlir::MLIRContext *context, const "
       << a.paramsStruct << " &params);\n";
    os << "/// The rules between the fields of " << a.attrClass
       << " (hand-written: lib/Dialect/Etllm/EtllmModelConfig.cpp), after the\n"
          "/// generated checks of each field.\n"
       << "::llvm::LogicalResult verify" << a.cppName
       << "Rules(::llvm::function_ref<::mlir::InFlightDiagnostic()> "
          "emitError, const "
       << a.paramsStruct << " &params);\n\n";
  }
  os << "} // namespace mlir::etllm\n\n"
        "#endif // GET_MODEL_CONFIG_ATTR_DECLS\n\n";
}

/// The JSON reader's code for one field into `dst`.
void emitJsonRead(const Field &f, StringRef dst, llvm::raw_ostream &os) {
  auto need = [&](StringRef cond, StringRef what) {
    os << "      if (!(" << cond << "))\n        return wrong(\"" << what
       << "\");\n";
  };
  if (f.kind == "int") {
    need("v.getAsInteger()", "an integer");
    os << "      " << dst << " = *v.getAsInteger();\n";
  } else if (f.kind == "real") {
    need("v.getAsNumber()", "a number");
    os << "      " << dst << " = *v.getAsNumber();\n";
  } else if (f.kind == "bool") {
    need("v.getAsBoolean()", "a boolean");
    os << "      " << dst << " = *v.getAsBoolean();\n";
  } else if (f.kind == "int_list" || f.kind == "bool_list") {
    bool ints = f.kind == "int_list";
    StringRef what = ints ? "a list of integers" : "a list of booleans";
    StringRef get = ints ? "getAsInteger" : "getAsBoolean";
    need("v.getAsArray()", what);
    os << "      " << dst << ".clear();\n"
       << "      for (const ::llvm::json::Value &e : *v.getAsArray()) {\n"
       << "        if (!e." << get << "())\n          return wrong(\"" << what
       << "\");\n"
       << "        " << dst << ".push_back(*e." << get << "());\n"
       << "      }\n";
  } else {
    need("v.getAsString()", "a string");
    os << "      " << dst << " = v.getAsString()->str();\n";
  }
}

void emitAttrDefs(const std::vector<ConfigAttr> &attrs,
                  llvm::raw_ostream &os) {
  os << "#ifdef GET_MODEL_CONFIG_ATTR_DEFS\n"
        "#undef GET_MODEL_CONFIG_ATTR_DEFS\n\n"
        "namespace mlir::etllm {\n\n";
  for (const ConfigAttr &a : attrs) {
    // get / getChecked from the params.
    for (bool checked : {false, true}) {
      os << a.attrClass << " get" << a.attrClass << (checked ? "Checked" : "")
         << "(" << (checked ? "::llvm::function_ref<::mlir::InFlightDiagnostic()"
                              "> emitError, "
                            : "")
         << "::mlir::MLIRContext *context, const " << a.paramsStruct
         << " &params) {\n  return " << a.attrClass
         << (checked ? "::getChecked(emitError, context" : "::get(context");
      // Each argument as the declared parameter type, so that overload
      // resolution picks the declared get, not StorageUserBase's template.
      for (size_t i = 0; i < a.fields.size(); ++i)
        os << ",\n      " << a.paramTypes[i] << "(params."
           << paramMember(a.fields[i]->key) << ")";
      os << ");\n}\n\n";
    }

    // verify: the generic checks, then the rules.
    os << "::llvm::LogicalResult " << a.attrClass
       << "::verify(::llvm::function_ref<::mlir::InFlightDiagnostic()> "
          "emitError";
    for (size_t i = 0; i < a.fields.size(); ++i)
      os << ",\n    " << a.paramTypes[i] << " " << a.fields[i]->key;
    os << ") {\n  " << a.paramsStruct << " params;\n";
    for (const Field *f : a.fields) {
      const std::string &k = f->key;
      std::string m = "params." + paramMember(k);
      if (f->kind == "real") {
        os << "  if (&" << k
           << ".getSemantics() != &::llvm::APFloat::IEEEdouble()";
        if (f->check == "finite_non_negative")
          os << " || !" << k << ".isFinite() || " << k << ".isNegative()";
        os << ")\n    return emitError() << \"" << k
           << (f->check == "finite_non_negative"
                   ? " must be a finite, non-negative double\";\n"
                   : " must be a double\";\n");
        os << "  " << m << " = " << k << ".convertToDouble();\n";
        continue;
      }
      if (f->check == "non_negative")
        os << "  if (" << k << " < 0)\n    return emitError() << \"" << k
           << " must not be negative, got \" << " << k << ";\n";
      if (f->kind == "choice" || f->kind == "enum") {
        std::vector<std::string> names = f->choices;
        if (f->kind == "enum") {
          names.clear();
          for (const EnumCase &c : f->cases)
            names.push_back(c.spelling);
        }
        os << "  if (!(" << (f->kind == "choice" ? k + ".empty()" : "false");
        for (const std::string &n : names)
          os << " || " << k << " == " << quoted(n);
        os << "))\n    return emitError() << \"" << k << " '\" << " << k
           << " << \"' is not " << alternatives(names) << "\";\n";
      }
      if (f->kind == "int_list" || f->kind == "bool_list")
        os << "  " << m << ".assign(" << k << ".begin(), " << k
           << ".end());\n";
      else if (f->kind == "string" || f->kind == "choice" ||
               f->kind == "enum")
        os << "  " << m << " = " << k << ".str();\n";
      else
        os << "  " << m << " = " << k << ";\n";
    }
    os << "  return verify" << a.cppName << "Rules(emitError, params);\n}\n\n";

    // appendJson: flat keys, groups when present.
    os << "void " << a.attrClass
       << "::appendJson(::llvm::json::Object &json) const {\n";
    for (const Field *f : a.fields) {
      std::string g = getter(f->key) + "()";
      // Written only when not the IR default (0, false, "" unless the
      // field says otherwise).
      const std::string &d = f->attrDefault;
      if (f->jsonOnlyWhenSet && f->kind == "real")
        os << "  if (" << g << ".convertToDouble() != "
           << (d.empty() ? "0.0" : d) << ")\n  ";
      else if (f->jsonOnlyWhenSet && f->kind == "int")
        os << "  if (" << g << " != " << (d.empty() ? "0" : d) << ")\n  ";
      else if (f->jsonOnlyWhenSet && f->kind == "bool")
        os << "  if (" << g << " != " << (d.empty() ? "false" : d)
           << ")\n  ";
      else if (f->jsonOnlyWhenSet && f->kind == "string")
        os << "  if (" << g << ".str() != " << quoted(d) << ")\n  ";
      else if (f->jsonOnlyWhenSet)
        fail(f->def, "jsonOnlyWhenSet is for numbers, booleans and strings");
      if (f->kind == "real")
        os << "  json[" << quoted(f->key) << "] = " << g
           << ".convertToDouble();\n";
      else if (f->kind == "string" || f->kind == "choice" ||
               f->kind == "enum")
        os << "  json[" << quoted(f->key) << "] = " << g << ".str();\n";
      else if (f->kind == "int_list" || f->kind == "bool_list")
        os << "  {\n    ::llvm::json::Array values;\n    for (auto v : " << g
           << ")\n      values.push_back(v);\n    json[" << quoted(f->key)
           << "] = std::move(values);\n  }\n";
      else if (f->kind == "nested")
        os << "  if (" << g << ")\n    " << g << ".appendJson(json);\n";
      else
        os << "  json[" << quoted(f->key) << "] = " << g << ";\n";
    }
    os << "}\n\n";
  }

  // The core's toJson and fromJson.
  const ConfigAttr &core = attrs.back();
  os << "std::string ModelConfigAttr::toJson() const {\n"
        "  ::llvm::json::Object json;\n  appendJson(json);\n"
        "  std::string s;\n  ::llvm::raw_string_ostream os(s);\n"
        "  os << ::llvm::json::Value(std::move(json));\n  return s;\n}\n\n";
  os << "::mlir::FailureOr<ModelConfigAttr> ModelConfigAttr::fromJson("
        "::mlir::MLIRContext *context, const ::llvm::json::Object &json, "
        "std::string &error) {\n";
  std::vector<const ConfigAttr *> groups;
  for (const Field *f : core.fields)
    if (f->kind == "nested")
      groups.push_back(&attrOf(attrs, f->nestedGroup));
  os << "  ModelConfigParams core;\n";
  for (const ConfigAttr *g : groups)
    os << "  " << g->paramsStruct << " " << paramMember(g->cppName)
       << ";\n  bool has" << g->cppName << " = false;\n";
  os << "  // Sorted keys: the first bad key is the same from run to run.\n"
        "  ::llvm::SmallVector<::llvm::StringRef> keys;\n"
        "  for (const auto &entry : json)\n"
        "    keys.push_back(entry.first);\n"
        "  ::llvm::sort(keys);\n"
        "  for (::llvm::StringRef key : keys) {\n"
        "    const ::llvm::json::Value &v = *json.get(key);\n"
        "    auto wrong = [&](const char *what) {\n"
        "      error = (\"model_config key '\" + key + \"' must be \" + "
        "what).str();\n"
        "      return ::mlir::failure();\n    };\n";
  auto readGroup = [&](const ConfigAttr &a, StringRef var, StringRef has) {
    for (const Field *f : a.fields) {
      if (f->kind == "nested")
        continue;
      os << "    if (key == " << quoted(f->key) << ") {\n";
      emitJsonRead(*f, (var + "." + paramMember(f->key)).str(), os);
      if (!has.empty())
        os << "      " << has << " = true;\n";
      os << "      continue;\n    }\n";
    }
  };
  readGroup(core, "core", "");
  for (const ConfigAttr *g : groups)
    readGroup(*g, paramMember(g->cppName), "has" + g->cppName);
  os << "    error = (\"model_config has no key '\" + key +\n"
        "             \"' (the keys are the parameters of "
        "#etllm.model_config and its \"\n"
        "             \"groups: see docs/generated/EtllmDialect.md)\").str();\n"
        "    return ::mlir::failure();\n  }\n";
  os << "  // The verifiers' errors, as the message.\n"
        "  std::string diagnostic;\n"
        "  ::mlir::ScopedDiagnosticHandler handler(context, "
        "[&](::mlir::Diagnostic &d) {\n"
        "    if (diagnostic.empty())\n      diagnostic = d.str();\n"
        "    return ::mlir::success();\n  });\n"
        "  auto emitError = [&] {\n"
        "    return ::mlir::emitError(::mlir::UnknownLoc::get(context));\n"
        "  };\n";
  for (const Field *f : core.fields) {
    if (f->kind != "nested")
      continue;
    const ConfigAttr &g = attrOf(attrs, f->nestedGroup);
    os << "  if (has" << g.cppName << ") {\n    core." << paramMember(f->key)
       << " = get" << g.attrClass << "Checked(emitError, context, "
       << paramMember(g.cppName) << ");\n    if (!core."
       << paramMember(f->key)
       << ") {\n      error = \"model_config: \" + diagnostic;\n"
          "      return ::mlir::failure();\n    }\n  }\n";
  }
  os << "  ModelConfigAttr attr = getModelConfigAttrChecked(emitError, "
        "context, core);\n"
        "  if (!attr) {\n    error = \"model_config: \" + diagnostic;\n"
        "    return ::mlir::failure();\n  }\n  return attr;\n}\n\n";
  os << "} // namespace mlir::etllm\n\n#endif // GET_MODEL_CONFIG_ATTR_DEFS\n\n";
}

/// The builder from formats::ModelConfig (lib/Import).
void emitAttrBuilder(const std::vector<ConfigAttr> &attrs,
                     llvm::raw_ostream &os) {
  os << "#ifdef GET_MODEL_CONFIG_ATTR_BUILDER\n"
        "#undef GET_MODEL_CONFIG_ATTR_BUILDER\n\n";
  for (const ConfigAttr &a : attrs) {
    bool isCore = a.cppName == "ModelConfig";
    os << "/// The " << a.attrClass << " of `c`"
       << (isCore ? "" : " (null unless " + a.present + ")")
       << ", for a graph of `dtype` and\n/// sequence bound `maxSeqLen` "
          "(generated from ModelConfig.td).\n";
    os << "static ::mlir::etllm::" << a.attrClass << " build" << a.attrClass
       << "(::mlir::MLIRContext *context, const ::etllm::formats::ModelConfig "
          "&c, int64_t maxSeqLen, ::llvm::StringRef dtype) {\n"
          "  (void)maxSeqLen;\n  (void)dtype;\n";
    if (!isCore)
      os << "  if (!(" << a.present << "))\n    return {};\n";
    os << "  ::mlir::etllm::" << a.paramsStruct << " p;\n";
    for (const Field *f : a.fields) {
      std::string dst = "p." + paramMember(f->key);
      std::string e = f->attrValue.empty() ? "c." + f->member : f->attrValue;
      if (f->kind == "nested")
        os << "  " << dst << " = build"
           << attrOf(attrs, f->nestedGroup).attrClass
           << "(context, c, maxSeqLen, dtype);\n";
      else if (f->kind == "string" || f->kind == "choice")
        os << "  " << dst << " = std::string(" << e << ");\n";
      else if (f->kind == "enum")
        os << "  " << dst << " = static_cast<size_t>(" << e
           << ") < std::size(::etllm::models::k" << f->enumName
           << "Names) ? ::etllm::models::k" << f->enumName
           << "Names[static_cast<size_t>(" << e << ")] : \"\";\n";
      else if (f->kind == "int_list" || f->kind == "bool_list")
        os << "  " << dst << ".assign(" << e << ".begin(), " << e
           << ".end());\n";
      else
        os << "  " << dst << " = " << e << ";\n";
    }
    os << "  return ::mlir::etllm::get" << a.attrClass << "(context, p);\n}\n\n";
  }
  os << "#endif // GET_MODEL_CONFIG_ATTR_BUILDER\n\n";
}

bool emitModelConfigAttr(const RecordKeeper &records, llvm::raw_ostream &os) {
  llvm::emitSourceFileHeader(
      "#etllm.model_config from the model config's fields (ModelConfig.td)",
      os, records);
  std::vector<Field> fields = readFields(records);
  std::vector<ConfigAttr> attrs = readAttrs(records, fields);
  emitAttrDecls(attrs, os);
  emitAttrDefs(attrs, os);
  emitAttrBuilder(attrs, os);
  return false;
}

mlir::GenRegistration genModelConfigAttr(
    "gen-etllm-model-config-attr",
    "Generate #etllm.model_config's parameter structs, generic verification, "
    "JSON and builder (EtllmModelConfig.td)",
    emitModelConfigAttr);

} // namespace
