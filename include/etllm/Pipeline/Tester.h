//===- Tester.h - Chain stages in tests and check after any -----*- C++ -*-===//
//
// The way ExecuTorch's backends/xnnpack/test/tester works, on etllm's
// stages:
//
//   Tester t(checkpointPath);
//   t.import().runRecipe("cpu-int4")   // every stage, each recorded
//    .checkCount("etllm.sdpa", 5).checkNot("etllm.softmax")
//    .runAndCompare(1e-4, 1e-4);           // last stage vs the one before
//   EXPECT_TRUE(t.ok()) << t.report();
//
// runAndCompare serializes both IRs into programs (in memory), runs them on
// the same tokens (a prefill, then decode steps) and compares the logits of
// every call. Failures are recorded, not thrown: ok() and report() say what
// happened.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PIPELINE_TESTER_H
#define ETLLM_PIPELINE_TESTER_H

#include "etllm/Pipeline/Stage.h"

#include "mlir/IR/MLIRContext.h"

#include <memory>
#include <string>
#include <vector>

namespace etllm {

/// The logits of one call of a program.
struct CallOutput {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Runs a serialized program on `tokens` (one prefill call with the first
/// `prefill` tokens, then one call per remaining token); returns every
/// call's logits. A static-shape program (`prefill` and `decode`) takes the
/// same calls through the runner's step (llm::StaticMethods: the prefill in
/// padded chunks) and returns each call's last token's logits. `threads` > 1 uses a pool. The caller registers the
/// runtime's backends first (rt::registerBuiltinBackends), as it registers
/// the compiler's passes and backends before using a Tester
/// (registerAllPasses; test/unittests/TestMain.cpp does both for the tests).
llvm::Expected<std::vector<CallOutput>>
runProgram(const std::string &programBytes, const std::vector<int64_t> &tokens,
           size_t prefill, size_t threads = 1);

class Tester {
public:
  /// Starts from a checkpoint (HF directory, GGUF or llama2.c file).
  explicit Tester(std::string checkpointPath, ImportOptions options = {});
  /// Starts from IR text.
  static std::unique_ptr<Tester> fromIR(const std::string &mlirText);
  ~Tester();

  Tester &import();
  /// Runs one stage on the current IR.
  Tester &runStage(StageSpec spec);
  /// Runs a textual pass pipeline as one stage.
  Tester &runPasses(const std::string &name, const std::string &pipeline);
  /// Runs every stage of a recipe, one at a time (each is recorded).
  Tester &runRecipe(const std::string &recipe,
                    const RecipeOptions &options = RecipeOptions());

  /// Exactly `count` ops named `opName` in the current IR.
  Tester &checkCount(const std::string &opName, int64_t count);
  /// No op named `opName`.
  Tester &checkNot(const std::string &opName);
  /// At least one op named `opName`.
  Tester &check(const std::string &opName);
  /// Compares the current stage with the one before it (or with stage
  /// `against`, by name) on `tokens` (default: a fixed 6-token prompt, then 4
  /// decode steps): |a - b| <= atol + rtol * |b| for every logit.
  Tester &runAndCompare(double atol, double rtol,
                        const std::string &against = "",
                        std::vector<int64_t> tokens = {}, size_t prefill = 0);

  /// For stages that change the numbers on purpose (quantization): the
  /// relative RMS error ||b - a|| / ||a|| of every call's logits must stay
  /// within `maxRelRms`, and the argmax (greedy token) must agree on at
  /// least `minTop1` of the calls.
  Tester &runAndCompareRelative(double maxRelRms, double minTop1,
                                const std::string &against = "");

  bool ok() const { return failures.empty(); }
  std::string report() const;
  /// Names of the stages run so far ("import", "swap-source", ...).
  std::vector<std::string> stageNames() const;
  /// The current IR (null before import).
  mlir::ModuleOp currentIR() const;
  /// Largest absolute logit difference of the last runAndCompare.
  double lastMaxAbsDiff() const { return maxAbsDiff; }
  /// Largest relative RMS error and top-1 agreement of the last
  /// runAndCompareRelative.
  double lastRelRms() const { return relRms; }
  double lastTop1() const { return top1; }

private:
  Tester();
  struct Record {
    std::string stage;
    Artifact artifact;
  };
  void fail(const std::string &message);
  int64_t countOps(const std::string &opName) const;

  std::unique_ptr<mlir::MLIRContext> context;
  std::string checkpointPath;
  ImportOptions importOptions;
  std::vector<Record> history;
  std::vector<std::string> failures;
  std::vector<std::string> log;
  double maxAbsDiff = 0, relRms = 0, top1 = 0;
  /// Runs the program of `against` (or the previous stage) and of the
  /// current stage on the default tokens.
  bool runBoth(const std::string &against, std::vector<int64_t> tokens,
               size_t prefill, std::vector<CallOutput> &ref,
               std::vector<CallOutput> &cur, std::string &refName,
               std::string &curName);
};

} // namespace etllm

#endif // ETLLM_PIPELINE_TESTER_H
