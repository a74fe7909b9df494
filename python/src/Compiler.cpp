//===- Compiler.cpp - Bindings of the compiler side -----------------------===//
//
// export_config.yaml (the C++ parser and schema), the export flow of
// etllm-export (lib/Pipeline/Export.cpp) for a checkpoint or for the ATen
// graph of a captured module (lib/Import/Aten/), the Tester, the
// Hugging Face hub cache and the safetensors writer.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "etllm/Config/ExportConfig.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/HubCache.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Formats/Safetensors.h"
#include "etllm/Import/AtenImporter.h"
#include "etllm/InitAll.h"
#include "etllm/Pipeline/Export.h"
#include "etllm/Pipeline/Pipelines.h"
#include "etllm/Pipeline/Tester.h"

#include "etllm/Serialize/ProgramWriter.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>

namespace py = pybind11;

namespace etllm::python {

namespace {

using python::check; // rt::Status (Bindings.h), next to this overload
void check(llvm::Error e) {
  if (e)
    raise(llvm::toString(std::move(e)));
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

const ConfigKey *findKey(const std::string &key) {
  for (const ConfigKey &k : exportConfigSchema())
    if (key == k.name)
      return &k;
  return nullptr;
}

const char *typeName(ConfigType t) {
  switch (t) {
  case ConfigType::Int:
    return "int";
  case ConfigType::Float:
    return "float";
  case ConfigType::Bool:
    return "bool";
  case ConfigType::String:
    return "string";
  case ConfigType::Enum:
    return "enum";
  case ConfigType::StringList:
    return "string_list";
  }
  return "?";
}

py::object getKey(const ExportConfig &c, const std::string &key) {
  const ConfigKey *k = findKey(key);
  if (!k)
    raise("export config: unknown key '" + key + "'");
  switch (k->type) {
  case ConfigType::Int:
    return py::int_(c.getInt(key));
  case ConfigType::Float:
    return py::float_(c.getFloat(key));
  case ConfigType::Bool:
    return py::bool_(c.getBool(key));
  case ConfigType::String:
  case ConfigType::Enum:
    return py::str(c.getString(key));
  case ConfigType::StringList:
    return py::cast(c.getList(key));
  }
  return py::none();
}

/// Progress lines to a Python callable (called with the GIL held).
std::function<void(const std::string &)> progressTo(py::object callback) {
  if (callback.is_none())
    return nullptr;
  auto holder = std::make_shared<py::object>(std::move(callback));
  return [holder](const std::string &line) {
    py::gil_scoped_acquire gil;
    (*holder)(line);
  };
}

ExportRequest request(const std::string &output, const std::string &tokenizer,
                      const std::string &dumpDir, const std::string &stopAfter,
                      py::object progress) {
  ExportRequest r;
  r.outputPath = output;
  r.tokenizerPath = tokenizer;
  r.dumpDir = dumpDir;
  r.stopAfterStage = stopAfter;
  r.progress = progressTo(std::move(progress));
  return r;
}

/// The exported graph of an ATen graph description.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(mlir::MLIRContext &context,
                                              const std::string &json,
                                              const std::string &source) {
  auto module = importAtenGraph(&context, json, source);
  if (!module)
    raise(llvm::toString(module.takeError()));
  return std::move(*module);
}

/// Parses IR text; errors carry the parser's diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> parseIR(mlir::MLIRContext &context,
                                          const std::string &text) {
  std::string diag;
  mlir::ScopedDiagnosticHandler h(&context, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diag);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module)
    raise("the IR does not parse:\n" + diag);
  return module;
}

std::string printIR(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os.flush();
  return text;
}

void writeText(const std::string &path, const std::string &text) {
  std::string err;
  auto file = mlir::openOutputFile(path, &err);
  if (!file)
    raise(err);
  file->os() << text;
  file->os().flush();
  if (file->os().has_error())
    raise("cannot write '" + path + "'");
  file->keep();
}

