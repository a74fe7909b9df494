//===- ModelConfigRecords.h - The model config's fields, read -*- C++ -*-===//
//
// The records of include/etllm/Models/ModelConfig.td (the
// `ModelConfigFields` defset), read and checked once for both model-config
// generators (ModelConfigGen.cpp, ModelConfigAttrGen.cpp), and the
// spelling helpers they share.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TBLGEN_MODELCONFIGRECORDS_H
#define ETLLM_TBLGEN_MODELCONFIGRECORDS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Record.h"

#include <string>
#include <vector>

namespace etllm::tblgen {

using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;


struct EnumCase {
  std::string cppName, spelling, description;
};

/// One ConfigField record, resolved.
struct Field {
  const Record *def = nullptr;
  std::string key, member, summary, description, kind, cppType;
  std::string owner;        // the struct ("ModelConfig", "RopeScaling")
  std::string group;        // attribute group class ("" = not in the IR)
  std::string defaultValue; // as written (a value, not C++)
  std::string attrDefault;
  std::string attrValue;
  std::string check;
  bool familyKey = false;
  bool jsonOnlyWhenSet = false;
  // enum
  std::string enumName;
  std::vector<EnumCase> cases;
  // choice
  std::vector<std::string> choices;
  // nested: the group's class ("MlaConfig")
  std::string nestedGroup;

  bool inStruct() const { return !member.empty(); }
  bool inAttr() const { return !group.empty(); }
};

/// A fatal error at `def`.
[[noreturn]] void fail(const Record *def, const llvm::Twine &msg);

/// The field's enumerator in models::ConfigField ("numExperts" ->
/// "NumExperts").
std::string enumerator(StringRef member);
/// The name of an AttrDef parameter's getter, as mlir-tblgen spells it.
std::string getter(StringRef key);
/// A parameter struct member ("n_group" -> "nGroup").
std::string paramMember(StringRef key);
/// "GET_" + upper snake of a struct name + "_MEMBERS".
std::string membersSection(StringRef structName);
/// `text` as `///` lines of at most 80 columns after `indent`.
void emitDoc(llvm::raw_ostream &os, StringRef text, StringRef indent);
/// A C++ string literal of `s`.
std::string quoted(StringRef s);
/// "a, b or c".
std::string alternatives(const std::vector<std::string> &names);
/// A real default as a C++ double literal ("1" -> "1.0").
std::string realLiteral(StringRef v);
/// The C++ default initializer (" = ...", or "" for none) of a number,
/// bool, string or choice field whose default is `v`; "" for other kinds.
std::string scalarInit(const Field &f, StringRef v);
/// The case a (possibly empty) enum default stands for.
const EnumCase &enumDefault(const Field &f, StringRef v);

/// The fields, in the order of the defset, checked (a fatal error names the
/// first inconsistent record).
std::vector<Field> readFields(const RecordKeeper &records);
/// The enums the fields use, in order of first use.
std::vector<const Field *> enumsOf(const std::vector<Field> &fields);
/// The structs, each after the structs its members use.
std::vector<std::string> structsOf(const std::vector<Field> &fields);

} // namespace etllm::tblgen

#endif // ETLLM_TBLGEN_MODELCONFIGRECORDS_H
