//===- etllm-export.cpp - Model to IR / program file ----------------------===//
//
//   etllm-export --model PATH [--tokenizer PATH] [--config export_config.yaml]
//                [--set key=value ...] [--dump-dir DIR] -o OUT
//
// PATH is a Hugging Face directory, a .gguf or a llama2.c .bin, detected
// from the content. OUT ending in .mlir receives the exported graph right
// after import.
//
//===----------------------------------------------------------------------===//
#include "etllm/Config/ExportConfig.h"
#include "etllm/Import/GraphBuilder.h"
#include "etllm/InitAll.h"
#include "etllm/formats/checkpoint.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

static cl::OptionCategory category("etllm-export options");
static cl::opt<std::string> modelPath(
    "model", cl::desc("Hugging Face directory, .gguf or llama2.c checkpoint"),
    cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string> tokenizerPath(
    "tokenizer", cl::desc("Tokenizer file to embed in the program"),
    cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string> configPath(
    "config", cl::desc("export_config.yaml (docs/generated/ExportConfig.md)"),
    cl::value_desc("path"), cl::cat(category));
static cl::list<std::string> overrides(
    "set", cl::desc("Override one config key (repeatable)"),
    cl::value_desc("key=value"), cl::cat(category));
static cl::opt<std::string> dumpDir(
    "dump-dir", cl::desc("Write the IR after every stage as NN-<stage>.mlir"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (.mlir)"),
                                       cl::value_desc("path"),
                                       cl::cat(category));
static cl::opt<bool> printReference(
    "print-config-reference",
    cl::desc("Print the export_config.yaml reference (Markdown) and exit"),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress on stderr"),
                           cl::cat(category));

namespace {
using Clock = std::chrono::steady_clock;
Clock::time_point startTime;

void progress(const llvm::Twine &message) {
  if (quiet)
    return;
  double s = std::chrono::duration<double>(Clock::now() - startTime).count();
  llvm::errs() << llvm::format("[etllm-export %6.2fs] ", s) << message << "\n";
}

int fail(const llvm::Twine &message) {
  llvm::errs() << "etllm-export: error: " << message << "\n";
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "etllm-export: import a model (Hugging Face directory, GGUF or llama2.c "
      "checkpoint) and write its IR or program file\n");
  startTime = Clock::now();

  if (printReference) {
    llvm::outs() << etllm::exportConfigReferenceMarkdown();
    return 0;
  }
  if (modelPath.empty())
    return fail("--model is required");
  if (outputPath.empty())
    return fail("-o is required");

  etllm::ExportConfig config;
  if (!configPath.empty()) {
    auto parsed = etllm::ExportConfig::fromFile(configPath);
    if (!parsed.ok())
      return fail(parsed.message());
    config = std::move(parsed.value());
  }
  for (const std::string &o : overrides)
    if (etllm::rt::Status st = config.set(o); !st.ok())
      return fail(st.message());

  llvm::StringRef out(outputPath);
  if (!out.ends_with(".mlir"))
    return fail("output '" + outputPath +
                "': only .mlir output is supported by this build");

  progress("opening " + modelPath);
  auto ckpt = etllm::formats::openCheckpoint(modelPath);
  if (!ckpt.ok())
    return fail(ckpt.message());
  const auto &c = (*ckpt)->config();
  progress(llvm::Twine("opened ") + (*ckpt)->format() + " checkpoint: " +
           c.architecture + ", " + llvm::Twine(c.numLayers) + " layers, " +
           llvm::Twine((*ckpt)->tensors().size()) + " tensors");

  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  etllm::ImportOptions importOptions;
  importOptions.maxSeqLen = config.getInt("model.max_seq_len");
  importOptions.dtype = config.getString("model.dtype");
  importOptions.lastLogitsOnly = config.getBool("model.last_logits_only");
  auto module = etllm::buildExportedGraph(&context, **ckpt, importOptions);
  if (!module)
    return fail(llvm::toString(module.takeError()));
  progress("built the exported graph");

  std::string err;
  auto file = mlir::openOutputFile(outputPath, &err);
  if (!file)
    return fail(err);
  (**module)->print(file->os());
  file->keep();
  progress("wrote " + outputPath);
  return 0;
}
