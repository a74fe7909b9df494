//===- etllm-export.cpp - Model to program file ---------------------------===//
//
//   etllm-export (--model PATH | --hf-id ORG/NAME[@REV]) [--tokenizer PATH]
//                [--config export_config.yaml] [--set key=value ...]
//                [--pipeline NAME] [--dump-dir DIR]
//                [--stop-after-stage STAGE] [--jobs N] -o OUT(.pte|.mlir)
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
#include "etllm/Target/Plugin.h"
#include "etllm/Pipeline/Export.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <unistd.h>

namespace cl = llvm::cl;

static cl::OptionCategory category("etllm-export options");
static cl::opt<std::string>
    modelPath("model",
              cl::desc("Hugging Face directory, .gguf or llama2.c checkpoint "
                       "(required unless --hf-id is given)"),
              cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string> hfId(
    "hf-id",
    cl::desc("A Hugging Face hub id (org/name[@revision]) resolved in the "
             "local cache (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub); "
             "never downloads (default: none; one of --model or --hf-id is "
             "required)"),
    cl::value_desc("id"), cl::cat(category));
static cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("Tokenizer file to embed in the program (default: the "
             "config's `tokenizer`, else none; a GGUF's "
             "vocabulary is embedded anyway)"),
    cl::value_desc("path"), cl::cat(category));
