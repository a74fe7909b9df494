//===- Stage.cpp - Stages, pipelines of stages ----------------------------===//
#include "etllm/Pipeline/Stage.h"

#include "etllm/Formats/Checkpoint.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

namespace etllm {

namespace {
llvm::Error stageError(const std::string &stage, const llvm::Twine &message) {
  return llvm::make_error<llvm::StringError>(
      "stage '" + stage + "': " + message, llvm::inconvertibleErrorCode());
}

/// Collects diagnostics emitted while a stage runs, for its error message:
/// the diagnostic and its notes only. MLIR attaches the whole failing
/// operation (often the module: hundreds of lines of IR) to an error as a
/// "see current operation" note unless the context's printOpOnDiagnostic is
/// off, so it is off while the collector lives; IR after a failed pass is
/// printed only when asked (--mlir-print-ir-after-failure).
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : ctx(ctx), printedOp(ctx.shouldPrintOpOnDiagnostic()),
        handler(&ctx, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
            llvm::raw_string_ostream os(text);
            if (!llvm::isa<mlir::UnknownLoc>(d.getLocation()))
              os << d.getLocation() << ": ";
            os << d << "\n";
            for (mlir::Diagnostic &note : d.getNotes())
              os << "  note: " << note << "\n";
          }
          // Remarks and warnings are informational during export.
          return mlir::success();
        }) {
    ctx.printOpOnDiagnostic(false);
  }
  ~DiagnosticCollector() { ctx.printOpOnDiagnostic(printedOp); }
  /// What was collected, without the last newline.
  std::string message() const {
    return llvm::StringRef(text).rtrim('\n').str();
  }
  std::string text;

private:
  mlir::MLIRContext &ctx;
  bool printedOp;
  mlir::ScopedDiagnosticHandler handler;
};
} // namespace

const char *artifactKindName(Artifact::Kind kind) {
  switch (kind) {
  case Artifact::Kind::Checkpoint:
    return "checkpoint";
  case Artifact::Kind::IR:
    return "IR";
  case Artifact::Kind::Program:
    return "program";
  }
  return "?";
}

Artifact Artifact::checkpoint(std::string path) {
  Artifact a;
  a.kind = Kind::Checkpoint;
  a.checkpointPath = std::move(path);
  return a;
}

Artifact Artifact::ir(mlir::OwningOpRef<mlir::ModuleOp> module) {
  Artifact a;
  a.kind = Kind::IR;
  a.module = std::move(module);
  return a;
}

Artifact Artifact::clone() const {
  Artifact a;
  a.kind = kind;
  a.checkpointPath = checkpointPath;
  a.program = program;
  a.openedCheckpoint = openedCheckpoint;
  if (module)
    a.module = mlir::OwningOpRef<mlir::ModuleOp>((*module).clone());
  return a;
}

Stage::~Stage() = default;

