//===- Stage.h - Stages, pipelines of stages --------------------*- C++ -*-===//
//
// One abstraction for production (etllm-export) and tests (Tester): a Stage
// is a named step with a typed input and output —
//
//   import     checkpoint path -> IR (level A)
//   <passes>   IR -> IR          (one MLIR pass pipeline: a recipe stage)
//   serialize  IR -> program bytes
//
// and a StagePipeline runs stages in order, checking that each stage's input
// kind is what the previous one produced, and reporting every artifact to a
// callback (etllm-export --dump-dir writes NN-<stage>.mlir from it).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PIPELINE_STAGE_H
#define ETLLM_PIPELINE_STAGE_H

#include "etllm/Import/GraphBuilder.h"
#include "etllm/Pipeline/Pipelines.h"
#include "etllm/Serialize/ProgramWriter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace etllm {

/// What flows between stages.
struct Artifact {
  enum class Kind { Checkpoint, IR, Program };
  Kind kind = Kind::Checkpoint;
  std::string checkpointPath;               // Kind::Checkpoint
  mlir::OwningOpRef<mlir::ModuleOp> module; // Kind::IR
  std::string program;     // Kind::Program: the file bytes, or empty when
  std::string programPath; // the stage wrote them to this file
  /// Kind::IR from the import stage: the checkpoint the parameters read,
  /// kept open (mapped) for the serializer, so that an export maps each
  /// input once.
  std::shared_ptr<const formats::Checkpoint> openedCheckpoint;

  static Artifact checkpoint(std::string path);
  static Artifact ir(mlir::OwningOpRef<mlir::ModuleOp> module);
  /// A deep copy (IR is cloned).
  Artifact clone() const;
};

const char *artifactKindName(Artifact::Kind kind);

class Stage {
public:
  virtual ~Stage();
  virtual const std::string &name() const = 0;
  virtual Artifact::Kind inputKind() const = 0;
  virtual Artifact::Kind outputKind() const = 0;
  /// Runs the stage. Errors name the stage.
  virtual llvm::Expected<Artifact> run(Artifact input,
                                       mlir::MLIRContext &context) = 0;
};

/// checkpoint -> IR.
std::unique_ptr<Stage> makeImportStage(ImportOptions options);
/// IR -> IR: one recipe stage (an MLIR pass pipeline).
std::unique_ptr<Stage> makePassStage(StageSpec spec);
/// IR -> IR: a textual pass pipeline ("builtin.module(...)"); an invalid
/// pipeline is an error.
llvm::Expected<std::unique_ptr<Stage>> makePassStage(std::string name,
                                                     std::string pipeline);
/// IR -> program bytes, in memory; or, with `outputPath`, streamed to that
/// file (written to `<path>.tmp` and renamed at the end, so a failure never
/// leaves a partial program behind).
std::unique_ptr<Stage> makeSerializeStage(SerializeOptions options,
                                          std::string outputPath = "");

/// An ordered list of stages.
class StagePipeline {
public:
  void add(std::unique_ptr<Stage> stage) { stages.push_back(std::move(stage)); }
  const std::vector<std::unique_ptr<Stage>> &getStages() const {
    return stages;
  }
  /// Runs every stage; `afterStage(index, stage, artifact)` sees each
  /// result. Fails on the first error or on a kind mismatch.
  llvm::Expected<Artifact>
  run(Artifact input, mlir::MLIRContext &context,
      const std::function<llvm::Error(size_t, const Stage &, const Artifact &)>
          &afterStage = nullptr);

private:
  std::vector<std::unique_ptr<Stage>> stages;
};

} // namespace etllm

#endif // ETLLM_PIPELINE_STAGE_H