static cl::opt<std::string> chatTemplatePath(
    "chat-template",
    cl::desc("Chat template to embed instead of the model's own (Jinja "
             "text, or a tokenizer_config.json) (default: the model's: HF "
             "chat_template.jinja / tokenizer_config.json, GGUF "
             "tokenizer.chat_template)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<bool>
    noChatTemplate("no-chat-template",
                   cl::desc("Embed no chat template (default: off)"),
                   cl::cat(category));
static cl::list<std::string>
    loraAdapters("lora",
                 cl::desc("Merge a LoRA adapter (a PEFT directory or a "
                          "llama.cpp LoRA GGUF) into the "
                          "weights before quantization, with an optional "
                          "scale (repeatable; default: none, scale 1)"),
                 cl::value_desc("path[:scale]"), cl::cat(category));
static cl::opt<std::string>
    configPath("config",
               cl::desc("export_config.yaml (docs/generated/ExportConfig.md) "
                        "(default: none, the built-in defaults)"),
               cl::value_desc("path"), cl::cat(category));
static cl::list<std::string>
    overrides("set",
              cl::desc("Override one config key (repeatable; default: none)"),
              cl::value_desc("key=value"), cl::cat(category));
static cl::opt<std::string>
    pipelineName("pipeline", cl::desc("Shorthand for --set pipeline.name=NAME"),
                 cl::value_desc("name"), cl::cat(category));
static cl::opt<std::string>
    dumpDir("dump-dir",
            cl::desc("Write the IR after every stage as NN-<stage>.mlir "
                     "(default: the config's output.dump_dir, else none)"),
            cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string>
    stopAfter("stop-after-stage",
              cl::desc("Stop after this stage, e.g. import (default: run "
                       "every stage)"),
              cl::value_desc("stage"), cl::cat(category));
static cl::opt<std::string> outputPath(
    "o", cl::desc("Output: a program file (.pte) or IR (.mlir) (required)"),
    cl::value_desc("path"), cl::cat(category));
static cl::opt<bool> printReference(
    "print-config-reference",
    cl::desc("Print the export_config.yaml reference (Markdown) and exit "
             "(default: off)"),
    cl::cat(category));
static cl::opt<bool>
    quiet("quiet",
          cl::desc("No progress on stderr (default: progress: a bar on a "
                   "terminal, plain lines otherwise)"),
          cl::cat(category));
static cl::list<std::string>
    plugins("plugin",
            cl::desc("Load an out-of-tree backend's compiler half from this "
                     "shared library (repeatable; include/etllm/Target/"
                     "Plugin.h; default: none)"),
            cl::value_desc("file"), cl::cat(category));
// ("threads" is taken by an option inside libLLVM.)
static cl::opt<unsigned> jobs(
    "jobs",
    cl::desc("Threads converting and packing the weights (default 0: every "
             "core; the program is the same with any number)"),
    cl::init(0), cl::cat(category));

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

/// Progress of the weight conversion: on a terminal, a bar redrawn in place
/// (bytes done, rate, time left); otherwise a plain line per 10% for
/// conversions of 16 MiB or more (logs stay short for small models).
class WeightProgress {
public:
  WeightProgress(bool enabled, bool terminal)
      : enabled_(enabled), terminal_(terminal) {}

  void update(uint64_t done, uint64_t total) {
    if (!enabled_ || total == 0)
      return;
    auto now = Clock::now();
    if (done == 0 || !started_) {
      start_ = now;
      started_ = true;
      lastDraw_ = now - std::chrono::seconds(1);
    }
    double elapsed = std::chrono::duration<double>(now - start_).count();
    double rate = elapsed > 0 ? double(done) / elapsed : 0;
    double left = rate > 0 ? double(total - done) / rate : 0;
    double fraction = double(done) / double(total);
    constexpr double MiB = 1024.0 * 1024.0;
    if (terminal_) {
      bool last = done >= total;
      if (!last && now - lastDraw_ < std::chrono::milliseconds(100))
        return;
      lastDraw_ = now;
      constexpr int width = 30;
      int filled = int(fraction * width);
      std::string bar(size_t(filled), '=');
      if (filled < width)
        bar += '>' + std::string(size_t(width - filled - 1), ' ');
      llvm::errs() << llvm::format(
          "\r[etllm-export] weights [%s] %3.0f%% %7.1f/%.1f MiB %7.1f MiB/s "
          "%s\x1b[K",
          bar.c_str(), fraction * 100, done / MiB, total / MiB, rate / MiB,
          last        ? llvm::formatv("in {0:f1} s", elapsed).str().c_str()
          : done == 0 ? "time left unknown"
                      : llvm::formatv("{0:f1} s left", left).str().c_str());
      if (last)
        llvm::errs() << "\n";
      return;
    }
    if (total < (16u << 20))
      return;
    int step = int(fraction * 10 + 1e-9);
    if (step <= lastStep_)
      return;
    lastStep_ = step;
    progress(llvm::formatv("writing weights: {0,3:f0}% ({1:f1} of {2:f1} MiB, "
                           "{3:f1} MiB/s, {4:f1} s left)",
                           std::floor(fraction * 100), done / MiB, total / MiB,
                           rate / MiB, left));
  }

private:
  bool enabled_, terminal_, started_ = false;
  Clock::time_point start_, lastDraw_;
  int lastStep_ = 0;
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The recipe's default comes from the config's declaration.
  static const std::string pipelineHelp =
      "Shorthand for --set pipeline.name=NAME (default: " +
      etllm::ExportConfig().getString("pipeline.name") + ")";
  pipelineName.setDescription(pipelineHelp);
  // --mlir-print-ir-after-failure and friends, for the pass stages.
  mlir::registerPassManagerCLOptions();
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
  for (const std::string &plugin : plugins)
    if (llvm::Error e = etllm::loadBackendPlugin(plugin))
      return fail(llvm::toString(std::move(e)));
  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  etllm::ExportRequest request;
  request.outputPath = outputPath;
  request.tokenizerPath = tokenizerPath;
  request.dumpDir = dumpDir;
  request.stopAfterStage = stopAfter;
  request.chatTemplatePath = chatTemplatePath;
  request.noChatTemplate = noChatTemplate;
  // More threads than this only cost stacks (the writer also stops at one
  // per constant).
  constexpr unsigned kMaxJobs = 1024;
  if (jobs > kMaxJobs)
    return fail("--jobs: at most " + std::to_string(kMaxJobs) +
                " threads, not " + std::to_string(jobs));
  request.threads = jobs;
  request.lora.assign(loraAdapters.begin(), loraAdapters.end());
  if (noChatTemplate && !chatTemplatePath.empty())
    return fail("--chat-template and --no-chat-template contradict each other");
  request.progress = [](const std::string &line) { progress(line); };
  WeightProgress weightProgress(!quiet, isatty(2) != 0);
  request.progressBytes = [&](uint64_t done, uint64_t total) {
    weightProgress.update(done, total);
  };
  progress("exporting " + model + " with pipeline '" +
           config.getString("pipeline.name") + "'");
  if (llvm::Error e = etllm::runExport(etllm::Artifact::checkpoint(model),
                                       config, request, context))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