namespace {

class ImportStage : public Stage {
public:
  explicit ImportStage(ImportOptions o) : options(std::move(o)) {}
  const std::string &name() const override { return stageName; }
  Artifact::Kind inputKind() const override {
    return Artifact::Kind::Checkpoint;
  }
  Artifact::Kind outputKind() const override { return Artifact::Kind::IR; }
  llvm::Expected<Artifact> run(Artifact input,
                               mlir::MLIRContext &context) override {
    formats::OpenOptions open;
    open.mmproj = options.mmproj;
    auto ckpt = formats::openCheckpoint(input.checkpointPath, open);
    if (!ckpt.ok())
      return stageError(stageName, ckpt.message());
    auto module = buildExportedGraph(&context, **ckpt, options);
    if (!module)
      return stageError(stageName, llvm::toString(module.takeError()));
    Artifact out = Artifact::ir(std::move(*module));
    // A composed encoder's weights join the checkpoint when the serializer
    // opens it (etllm.vision_weights); this one lacks them.
    if (options.visionEncoder.empty())
      out.openedCheckpoint = std::move(ckpt.value());
    return out;
  }

private:
  ImportOptions options;
  std::string stageName = "import";
};

class PassStage : public Stage {
public:
  PassStage(std::string name, std::function<void(mlir::OpPassManager &)> build)
      : stageName(std::move(name)), build(std::move(build)) {}
  const std::string &name() const override { return stageName; }
  Artifact::Kind inputKind() const override { return Artifact::Kind::IR; }
  Artifact::Kind outputKind() const override { return Artifact::Kind::IR; }
  llvm::Expected<Artifact> run(Artifact input,
                               mlir::MLIRContext &context) override {
    DiagnosticCollector diags(context);
    mlir::PassManager pm(&context);
    // --mlir-print-ir-after-failure and the other pass-manager options, when
    // the tool registered them (mlir::registerPassManagerCLOptions).
    if (llvm::cl::getRegisteredOptions().count("mlir-print-ir-after-failure") &&
        mlir::failed(mlir::applyPassManagerCLOptions(pm)))
      return stageError(stageName, "invalid pass manager options");
    build(pm);
    if (mlir::failed(pm.run(*input.module)))
      return stageError(stageName,
                        diags.text.empty() ? "a pass failed" : diags.message());
    return input;
  }

private:
  std::string stageName;
  std::function<void(mlir::OpPassManager &)> build;
};

class SerializeStage : public Stage {
public:
  SerializeStage(SerializeOptions o, std::string path)
      : options(std::move(o)), path(std::move(path)) {}
  const std::string &name() const override { return stageName; }
  Artifact::Kind inputKind() const override { return Artifact::Kind::IR; }
  Artifact::Kind outputKind() const override { return Artifact::Kind::Program; }
  llvm::Expected<Artifact> run(Artifact input,
                               mlir::MLIRContext &context) override {
    DiagnosticCollector diags(context);
    Artifact out;
    out.kind = Artifact::Kind::Program;
    auto failure = [&](const llvm::Twine &fallback) {
      return stageError(stageName,
                        diags.text.empty() ? fallback.str() : diags.message());
    };
    if (path.empty()) {
      llvm::raw_string_ostream os(out.program);
      if (mlir::failed(writeProgram(*input.module, withCheckpoint(input), os)))
        return failure("serialization failed");
      os.flush();
      return out;
    }
    // Stream to a temporary file next to the output, then rename. The
    // temporary is removed on every failure, also when a signal (a crash,
    // Ctrl-C) ends the process: LLVM's signal handlers remove the files
    // registered with RemoveFileOnSignal.
    std::string tmp = path + ".tmp";
    std::error_code ec;
    {
      llvm::raw_fd_ostream os(tmp, ec);
      if (ec)
        return stageError(stageName,
                          "cannot write '" + tmp + "': " + ec.message());
      llvm::sys::RemoveFileOnSignal(tmp);
      // Writes of whole 4 MiB chunks at 4 MiB offsets (raw_ostream flushes
      // only full buffers, and passes larger writes through in multiples
      // of its size), not of the file system's 4 KiB blocks: a kernel with
      // large page-cache folios then caches the new file in 2 MiB folios,
      // which a run right after the export maps with 2 MiB pages (571 of
      // a 1B program's 557 MiB of weights, against 385 with the default
      // 4 KiB buffer). On an Intel machine a program cached in 4 KiB pages
      // decoded 10-15% slower (docs/Performance.md, "Huge pages for the
      // weights").
      os.SetBufferSize(size_t(4) << 20);
      bool ok = mlir::succeeded(
          writeProgram(*input.module, withCheckpoint(input), os));
      os.close();
      if (!ok || os.has_error()) {
        os.clear_error();
        llvm::sys::fs::remove(tmp);
        llvm::sys::DontRemoveFileOnSignal(tmp);
        return failure(llvm::Twine("cannot write '") + path + "'");
      }
    }
    ec = llvm::sys::fs::rename(tmp, path);
    if (ec)
      llvm::sys::fs::remove(tmp);
    llvm::sys::DontRemoveFileOnSignal(tmp);
    if (ec)
      return stageError(stageName,
                        "cannot write '" + path + "': " + ec.message());
    out.programPath = path;
    return out;
  }

private:
  /// The options, with the checkpoint the import stage left open.
  SerializeOptions withCheckpoint(const Artifact &input) const {
    SerializeOptions o = options;
    if (!o.checkpoint)
      o.checkpoint = input.openedCheckpoint;
    return o;
  }
  SerializeOptions options;
  std::string path;
  std::string stageName = "serialize";
};

} // namespace

std::unique_ptr<Stage> makeImportStage(ImportOptions options) {
  return std::make_unique<ImportStage>(std::move(options));
}

std::unique_ptr<Stage> makePassStage(StageSpec spec) {
  return std::make_unique<PassStage>(spec.name, spec.build);
}

llvm::Expected<std::unique_ptr<Stage>> makePassStage(std::string name,
                                                     std::string pipeline) {
  std::string err;
  llvm::raw_string_ostream os(err);
  auto parsed = mlir::parsePassPipeline(pipeline, os);
  if (mlir::failed(parsed))
    return stageError(name, "invalid pass pipeline '" + pipeline + "': " + err);
  mlir::OpPassManager stored = *parsed;
  return std::unique_ptr<Stage>(
      std::make_unique<PassStage>(name, [stored](mlir::OpPassManager &pm) {
        static_cast<mlir::OpPassManager &>(pm) = stored;
      }));
}

std::unique_ptr<Stage> makeSerializeStage(SerializeOptions options,
                                          std::string outputPath) {
  return std::make_unique<SerializeStage>(std::move(options),
                                          std::move(outputPath));
}

llvm::Expected<Artifact> StagePipeline::run(
    Artifact input, mlir::MLIRContext &context,
    const std::function<llvm::Error(size_t, const Stage &, const Artifact &)>
        &afterStage) {
  Artifact current = std::move(input);
  for (size_t i = 0; i < stages.size(); ++i) {
    Stage &s = *stages[i];
    if (s.inputKind() != current.kind)
      return stageError(s.name(), llvm::Twine("expects a ") +
                                      artifactKindName(s.inputKind()) +
                                      ", the previous stage produced a " +
                                      artifactKindName(current.kind));
    auto next = s.run(std::move(current), context);
    if (!next)
      return next.takeError();
    current = std::move(*next);
    if (current.kind == Artifact::Kind::IR &&
        mlir::failed(mlir::verify(*current.module)))
      return stageError(s.name(), "produced IR that does not verify");
    if (afterStage)
      if (llvm::Error e = afterStage(i, s, current))
        return e;
  }
  return current;
}

} // namespace etllm
