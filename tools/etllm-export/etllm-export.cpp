//===- etllm-export.cpp - Model to program file ---------------------------===//
//
//   etllm-export (--model PATH | --hf-id ORG/NAME[@REV]) [--tokenizer PATH]
//                [--config export_config.yaml] [--set key=value ...]
//                [--pipeline NAME] [--dump-dir DIR]
//                [--stop-after-stage STAGE] -o OUT(.pte|.mlir)
//
// PATH is a Hugging Face directory, a .gguf or a llama2.c .bin, detected
// from the content; ORG/NAME a model in the local Hugging Face cache. The
// stages (lib/Pipeline/Export.cpp, shared with the Python package) are:
// import, the recipe's stages (docs/Pipelines.md), then serialize when OUT
// ends in .pte. OUT ending in .mlir receives the IR after the last stage run
// (`--stop-after-stage import` gives the exported graph itself).
//
//===----------------------------------------------------------------------===//
#include "etllm/Config/ExportConfig.h"
#include "etllm/Formats/HubCache.h"
#include "etllm/InitAll.h"
#include "etllm/Pipeline/Export.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace cl = llvm::cl;

static cl::OptionCategory category("etllm-export options");
static cl::opt<std::string>
    modelPath("model",
              cl::desc("Hugging Face directory, .gguf or llama2.c checkpoint"),
              cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string> hfId(
    "hf-id",
    cl::desc("A Hugging Face hub id (org/name[@revision]) resolved in the "
             "local cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub); "
             "never downloads"),
    cl::value_desc("id"), cl::cat(category));
static cl::opt<std::string>
    tokenizerPath("tokenizer",
                  cl::desc("Tokenizer file to embed in the program"),
                  cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string>
    configPath("config",
               cl::desc("export_config.yaml (docs/generated/ExportConfig.md)"),
               cl::value_desc("path"), cl::cat(category));
static cl::list<std::string>
    overrides("set", cl::desc("Override one config key (repeatable)"),
              cl::value_desc("key=value"), cl::cat(category));
static cl::opt<std::string>
    pipelineName("pipeline", cl::desc("Shorthand for --set pipeline.name=NAME"),
                 cl::value_desc("name"), cl::cat(category));
static cl::opt<std::string>
    dumpDir("dump-dir",
            cl::desc("Write the IR after every stage as NN-<stage>.mlir"),
            cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string>
    stopAfter("stop-after-stage",
              cl::desc("Stop after this stage (e.g. import)"),
              cl::value_desc("stage"), cl::cat(category));
static cl::opt<std::string>
    outputPath("o", cl::desc("Output: a program file (.pte) or IR (.mlir)"),
               cl::value_desc("path"), cl::cat(category));
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
      "checkpoint), transform it with a recipe and write a program file\n");
  startTime = Clock::now();

  if (printReference) {
    llvm::outs() << etllm::exportConfigReferenceMarkdown();
    return 0;
  }
  if (modelPath.empty() == hfId.empty())
    return fail("give one of --model or --hf-id");
  if (outputPath.empty())
    return fail("-o is required");
  std::string model = modelPath;
  if (!hfId.empty()) {
    auto resolved = etllm::formats::resolveHfHubId(hfId);
    if (!resolved.ok())
      return fail("--hf-id: " + resolved.message());
    model = *resolved;
  }

  etllm::ExportConfig config;
  if (!configPath.empty()) {
    auto parsed = etllm::ExportConfig::fromFile(configPath);
    if (!parsed.ok())
      return fail(parsed.message());
    config = std::move(parsed.value());
  }
  if (!pipelineName.empty())
    overrides.push_back("pipeline.name=" + pipelineName);
  for (const std::string &o : overrides)
    if (etllm::rt::Status st = config.set(o); !st.ok())
      return fail(st.message());

  etllm::registerAllPasses();
  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  etllm::ExportRequest request;
  request.outputPath = outputPath;
  request.tokenizerPath = tokenizerPath;
  request.dumpDir = dumpDir;
  request.stopAfterStage = stopAfter;
  request.progress = [](const std::string &line) { progress(line); };
  progress("exporting " + model + " with pipeline '" +
           config.getString("pipeline.name") + "'");
  if (llvm::Error e = etllm::runExport(etllm::Artifact::checkpoint(model),
                                       config, request, context))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
