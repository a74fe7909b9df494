//===- traffic.cpp - Bytes a decode step reads, from the program ----------===//
#include "etllm/runtime/bench/traffic.h"

#include "etllm/runtime/backend.h"
#include "etllm/schema/program_generated.h"

#include <algorithm>
#include <vector>

namespace etllm::rt::bench {

namespace fbs = etllm::schema;

double DecodeTraffic::meanBytes(int64_t first, int64_t n) const {
  if (n <= 0)
    return 0;
  // Positions first .. first + n - 1 read (p + 1) rows each.
  double rows = double(n) * double(first + 1) + double(n) * double(n - 1) / 2;
  return double(weightBytes + otherBufferBytes) +
         double(kvBytesPerPosition) * rows / double(n);
}

Result<int64_t> forwardContextLength(const Program &program,
                                     const std::string &methodName) {
  const fbs::Method *m = nullptr;
  for (const fbs::Method *x : *program.schema().methods())
    if (x->name()->str() == methodName)
      m = x;
  if (!m)
    return Error(program.name() + ": no method '" + methodName + "'");
  auto value = [&](const flatbuffers::Vector<uint32_t> *list,
                   uint32_t i) -> const fbs::Tensor * {
    return list && i < list->size() ? m->values()->Get(list->Get(i)) : nullptr;
  };
  const fbs::Tensor *tokens = value(m->inputs(), 0),
                    *pos = value(m->inputs(), 1),
                    *logits = value(m->outputs(), 0);
  auto rank = [](const fbs::Tensor *t) {
    return t && t->sizes() ? int64_t(t->sizes()->size()) : -1;
  };
  if (!tokens || !pos || !logits || m->inputs()->size() != 2 ||
      m->outputs()->size() != 1 || tokens->dtype() != fbs::DType::I64 ||
      rank(tokens) != 2 || pos->dtype() != fbs::DType::I64 || rank(pos) != 1 ||
      logits->dtype() != fbs::DType::F32 || rank(logits) < 1)
    return Error(program.name() + ": `" + methodName +
                 "` is not forward(tokens: i64 [1, seq], input_pos: i64 "
                 "[seq]) -> f32 logits");
  int64_t ctx = tokens->sizes()->Get(1);
  // Ring caches: calls of at most the chunk over the whole context.
  if (program.metadata().ringChunk > 0)
    return program.metadata().contextLimit();
  if (program.metadata().maxSeqLen > 0)
    ctx = std::min(ctx, program.metadata().maxSeqLen);
  return ctx;
}

std::vector<std::string> delegateBackends(const Program &program) {
  std::vector<std::string> ids;
  if (const auto *ds = program.schema().delegates())
    for (const fbs::Delegate *d : *ds) {
      std::string id = canonicalBackendId(d->backend()->str());
      if (std::find(ids.begin(), ids.end(), id) == ids.end())
        ids.push_back(id);
    }
  return ids;
}

Result<DecodeTraffic> analyzeDecodeTraffic(const Module &module,
                                           const std::string &methodName) {
  const Program &program = module.program();
  const fbs::Program &p = program.schema();
  const fbs::Method *method = nullptr;
  for (const fbs::Method *m : *p.methods())
    if (m->name()->str() == methodName)
      method = m;
  if (!method)
    return Error(program.name() + ": no method '" + methodName + "'");
  uint32_t numConstants = p.constants() ? p.constants()->size() : 0;
  // Bytes of each constant read per step (max over its uses).
  std::vector<uint64_t> read(numConstants, 0);
  DecodeTraffic t;
  for (uint32_t c = 0; c < numConstants; ++c)
    t.constantBytes += p.constants()->Get(c)->size();

  uint32_t numValues = method->values() ? method->values()->size() : 0;
  // The constant a value's storage is (following aliases), or -1. The
  // program was verified at load: indices are in range and aliases acyclic.
  auto constantOf = [&](uint32_t v) -> int64_t {
    for (uint32_t hops = 0; v < numValues && hops <= numValues; ++hops) {
      const fbs::Tensor *x = method->values()->Get(v);
      if (x->storage() == fbs::StorageKind::CONSTANT)
        return x->constant() < numConstants ? int64_t(x->constant()) : -1;
      if (x->storage() != fbs::StorageKind::ALIAS)
        return -1;
      v = x->alias_of();
    }
    return -1;
  };
  auto use = [&](int64_t c, uint64_t bytes) {
    if (c >= 0)
      read[c] = std::max(read[c], bytes);
  };
  if (method->instructions())
    for (const fbs::InstructionEntry *e : *method->instructions()) {
      if (const fbs::DelegateCall *dc = e->instruction_as_DelegateCall()) {
        const auto &gathers = module.delegateGatherTables(dc->delegate());
        for (uint32_t c : module.delegateConstants(dc->delegate())) {
          if (c >= numConstants)
            continue;
          uint64_t size = p.constants()->Get(c)->size();
          auto g = std::lower_bound(gathers.begin(), gathers.end(),
                                    std::make_pair(c, uint64_t(0)));
          // A gather table: one row per decode step; else read in full.
          if (g != gathers.end() && g->first == c)
            use(c, (size + g->second - 1) / g->second);
          else
            use(c, size);
        }
        continue;
      }
      const fbs::KernelCall *kc = e->instruction_as_KernelCall();
      if (!kc || !kc->inputs())
        continue;
      const OpInfo *info = findOp(kc->op()->c_str(), kc->op()->size());
      OpId op = info ? info->id : OpId::NumOps;
      for (uint32_t i = 0; i < kc->inputs()->size(); ++i) {
        uint32_t v = kc->inputs()->Get(i);
        int64_t c = constantOf(v);
        if (c < 0)
          continue;
        uint64_t size = p.constants()->Get(uint32_t(c))->size();
        const fbs::Tensor *x = method->values()->Get(v);
        int64_t rank = x->sizes() ? x->sizes()->size() : 0;
        // The table input of a gather: the dimension it indexes, else -1.
        int64_t gatherDim = -1;
        if (i == 0 && (op == OpId::Embedding || op == OpId::QEmbedding))
          gatherDim = 0;
        else if (i == 0 && op == OpId::IndexSelect && kc->ints() &&
                 kc->ints()->size() == 1)
          gatherDim = kc->ints()->Get(0) < 0 ? kc->ints()->Get(0) + rank
                                             : kc->ints()->Get(0);
        // A mixture-of-experts layer's stacked experts [E, ...]: a decode
        // step reads the rows of its top_k experts only.
        const bool experts = op == OpId::Moe && i >= 2 && i <= 4 && rank == 3 &&
                             kc->ints() && kc->ints()->size() >= 1 &&
                             x->sizes()->Get(0) > 0;
        if (experts) {
          uint64_t e = uint64_t(x->sizes()->Get(0));
          uint64_t k =
              uint64_t(std::clamp<int64_t>(kc->ints()->Get(0), 1, int64_t(e)));
          use(c, (size + e - 1) / e * k);
        } else if (gatherDim >= 0 && gatherDim < rank &&
                   x->sizes()->Get(gatherDim) > 0) {
          // One index per decode step.
          uint64_t rows = uint64_t(x->sizes()->Get(gatherDim));
          use(c, (size + rows - 1) / rows);
        } else {
          use(c, size);
        }
      }
    }
  for (uint32_t c = 0; c < numConstants; ++c) {
    t.weightBytes += read[c];
    uint64_t size = p.constants()->Get(c)->size();
    if (read[c] > 0 && read[c] < size)
      t.gatherTableBytes += size;
  }

  // The context length: the program's, else the token input's bound.
  t.contextLength = program.metadata().maxSeqLen;
  if (t.contextLength <= 0 && method->inputs() && method->inputs()->size()) {
    const fbs::Tensor *in = method->values()->Get(method->inputs()->Get(0));
    if (in->sizes() && in->sizes()->size() >= 2)
      t.contextLength = in->sizes()->Get(1);
  }
  if (p.buffers())
    for (const fbs::Buffer *b : *p.buffers()) {
      // A dimension of the context length holds one row per position (the
      // division below does not depend on which dimension it is).
      bool perPosition = false;
      if (b->sizes() && t.contextLength > 1)
        for (int64_t s : *b->sizes())
          perPosition |= s == t.contextLength;
      if (perPosition)
        t.kvBytesPerPosition += b->nbytes() / uint64_t(t.contextLength);
      else
        t.otherBufferBytes += b->nbytes();
    }
  return t;
}

} // namespace etllm::rt::bench