/// The safetensors writer with Python-friendly errors.
class PySafetensorsWriter {
public:
  void setMetadata(const std::string &k, const std::string &v) {
    w.setMetadata(k, v);
  }
  void addTensor(const std::string &name, const std::string &dtype,
                 const std::vector<int64_t> &shape) {
    auto dt = formats::parseDType(dtype);
    if (!dt.ok())
      raise(dt.message());
    check(w.addTensor(name, *dt, shape));
  }
  void open(const std::string &path) { check(w.open(path)); }
  void write(py::buffer data) {
    py::buffer_info info = data.request();
    if (!PyBuffer_IsContiguous(info.view(), 'C'))
      raise("safetensors: tensor data must be C-contiguous");
    size_t bytes = size_t(info.size) * size_t(info.itemsize);
    const void *ptr = info.ptr;
    py::gil_scoped_release release;
    check(w.write(ptr, bytes));
  }
  void finish() { check(w.finish()); }

private:
  formats::SafetensorsWriter w;
};

} // namespace

void bindCompiler(py::module_ &m) {
  //===--- export_config.yaml ---------------------------------------------===//
  py::class_<ExportConfig>(m, "ExportConfig", R"doc(
export_config.yaml, parsed and validated by the C++ parser (every key of
docs/generated/ExportConfig.md, with its default unless given).)doc")
      .def(py::init<>(), "The defaults.")
      .def_static(
          "from_file",
          [](const std::filesystem::path &path) {
            auto c = ExportConfig::fromFile(path.string());
            if (!c.ok())
              raise(c.message());
            return std::move(c.value());
          },
          py::arg("path"), "Parses an export_config.yaml.")
      .def_static(
          "from_text",
          [](const std::string &text, const std::string &source) {
            auto c = ExportConfig::fromText(text, source);
            if (!c.ok())
              raise(c.message());
            return std::move(c.value());
          },
          py::arg("text"), py::arg("source") = "<text>",
          "Parses YAML text; `source` names it in errors.")
      .def(
          "set",
          [](ExportConfig &c, const std::string &assignment) {
            check(c.set(assignment));
          },
          py::arg("assignment"),
          "Applies one `key=value` override (the value in YAML syntax), as "
          "etllm-export --set does.")
      .def("get", &getKey, py::arg("key"), "The value of a key, typed.")
      .def("is_explicit", &ExportConfig::isExplicit, py::arg("key"),
           "True when the key was given (file or set), not defaulted.")
      .def("to_yaml", &ExportConfig::toYaml)
      .def("__repr__", [](const ExportConfig &c) {
        return "ExportConfig(\n" + c.toYaml() + ")";
      });
  m.def(
      "export_config_schema",
      [] {
        py::list out;
        for (const ConfigKey &k : exportConfigSchema()) {
          py::dict d;
          d["name"] = k.name;
          d["type"] = typeName(k.type);
          d["default"] = k.defaultText;
          py::list allowed;
          for (const char *a : k.allowed)
            allowed.append(a);
          d["allowed"] = allowed;
          d["description"] = k.description;
          d["example"] = k.example;
          out.append(d);
        }
        return out;
      },
      "Every export_config.yaml key: name, type, default, allowed values, "
      "description, example.");
  m.def("recipe_names", &recipeNames, "The named recipes (pipelines).");
  m.def("recipe_aliases", &recipeAliases,
        "The recipes' former names (xnnpack-*), each with its recipe "
        "(cpu-*): accepted wherever a recipe is named.");
  m.def("supported_aten_ops", &supportedAtenOps,
        "The ATen operators export_llm maps to etllm ops.");

  //===--- Export ---------------------------------------------------------===//
  m.def(
      "export_checkpoint",
      [](const std::string &model, const ExportConfig &config,
         const std::string &output, const std::string &tokenizer,
         const std::string &dumpDir, const std::string &stopAfter,
         py::object progress) {
        ExportRequest r =
            request(output, tokenizer, dumpDir, stopAfter, std::move(progress));
        py::gil_scoped_release release;
        auto context = makeContext();
        check(runExport(Artifact::checkpoint(model), config, r, *context));
      },
      py::arg("model"), py::arg("config"), py::arg("output"),
      py::arg("tokenizer") = "", py::arg("dump_dir") = "",
      py::arg("stop_after") = "", py::arg("progress") = py::none(),
      "etllm-export: a checkpoint (HF directory, GGUF, llama2.c) to a program "
      "(.pte) or IR (.mlir).");
  m.def(
      "export_aten_graph",
      [](const std::string &json, const ExportConfig &config,
         const std::string &output, const std::string &tokenizer,
         const std::string &dumpDir, const std::string &stopAfter,
         py::object progress) {
        ExportRequest r =
            request(output, tokenizer, dumpDir, stopAfter, std::move(progress));
        py::gil_scoped_release release;
        auto context = makeContext();
        auto module = importGraph(*context, json, "the captured module");
        if (stopAfter == "import") {
          if (!llvm::StringRef(output).ends_with(".mlir"))
            raise("stop_after='import' leaves no program to write: use an "
                  ".mlir output");
          writeText(output, printIR(*module));
          return;
        }
        check(runExport(Artifact::ir(std::move(module)), config, r, *context));
      },
      py::arg("graph"), py::arg("config"), py::arg("output"),
      py::arg("tokenizer") = "", py::arg("dump_dir") = "",
      py::arg("stop_after") = "", py::arg("progress") = py::none(),
      "The ATen graph description of a traced module (JSON) through the "
      "same stages and serializer as etllm-export.");
  m.def(
      "import_aten_graph",
      [](const std::string &json) {
        py::gil_scoped_release release;
        auto context = makeContext();
        return printIR(*importGraph(*context, json, "the captured module"));
      },
      py::arg("graph"), "The exported graph (IR text) of an ATen graph.");

  m.def(
      "serialize",
      [](const std::string &ir, const std::string &output,
         const std::string &tokenizer) {
        py::gil_scoped_release release;
        auto context = makeContext();
        auto module = parseIR(*context, ir);
        SerializeOptions so;
        so.pipeline = "python";
        so.tokenizerPath = tokenizer;
        auto out = makeSerializeStage(so, output)
                       ->run(Artifact::ir(std::move(module)), *context);
        if (!out)
          raise(llvm::toString(out.takeError()));
      },
      py::arg("ir"), py::arg("output"), py::arg("tokenizer") = "",
      "Serializes IR text (a module with `forward`) to a program file, as "
      "etllm-translate --mlir-to-pte does.");
  m.def(
      "plan_memory",
      [](const std::string &ir) {
        auto context = makeContext();
        auto module = parseIR(*context, ir);
        std::string diag;
        mlir::ScopedDiagnosticHandler h(context.get(),
                                        [&](mlir::Diagnostic &d) {
                                          diag += d.str() + "\n";
                                          return mlir::success();
                                        });
        auto r = planProgramMemory(*module);
        if (mlir::failed(r))
          raise("memory planning failed: " + diag);
        py::dict d;
        d["arena_bytes"] = r->arenaBytes;
        d["buffer_bytes"] = r->bufferBytes;
        d["constant_bytes"] = r->constantBytes;
        d["naive_arena_bytes"] = r->naiveArenaBytes;
        d["values"] = r->numValues;
        d["instructions"] = r->numInstructions;
        d["aliases"] = r->numAliases;
        return d;
      },
      py::arg("ir"),
      "The memory plan of IR text (etllm-plan-memory): arena, buffer and "
      "constant bytes.");

  //===--- Tester ---------------------------------------------------------===//
  py::class_<Tester>(m, "Tester", R"doc(
Chains stages and checks after any of them (include/etllm/Pipeline/Tester.h):
import().run_recipe("cpu-int4").check_count("etllm.sdpa", 5)
.run_and_compare(1e-4, 1e-4); failures are recorded: ok(), report().)doc")
      .def(py::init([](const std::string &path, py::object config) {
             ImportOptions o;
             if (!config.is_none())
               o = importOptionsFromConfig(config.cast<const ExportConfig &>());
             return std::make_unique<Tester>(path, o);
           }),
           py::arg("checkpoint"), py::arg("config") = py::none())
      .def_static("from_ir", &Tester::fromIR, py::arg("ir"))
      .def("import_", &Tester::import, py::return_value_policy::reference,
           py::call_guard<py::gil_scoped_release>())
      .def(
          "run_recipe",
          [](Tester &t, const std::string &recipe,
             py::object config) -> Tester & {
            RecipeOptions o;
            if (!config.is_none())
              applyConfigToRecipeOptions(config.cast<const ExportConfig &>(),
                                         o);
            py::gil_scoped_release release;
            return t.runRecipe(recipe, o);
          },
          py::arg("recipe"), py::arg("config") = py::none(),
          py::return_value_policy::reference)
      .def("run_passes", &Tester::runPasses, py::arg("name"),
           py::arg("pipeline"), py::return_value_policy::reference,
           py::call_guard<py::gil_scoped_release>())
      .def("check_count", &Tester::checkCount, py::arg("op"), py::arg("count"),
           py::return_value_policy::reference)
      .def("check_not", &Tester::checkNot, py::arg("op"),
           py::return_value_policy::reference)
      .def("check", &Tester::check, py::arg("op"),
           py::return_value_policy::reference)
      .def("run_and_compare", &Tester::runAndCompare, py::arg("atol"),
           py::arg("rtol"), py::arg("against") = "",
           py::arg("tokens") = std::vector<int64_t>(), py::arg("prefill") = 0,
           py::return_value_policy::reference,
           py::call_guard<py::gil_scoped_release>())
      .def("run_and_compare_relative", &Tester::runAndCompareRelative,
           py::arg("max_rel_rms"), py::arg("min_top1"), py::arg("against") = "",
           py::return_value_policy::reference,
           py::call_guard<py::gil_scoped_release>())
      .def("ok", &Tester::ok)
      .def("report", &Tester::report)
      .def("stage_names", &Tester::stageNames)
      .def("current_ir",
           [](const Tester &t) {
             mlir::ModuleOp m = t.currentIR();
             return m ? printIR(m) : std::string();
           })
      .def("last_max_abs_diff", &Tester::lastMaxAbsDiff);

  //===--- Formats --------------------------------------------------------===//
  m.def("hf_hub_cache_dir", &formats::hfHubCacheDir,
        "The Hugging Face hub cache directory (HF_HUB_CACHE, HF_HOME, "
        "~/.cache/huggingface/hub).");
  m.def(
      "resolve_hf_id",
      [](const std::string &id, const std::string &cacheDir) {
        auto r = formats::resolveHfHubId(id, cacheDir);
        if (!r.ok())
          raise(r.message());
        return *r;
      },
      py::arg("hf_id"), py::arg("cache_dir") = "",
      "The snapshot directory of a model in the local hub cache (never "
      "downloads).");
  m.def(
      "hf_config_json",
      [](const std::string &fields) {
        auto config = formats::modelConfigFromFieldsJson(fields, "config");
        if (!config.ok())
          raise(config.message());
        auto text = formats::toHfConfigJson(*config);
        if (!text.ok())
          raise(text.message());
        return *text;
      },
      py::arg("fields"),
      "The config.json transformers would write for a model config given as "
      "JSON, one key per field of etllm's ModelConfig (the keys of "
      "include/etllm/Models/ModelConfig.td; rope_scaling an object). The "
      "traits, per-layer flags and sparse layers are derived as the "
      "checkpoint readers derive them; the config is validated.");
  py::class_<PySafetensorsWriter>(m, "SafetensorsWriter",
                                  "Streams a .safetensors file: "
                                  "add_tensor() each, open(), write() each "
                                  "tensor's bytes in order, finish().")
      .def(py::init<>())
      .def("set_metadata", &PySafetensorsWriter::setMetadata)
      .def("add_tensor", &PySafetensorsWriter::addTensor, py::arg("name"),
           py::arg("dtype"), py::arg("shape"))
      .def("open", &PySafetensorsWriter::open, py::arg("path"))
      .def("write", &PySafetensorsWriter::write, py::arg("data"))
      .def("finish", &PySafetensorsWriter::finish);
  m.def(
      "permute_qk_rows_to_rotate_half",
      [](py::buffer data, const std::string &dtype,
         const std::vector<int64_t> &shape, int64_t heads) {
        auto dt = formats::parseDType(dtype);
        if (!dt.ok())
          raise(dt.message());
        auto bytes = formats::byteSize(*dt, shape);
        if (!bytes.ok())
          raise(bytes.message());
        py::buffer_info info = data.request();
        if (!PyBuffer_IsContiguous(info.view(), 'C') ||
            uint64_t(info.size) * uint64_t(info.itemsize) != *bytes)
          raise("permute_qk_rows_to_rotate_half: the data is not a "
                "contiguous tensor of " +
                std::to_string(*bytes) + " bytes");
        py::array_t<uint8_t> out{static_cast<py::ssize_t>(*bytes)};
        check(formats::permuteQkRowsToRotateHalf(
            *dt, shape, heads, static_cast<const uint8_t *>(info.ptr),
            out.mutable_data()));
        return out;
      },
      py::arg("data"), py::arg("dtype"), py::arg("shape"), py::arg("heads"),
      "Rows of a q/k projection from interleaved-pair RoPE order (Meta, "
      "llama2.c, GGUF) to Hugging Face rotate-half order; returns the bytes.");
}

} // namespace etllm::python
