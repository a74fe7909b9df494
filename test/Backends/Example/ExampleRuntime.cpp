//===- ExampleRuntime.cpp - The example backend's runtime half ------------===//
//
// Parses the text blob strictly (it comes from a file) and runs it with
// plain loops. No LLVM/MLIR here: this is runtime code.
//
//===----------------------------------------------------------------------===//
#include "ExampleBackend.h"

#include "etllm/runtime/backend.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace etllm::rt;

namespace {

struct Instr {
  enum Kind { Input, Sigmoid, Mul, Output } kind;
  int out = -1, a = -1, b = -1, index = -1;
};

class ExampleInstance : public DelegateInstance {
public:
  std::vector<Instr> program;
  int numValues = 0, numInputs = 0, numOutputs = 0;
  std::vector<std::vector<float>> storage; // grown once to the largest size

  Status execute(Span<Tensor *const> inputs, Span<Tensor *const> outputs,
                 ExecContext &) override {
    if (inputs.size != size_t(numInputs) || outputs.size != size_t(numOutputs))
      return Error("example: called with the wrong number of tensors");
    const Tensor *shapeOf = nullptr;
    for (Tensor *t : inputs)
      if (t->dtype != DType::F32 || (shapeOf && t->numel() != shapeOf->numel()))
        return Error("example: inputs must be f32 of one shape");
      else
        shapeOf = t;
    int64_t n = shapeOf ? shapeOf->numel() : 0;
    storage.resize(numValues);
    std::vector<const float *> ptr(numValues, nullptr);
    for (const Instr &in : program) {
      switch (in.kind) {
      case Instr::Input:
        ptr[in.out] = inputs[in.index]->ptr<float>();
        break;
      case Instr::Sigmoid:
      case Instr::Mul: {
        std::vector<float> &dst = storage[in.out];
        if (dst.size() < size_t(n))
          dst.resize(n); // first call at a new size only
        for (int64_t i = 0; i < n; ++i)
          dst[i] = in.kind == Instr::Sigmoid
                       ? 1.0f / (1.0f + std::exp(-ptr[in.a][i]))
                       : ptr[in.a][i] * ptr[in.b][i];
        ptr[in.out] = dst.data();
        break;
      }
      case Instr::Output: {
        Tensor *o = outputs[in.index];
        ETLLM_RETURN_IF_ERROR(o->resize(shapeOf->sizes, shapeOf->rank));
        std::memcpy(o->data, ptr[in.out], n * sizeof(float));
        break;
      }
      }
    }
    return Status();
  }
};

class ExampleRuntimeBackend : public Backend {
public:
  explicit ExampleRuntimeBackend(const char *id) : id_(id) {}
  const char *id() const override { return id_; }
  Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *blob, size_t size,
       const std::vector<std::pair<std::string, std::string>> &,
       const ConstantTable &, ExecContext &, MemoryBudget &) override {
    std::istringstream is(
        std::string(reinterpret_cast<const char *>(blob), size));
    std::string line;
    if (!std::getline(is, line) || line != "example-blob 1")
      return Error("example: not an example blob (bad header)");
    auto inst = std::make_unique<ExampleInstance>();
    std::vector<bool> defined;
    auto use = [&](int v) {
      return v >= 0 && v < int(defined.size()) && defined[v];
    };
    while (std::getline(is, line)) {
      std::istringstream ls(line);
      std::string op;
      Instr in;
      ls >> op;
      if (op == "input" && (ls >> in.out >> in.index)) {
        in.kind = Instr::Input;
        inst->numInputs = std::max(inst->numInputs, in.index + 1);
      } else if (op == "sigmoid" && (ls >> in.out >> in.a) && use(in.a)) {
        in.kind = Instr::Sigmoid;
      } else if (op == "mul" && (ls >> in.out >> in.a >> in.b) && use(in.a) &&
                 use(in.b)) {
        in.kind = Instr::Mul;
      } else if (op == "output" && (ls >> in.out >> in.index) && use(in.out) &&
                 in.index >= 0 && in.index < 1024) {
        in.kind = Instr::Output;
        inst->numOutputs = std::max(inst->numOutputs, in.index + 1);
        inst->program.push_back(in);
        continue;
      } else {
        return Error("example: bad blob line '" + line + "'");
      }
      if (in.out != int(defined.size()) || in.out > 100000 ||
          (in.kind == Instr::Input && (in.index < 0 || in.index >= 1024)))
        return Error("example: bad value number in '" + line + "'");
      defined.push_back(true);
      inst->program.push_back(in);
    }
    inst->numValues = defined.size();
    return std::unique_ptr<DelegateInstance>(std::move(inst));
  }

private:
  const char *id_;
};

} // namespace

void etllm::example::registerExampleRuntimeBackend() {
  registerBackend(std::make_shared<ExampleRuntimeBackend>("example"));
  // The static-shapes-only compiler half's blobs are the same.
  registerBackend(std::make_shared<ExampleRuntimeBackend>("example_static"));
}
