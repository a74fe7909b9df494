//===- Export.cpp - The export flow of etllm-export -----------------------===//
#include "etllm/Pipeline/Export.h"

#include "etllm/Config/ExportConfig.h"
#include "etllm/Formats/Lora.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <chrono>

namespace etllm {

namespace {
llvm::Error makeError(const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(message,
                                             llvm::inconvertibleErrorCode());
}

/// Writes `module` as text to `path` (via a temporary file: no partial
/// output on failure).
llvm::Error writeIR(mlir::ModuleOp module, const std::string &path) {
  std::string err;
  auto file = mlir::openOutputFile(path, &err);
  if (!file)
    return makeError(err);
  module->print(file->os());
  file->os().flush();
  if (file->os().has_error())
    return makeError("cannot write '" + path + "'");
  file->keep();
  return llvm::Error::success();
}
} // namespace

ImportOptions importOptionsFromConfig(const ExportConfig &c) {
  ImportOptions o;
  o.maxSeqLen = c.getInt("model.max_seq_len");
  o.dtype = c.getString("model.dtype");
  o.mmproj = c.getString("model.mmproj");
  o.visionEncoder = c.getString("model.vision_encoder");
  o.imagePreprocessor = c.getString("model.image_preprocessor");
  o.imageTokenId = c.getInt("model.image_token_id");
  // A static program's prefill chunk is padded: the runner needs the logits
  // of its last real token, so every position's.
  o.lastLogitsOnly = c.getBool("model.last_logits_only") &&
                     c.getInt("model.static_prefill_chunk") == 0;
  return o;
}

void applyConfigToRecipeOptions(const ExportConfig &c, RecipeOptions &o) {
  o.linear = c.getString("quantization.linear");
  o.groupSize = c.getInt("quantization.group_size");
  o.symmetric = c.getBool("quantization.symmetric");
  const std::string scales = c.getString("quantization.scale_dtype");
  o.scaleType = scales == "float16" ? "f16" : scales == "float32" ? "f32" : "";
  const std::string acts = c.getString("quantization.activations");
  o.activations = acts == "float32" ? "f32" : acts == "pipeline" ? "" : acts;
  o.embedding = c.getString("quantization.embedding");
  o.embeddingGroupSize = c.getInt("quantization.embedding_group_size");
  o.outputLayer = c.getString("quantization.output_layer");
  // The schema allows only these enums' spellings (ExportConfig.cpp).
  if (auto form = parseOptionEnum<MlaCacheForm>(c.getString("model.mla_cache")))
    o.mlaCache = *form;
  if (auto mode = parseOptionEnum<MoeMode>(c.getString("model.moe")))
    o.moe = *mode;
  if (auto dt =
          parseOptionEnum<KvCacheDtype>(c.getString("model.kv_cache_dtype")))
    o.kvCacheDtype = *dt;
  o.staticPrefillChunk = c.getInt("model.static_prefill_chunk");
  o.calibration = c.getString("quantization.calibration");
  o.calibrationSamples = c.getInt("quantization.calibration_samples");
  o.calibrationWindow = c.getInt("quantization.calibration_window");
  o.kvRingChunk = c.getInt("model.kv_ring_chunk");
  o.attentionSinks = c.getInt("model.attention_sinks");
  if (auto kv =
          parseOptionEnum<StaticKvCache>(c.getString("model.static_kv_cache")))
    o.staticKvCache = *kv;
  for (const std::string &e : c.getList("quantization.exclude"))
    o.exclude.push_back(e);
  for (const std::string &b : c.getList("backends"))
    o.backends.push_back(b);
  for (const std::string &b : c.getList("backend_options"))
    o.backendOptions.push_back(b);
  for (const std::string &t : c.getList("lora_runtime.targets"))
    o.loraTargets.push_back(t);
  o.loraMaxRank = c.getInt("lora_runtime.max_rank");
}

llvm::Error runExport(Artifact input, const ExportConfig &requestedConfig,
                      const ExportRequest &request,
                      mlir::MLIRContext &context) {
  // `--lora` adds to the config's `lora` list, so that the program's
  // provenance (the config it was made with) names every adapter and scale.
  ExportConfig config = requestedConfig;
  if (!request.lora.empty()) {
    std::string list;
    auto quote = [](const std::string &text) {
      std::string q = "\"";
      for (char c : text) {
        if (c == '"' || c == '\\')
          q += '\\';
        q += c;
      }
      return q + "\"";
    };
    for (const std::string &entry : config.getList("lora"))
      list += (list.empty() ? "" : ", ") + quote(entry);
    for (const std::string &entry : request.lora) {
      auto spec = formats::parseLoraSpec(entry, "--lora");
      if (!spec.ok())
        return makeError(spec.message());
      list += (list.empty() ? "" : ", ") + quote(entry);
    }
    if (rt::Status st = config.set("lora=[" + list + "]"); !st.ok())
      return makeError("--lora: " + st.message());
  }
  auto progress = [&](const std::string &line) {
    if (request.progress)
      request.progress(line);
  };
  const std::string &outputPath = request.outputPath;
  if (outputPath.empty())
    return makeError("no output path");
  llvm::StringRef out(outputPath);
  bool toProgram = out.ends_with(".pte");
  if (!toProgram && !out.ends_with(".mlir"))
    return makeError("output '" + outputPath + "' must end in .pte or .mlir");
  std::string tokenizerPath = request.tokenizerPath.empty()
                                  ? config.getString("tokenizer")
                                  : request.tokenizerPath;
  std::string dumpDir = request.dumpDir.empty()
                            ? config.getString("output.dump_dir")
                            : request.dumpDir;

  // The stages.
  std::string recipe = config.getString("pipeline.name");
  RecipeOptions recipeOptions;
  applyConfigToRecipeOptions(config, recipeOptions);
  recipeOptions.calibrationTokenizer = tokenizerPath;
  StagePipeline pipeline;
  std::vector<std::string> stageNames;
  bool fromCheckpoint = input.kind == Artifact::Kind::Checkpoint;
  // LoRA adapters, in order.
  std::vector<formats::LoraSpec> lora;
  auto addLora = [&](const std::string &text, const char *what) -> llvm::Error {
    auto spec = formats::parseLoraSpec(text, what);
    if (!spec.ok())
      return makeError(spec.message());
    lora.push_back(std::move(spec.value()));
    return llvm::Error::success();
  };
  for (const std::string &entry : config.getList("lora"))
    if (llvm::Error e = addLora(entry, "lora"))
      return e;
  if (fromCheckpoint) {
    ImportOptions importOptions = importOptionsFromConfig(config);
    importOptions.lora = std::move(lora);
    pipeline.add(makeImportStage(std::move(importOptions)));
    stageNames.push_back("import");
  } else if (input.kind != Artifact::Kind::IR || !input.module) {
    return makeError("the export input must be a checkpoint or IR");
  } else if (!lora.empty()) {
    return makeError("LoRA adapters (--lora, `lora`) are merged at import: "
                     "the input must be a checkpoint, not IR");
  }
  for (StageSpec &s : recipeStages(recipe, recipeOptions)) {
    stageNames.push_back(s.name);
    pipeline.add(makePassStage(std::move(s)));
  }
  const std::string &stopAfter = request.stopAfterStage;
  if (!stopAfter.empty() && std::find(stageNames.begin(), stageNames.end(),
                                      stopAfter) == stageNames.end()) {
    std::string known;
    for (auto &n : stageNames)
      known += (known.empty() ? "" : ", ") + n;
    return makeError("--stop-after-stage: pipeline '" + recipe +
                     "' has no stage '" + stopAfter + "' (it has: " + known +
                     ")");
  }
  SerializeOptions so;
  so.pipeline = recipe;
  so.configYaml = config.toYaml();
  so.stages = stageNames;
  so.stages.push_back("serialize");
  so.tokenizerPath = tokenizerPath;
  so.chatTemplatePath = request.chatTemplatePath;
  so.noChatTemplate = request.noChatTemplate;
  so.threads = request.threads;
  so.progressBytes = request.progressBytes;
  // Only long writes (big models) report progress: every 10% after the
  // first second.
  using Clock = std::chrono::steady_clock;
  double lastReported = -1;
  Clock::time_point writeStart;
  if (!request.progressBytes)
    so.progress = [&, lastReported, writeStart](double f) mutable {
      if (lastReported < 0 && f < 1.0) {
        writeStart = Clock::now();
        lastReported = 0;
        return;
      }
      if (std::chrono::duration<double>(Clock::now() - writeStart).count() <
          1.0)
        return;
      if (f - lastReported >= 0.1 || f >= 1.0) {
        lastReported = f;
        progress(llvm::formatv("writing weights {0:P0}", f).str());
      }
    };
  bool stopEarly = !stopAfter.empty() && stopAfter != stageNames.back();
  if (toProgram && !stopEarly)
    pipeline.add(makeSerializeStage(so, outputPath));
  else if (toProgram)
    return makeError("--stop-after-stage " + stopAfter +
                     " leaves no program to write: use an .mlir output");

  if (!dumpDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir))
      return makeError("--dump-dir " + dumpDir + ": " + ec.message());

  bool stopped = false;
  Artifact kept;
  auto result = pipeline.run(
      std::move(input), context,
      [&](size_t i, const Stage &stage, const Artifact &a) -> llvm::Error {
        progress("stage " + stage.name() + " done");
        if (!dumpDir.empty() && a.kind == Artifact::Kind::IR) {
          llvm::SmallString<256> path(dumpDir);
          llvm::sys::path::append(
              path, llvm::formatv("{0:2}-{1}.mlir", i, stage.name()).str());
          if (llvm::Error e = writeIR(*a.module, path.str().str()))
            return e;
        }
        if (!stopAfter.empty() && stage.name() == stopAfter) {
          kept = a.clone();
          stopped = true;
          return makeError("stop");
        }
        return llvm::Error::success();
      });
  Artifact final;
  if (!result) {
    std::string msg = llvm::toString(result.takeError());
    if (!stopped)
      return makeError(msg);
    final = std::move(kept);
  } else {
    final = std::move(*result);
  }
  // A program was streamed to its file by the serialize stage.
  if (final.kind != Artifact::Kind::Program)
    if (llvm::Error e = writeIR(*final.module, outputPath))
      return e;
  progress("wrote " + outputPath);
  return llvm::Error::success();
}

} // namespace etllm
