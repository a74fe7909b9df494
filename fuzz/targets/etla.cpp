//===- etla.cpp - Fuzz target: LoRA adapter files (.etla) at run time -----===//
//
// LoraAdapter::loadFromBuffer checks an adapter file against the program it
// is for (the identifier, the flatbuffers Verifier, the version, the base
// program's content hash, every target a hook with its shape, the rank, the
// value counts, every value finite). The program is the format fixture with
// hooks (runtime/test/fixtures/tiny-llama-lora-v1.pte), loaded once; its
// own adapter file is the seed, so mutations keep its hash and reach the
// later checks. When an input loads it is applied at scale 0.5 and one
// forward step runs; removed again, the step must give the base output bit
// for bit.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/runtime/lora.h"
#include "etllm/runtime/program.h"

#include <memory>
#include <vector>

using namespace etllm::rt;

namespace {

std::shared_ptr<Program> program;
std::unique_ptr<Module> module;

/// The last position's logits of a one-token forward step (empty on error).
std::vector<float> step() {
  auto forward = module->method("forward");
  if (!forward.ok())
    return {};
  module->resetState();
  int64_t token = 5, position = 0, tokSizes[2] = {1, 1}, posSize = 1;
  if (!(*forward)->setInput(0, DType::I64, tokSizes, 2, &token).ok() ||
      !(*forward)->setInput(1, DType::I64, &posSize, 1, &position).ok() ||
      !(*forward)->execute().ok())
    return {};
  const Tensor &out = (*forward)->output(0);
  if (out.dtype != DType::F32)
    return {};
  return std::vector<float>(out.ptr<float>(), out.ptr<float>() + out.numel());
}

std::vector<float> baseOutput;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  auto p = Program::load(std::string(ETLLM_FUZZ_FIXTURES_DIR) +
                         "/tiny-llama-lora-v1.pte");
  if (!p.ok())
    etllm::fuzz::propertyFailed(p.message().c_str());
  program = std::move(*p);
  auto m = Module::create(program);
  if (!m.ok())
    etllm::fuzz::propertyFailed(m.message().c_str());
  module = std::move(*m);
  baseOutput = step();
  if (baseOutput.empty())
    etllm::fuzz::propertyFailed("the fixture program does not run");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using etllm::fuzz::note;
  auto adapter = LoraAdapter::loadFromBuffer(data, size, "fuzz.etla", *program);
  if (!adapter.ok()) {
    note(adapter.message());
    return 0;
  }
  if (Status st = module->applyLora(*adapter, 0.5); !st.ok()) {
    note(st.message());
    return 0;
  }
  ETLLM_FUZZ_CHECK(!step().empty());
  ETLLM_FUZZ_CHECK(module->removeLora(**adapter).ok());
  ETLLM_FUZZ_CHECK(step() == baseOutput);
  note("applied, ran and removed");
  return 0;
}
