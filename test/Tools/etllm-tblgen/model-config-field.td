// Adding a model-config field is one declaration: a record added to a copy
// of include/etllm/Models/ModelConfig.td (Inputs/scratch-field.td) reaches
// the struct, the family keys' field table and the struct's JSON both ways
// (generated, then compiled and run), the IR attribute's parameters (built
// in TableGen from the same records), its verifier, the metadata JSON both
// ways and the builder from formats::ModelConfig -- with no other file
// edited. docs/AddingAModel.md, "Adding a config field", walks through it.
//
// RUN: rm -rf %t && mkdir -p %t/etllm/Models
// RUN: sed -e '/^} \/\/ ModelConfigFields/{' -e 'r %S/Inputs/scratch-field.td' -e 'd' -e '}' %etllm_src/include/etllm/Models/ModelConfig.td > %t/etllm/Models/ModelConfig.td
// RUN: grep -c 'scratch_window' %t/etllm/Models/ModelConfig.td | FileCheck %s --check-prefix=ONCE
// ONCE: 1
//
// The struct, ConfigField, getField/setField and the struct's JSON:
// RUN: etllm-tblgen -gen-etllm-model-config -I %t -I %etllm_src/include %t/etllm/Models/ModelConfig.td | FileCheck %s --check-prefix=STRUCT
// STRUCT:      enum class ConfigField : uint8_t {
// STRUCT:        ScratchWindow,
// STRUCT-NEXT: };
// STRUCT:      #ifdef GET_MODEL_CONFIG_MEMBERS
// STRUCT:        /// `scratch_window`: a scratch field: declared once, generated everywhere
// STRUCT-NEXT:   int64_t scratchWindow = 7;
// STRUCT:      #endif // GET_MODEL_CONFIG_MEMBERS
// STRUCT:      inline double getField(
// STRUCT:        case models::ConfigField::ScratchWindow:
// STRUCT-NEXT:     return static_cast<double>(c.scratchWindow);
// STRUCT:      inline void setField(
// STRUCT:        case models::ConfigField::ScratchWindow:
// STRUCT-NEXT:     c.scratchWindow = static_cast<int64_t>(v);
// STRUCT:      static Status readFields(ModelConfig &s,
// STRUCT:          if (k == "scratch_window") {
// STRUCT-NEXT:       if (!v.is_number_integer())
// STRUCT-NEXT:         return bad("an integer");
// STRUCT-NEXT:       s.scratchWindow = v.get<int64_t>();
// STRUCT:      static nlohmann::json writeFields(const ModelConfig &s) {
// STRUCT:        j["scratch_window"] = s.scratchWindow;
//
// The generated header compiles into the code that uses a field (the
// formats library's JSON of the fields, and Inputs/scratch-field-use.cpp:
// the member's default, the family key's getField/setField, the struct's
// JSON both ways), and that code runs:
// RUN: etllm-tblgen -gen-etllm-model-config -I %t -I %etllm_src/include %t/etllm/Models/ModelConfig.td -o %t/etllm/Models/ModelConfig.h.inc
// RUN: %cxx -std=c++17 -fsyntax-only -I %t -I %etllm_src/include -I %etllm_src/runtime/include -I %etllm_src/lib/Formats %etllm_src/lib/Formats/ModelConfigJson.cpp
// RUN: %cxx -std=c++17 -I %t -I %etllm_src/include -I %etllm_src/runtime/include -I %etllm_src/lib/Formats %S/Inputs/scratch-field-use.cpp -o %t/scratch-field-use
// RUN: %t/scratch-field-use | FileCheck %s --check-prefix=USE
// USE-COUNT-5: ok:
// USE-NOT: FAIL
//
// The attribute's parameter (mlir-tblgen over the AttrDefs, which build
// their parameters from the records), its getter, printed and parsed:
// RUN: mlir-tblgen -gen-attrdef-decls -attrdefs-dialect=etllm -I %t -I %etllm_src/include -I %mlir_include %etllm_src/include/etllm/Dialect/Etllm/EtllmAttrs.td | FileCheck %s --check-prefix=ATTR
// ATTR: static ModelConfigAttr get(::mlir::MLIRContext *context, {{.*}}::mlir::etllm::MoeConfigAttr moe, {{.*}}::mlir::etllm::VisionConfigAttr vision, int64_t scratch_window);
// ATTR: int64_t getScratchWindow() const;
// RUN: mlir-tblgen -gen-attrdef-defs -attrdefs-dialect=etllm -I %t -I %etllm_src/include -I %mlir_include %etllm_src/include/etllm/Dialect/Etllm/EtllmAttrs.td | FileCheck %s --check-prefix=ATTRDEF
// ATTRDEF: if (!_seen_scratch_window && _paramKey == "scratch_window") {
// ATTRDEF: if (!(getScratchWindow() == 7)) {
//
// Its verification, the metadata JSON both ways and the builder:
// RUN: etllm-tblgen -gen-etllm-model-config-attr -I %t -I %etllm_src/include -I %mlir_include %etllm_src/include/etllm/Dialect/Etllm/EtllmModelConfig.td | FileCheck %s --check-prefix=GEN
// GEN:      struct ModelConfigParams {
// GEN:        int64_t scratchWindow = 7;
// GEN:      ::llvm::LogicalResult ModelConfigAttr::verify(
// GEN:          int64_t scratch_window) {
// GEN:        if (scratch_window < 0)
// GEN-NEXT:     return emitError() << "scratch_window must not be negative, got " << scratch_window;
// GEN:      void ModelConfigAttr::appendJson(::llvm::json::Object &json) const {
// GEN:        json["scratch_window"] = getScratchWindow();
// GEN:      ModelConfigAttr::fromJson(
// GEN:          if (key == "scratch_window") {
// GEN-NEXT:       if (!(v.getAsInteger()))
// GEN-NEXT:         return wrong("an integer");
// GEN-NEXT:       core.scratchWindow = *v.getAsInteger();
// GEN:      static ::mlir::etllm::ModelConfigAttr buildModelConfigAttr(
// GEN:        p.scratchWindow = c.scratchWindow;
//
// The generator refuses a field declared inconsistently, naming it:
// RUN: sed -e '/^} \/\/ ModelConfigFields/{' -e 'r %S/Inputs/bad-field.td' -e 'd' -e '}' %etllm_src/include/etllm/Models/ModelConfig.td > %t/bad.td
// RUN: not etllm-tblgen -gen-etllm-model-config -I %etllm_src/include %t/bad.td -DBAD_KIND 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: error: field 'scratch_name': a family key is an int, real, bool, enum or int list member of ModelConfig
// RUN: not etllm-tblgen -gen-etllm-model-config -I %etllm_src/include %t/bad.td -DBAD_DUP 2>&1 | FileCheck %s --check-prefix=DUP
// DUP: error: duplicate key 'hidden_size' in ModelConfig
// RUN: not etllm-tblgen -gen-etllm-model-config -I %etllm_src/include %t/bad.td -DBAD_IRONLY 2>&1 | FileCheck %s --check-prefix=IRONLY
// IRONLY: error: field 'scratch_bound' is only in the IR: it needs an attrValue
//
// (This file is the test; it declares nothing.)
