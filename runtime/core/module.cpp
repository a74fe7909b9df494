//===- module.cpp - Module instances and Method execution -----------------===//
//
// A Module is one instance of a validated Program (program.cpp,
// program_validation.cpp): its planned arenas and mutable buffers, its
// delegates initialized from their blobs, and each Method's value table and
// instruction list resolved to kernels. Everything read from the program
// here was checked when it was loaded.
//
//===----------------------------------------------------------------------===//
#include "program_internal.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/flags.h"
#include "etllm/runtime/profile.h"

#include <pthreadpool.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <unistd.h>

namespace etllm::rt {

using detail::quantOf;
using detail::str;
namespace fbs = etllm::schema;

namespace {

uint8_t *alignedAlloc(std::unique_ptr<uint8_t[]> &owner, size_t size) {
  owner.reset(new (std::nothrow) uint8_t[size + 64]());
  if (!owner)
    return nullptr;
  uintptr_t p = reinterpret_cast<uintptr_t>(owner.get());
  return reinterpret_cast<uint8_t *>((p + 63) & ~uintptr_t(63));
}

} // namespace

uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return uint64_t(1) << 62;
  return uint64_t(pages) * uint64_t(page);
}

Result<std::unique_ptr<Module>> Module::create(std::shared_ptr<Program> program,
                                               const ModuleOptions &options) {
  if (options.numThreads > size_t(INT64_MAX))
    return Error("threads: " + std::to_string(options.numThreads) +
                 " is out of range");
  ETLLM_RETURN_IF_ERROR(checkThreads("threads", int64_t(options.numThreads)));
  // The memory budget, before any allocation.
  const Program::PlannedMemory &plan = program->plannedMemory();
  uint64_t limit =
      options.maxMemory ? options.maxMemory : physicalMemoryBytes();
  if (plan.total() > limit) {
    auto mib = [](uint64_t b) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / 1048576.0);
      return std::string(buf);
    };
    return Error(
        program->name() + ": the program plans " +
        std::to_string(plan.total()) + " bytes (" + mib(plan.total()) +
        ": arenas " + std::to_string(plan.arenas) + ", mutable buffers " +
        std::to_string(plan.buffers) + ", constants in memory " +
        std::to_string(plan.constants) + "), more than the memory limit of " +
        std::to_string(limit) + " bytes (" + mib(limit) +
        (options.maxMemory ? ")" : ", the machine's physical memory)"));
  }
  // What the delegates may still allocate in init (their arenas, converted
  // weights, reserved scratch): they reserve it before allocating.
  MemoryBudget budget(limit, plan.total());
  std::unique_ptr<Module> mod(new Module());
  mod->program_ = program;
  if (options.numThreads > 1)
    mod->pool_ = pthreadpool_create(options.numThreads);
  mod->ctx_ = std::make_unique<ExecContext>(mod->pool_);
  const fbs::Program &fb = program->schema();
  const KernelTable &kernels =
      options.kernels ? *options.kernels : portableKernels();

  // Mutable buffers, zeroed.
  std::vector<uint8_t *> bufferPtrs;
  if (fb.buffers())
    for (const fbs::Buffer *b : *fb.buffers()) {
      mod->buffers_.emplace_back();
      uint8_t *p = alignedAlloc(mod->buffers_.back(), b->nbytes());
      if (!p)
        return Error(program->name() + ": cannot allocate " +
                     std::to_string(b->nbytes()) + " bytes for buffer '" +
                     b->name()->str() + "'");
      bufferPtrs.push_back(p);
      mod->bufferSizes_.push_back(b->nbytes());
    }

  // Delegates.
  // Records which constants each delegate asks for (Module::
  // delegateConstants: what a call of that delegate reads).
  struct ProgramConstants : ConstantTable {
    const Program &p;
    mutable std::vector<uint32_t> requested;
    mutable std::vector<std::pair<uint32_t, uint64_t>> gathered;
    explicit ProgramConstants(const Program &p) : p(p) {}
    size_t size() const override {
      return p.schema().constants() ? p.schema().constants()->size() : 0;
    }
    Result<std::pair<const uint8_t *, size_t>>
    get(uint32_t index) const override {
      if (index >= size())
        return Error("constant index " + std::to_string(index) +
                     " is out of range");
      const fbs::Constant *c = p.schema().constants()->Get(index);
      if (std::find(requested.begin(), requested.end(), index) ==
          requested.end())
        requested.push_back(index);
      return std::make_pair(p.segmentData(c->segment()) + c->offset(),
                            size_t(c->size()));
    }
    void noteGatherTable(uint32_t index, uint64_t rows) const override {
      // Only for constants the delegate asked for, with at least one row.
      if (rows == 0 || std::find(requested.begin(), requested.end(), index) ==
                           requested.end())
        return;
      for (auto &g : gathered)
        if (g.first == index)
          return;
      gathered.push_back({index, rows});
    }
  } constants(*program);
  if (fb.delegates())
    for (const fbs::Delegate *d : *fb.delegates()) {
      Backend *backend = findBackend(d->backend()->str());
      if (!backend)
        return Error(program->name() + ": the program needs backend '" +
                     d->backend()->str() +
                     "', which this runtime does not have");
      std::vector<std::pair<std::string, std::string>> specs;
      if (d->compile_specs())
        for (const fbs::KeyValue *kv : *d->compile_specs())
          specs.push_back({str(kv->key()), str(kv->value())});
      constants.requested.clear();
      constants.gathered.clear();
      auto inst = backend->init(program->segmentData(d->segment()),
                                program->segmentSize(d->segment()), specs,
                                constants, *mod->ctx_, budget);
      if (!inst.ok())
        return Error(program->name() + ": backend '" + backend->id() +
                     "': " + inst.message());
      mod->delegates_.push_back(std::move(inst.value()));
      std::sort(constants.requested.begin(), constants.requested.end());
      mod->delegateConstants_.push_back(std::move(constants.requested));
      std::sort(constants.gathered.begin(), constants.gathered.end());
      mod->delegateGathers_.push_back(std::move(constants.gathered));
    }

  for (const fbs::Method *m : *fb.methods()) {
    std::unique_ptr<Method> method(new Method());
    method->name_ = m->name()->str();
    method->module_ = mod.get();
    std::vector<uint8_t *> arenaPtrs;
    if (m->arena_sizes())
      for (uint64_t size : *m->arena_sizes()) {
        method->arenas_.emplace_back();
        uint8_t *p = alignedAlloc(method->arenas_.back(), size);
        if (!p)
          return Error(program->name() + ": cannot allocate an arena of " +
                       std::to_string(size) + " bytes");
        arenaPtrs.push_back(p);
        method->arenaSizes_.push_back(size);
      }
    uint32_t numValues = m->values() ? m->values()->size() : 0;
    method->values_.resize(numValues);
    for (uint32_t v = 0; v < numValues; ++v) {
      const fbs::Tensor *t = m->values()->Get(v);
      Tensor &x = method->values_[v];
      x.dtype = static_cast<DType>(t->dtype());
      x.rank = t->sizes() ? t->sizes()->size() : 0;
      for (int i = 0; i < x.rank; ++i)
        x.sizes[i] = t->sizes()->Get(i);
      x.capacity = t->capacity();
      x.quant = quantOf(t);
      switch (t->storage()) {
      case fbs::StorageKind::PLANNED:
        x.data = arenaPtrs[t->arena()] + t->offset();
        break;
      case fbs::StorageKind::CONSTANT: {
        const fbs::Constant *c = fb.constants()->Get(t->constant());
        // Constants are never written: the verifier rejects any instruction
        // output that resolves to one.
        x.data = const_cast<uint8_t *>(program->segmentData(c->segment()) +
                                       c->offset());
        break;
      }
      case fbs::StorageKind::BUFFER:
        x.data = bufferPtrs[t->buffer()];
        // An int8 KV cache is read with its buffer's parameters (validation
        // checked that the value states the same ones).
        if (x.dtype == DType::QAct)
          x.quant = quantOf(fb.buffers()->Get(t->buffer()));
        break;
      case fbs::StorageKind::ALIAS:
        x.data = method->values_[t->alias_of()].data;
        break;
      }
    }
    if (m->inputs())
      for (uint32_t i : *m->inputs())
        method->inputs_.push_back(&method->values_[i]);
    if (m->outputs())
      for (uint32_t i : *m->outputs())
        method->outputs_.push_back(&method->values_[i]);
    if (m->instructions())
      for (const fbs::InstructionEntry *e : *m->instructions()) {
        Method::Instr in;
        auto collect = [&](const flatbuffers::Vector<uint32_t> *idx,
                           std::vector<Tensor *> &out) {
          if (idx)
            for (uint32_t i : *idx)
              out.push_back(&method->values_[i]);
        };
        if (const fbs::KernelCall *kc = e->instruction_as_KernelCall()) {
          const OpInfo *op = findOp(kc->op()->c_str(), kc->op()->size());
          in.op = op->id;
          in.fn = kernels.get(op->id);
          if (!in.fn)
            in.fn = portableKernels().get(op->id);
          if (!in.fn)
            return Error(program->name() + ": no kernel for operator '" +
                         std::string(op->name) + "'");
          collect(kc->inputs(), in.inputs);
          collect(kc->outputs(), in.outputs);
          if (kc->ints())
            in.ints.assign(kc->ints()->begin(), kc->ints()->end());
          if (kc->floats())
            in.floats.assign(kc->floats()->begin(), kc->floats()->end());
        } else {
          const fbs::DelegateCall *dc = e->instruction_as_DelegateCall();
          in.delegate = int(dc->delegate());
          collect(dc->inputs(), in.inputs);
          collect(dc->outputs(), in.outputs);
        }
        method->instrs_.push_back(std::move(in));
      }
    mod->methods_.push_back(std::move(method));
  }
  return mod;
}

Module::~Module() {
  methods_.clear();
  delegates_.clear();
  ctx_.reset();
  if (pool_)
    pthreadpool_destroy(pool_);
}

Result<Method *> Module::method(const std::string &name) {
  std::string names;
  for (auto &m : methods_) {
    if (m->name() == name)
      return m.get();
    names += (names.empty() ? "" : ", ") + m->name();
  }
  return Error(program_->name() + ": no method '" + name +
               "' (it has: " + names + ")");
}

void Module::resetState() {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(buffers_[i].get());
    std::memset(reinterpret_cast<void *>((p + 63) & ~uintptr_t(63)), 0,
                bufferSizes_[i]);
  }
}

const std::vector<uint32_t> &Module::delegateConstants(size_t i) const {
  static const std::vector<uint32_t> none;
  return i < delegateConstants_.size() ? delegateConstants_[i] : none;
}

const std::vector<std::pair<uint32_t, uint64_t>> &
Module::delegateGatherTables(size_t i) const {
  static const std::vector<std::pair<uint32_t, uint64_t>> none;
  return i < delegateGathers_.size() ? delegateGathers_[i] : none;
}

std::string Module::delegateBackend(size_t i) const {
  const fbs::Program &fb = program_->schema();
  if (!fb.delegates() || i >= fb.delegates()->size())
    return "";
  return canonicalBackendId(fb.delegates()->Get(uint32_t(i))->backend()->str());
}

std::vector<std::pair<std::string, uint64_t>>
Module::delegateCounters(size_t i) const {
  if (i >= delegates_.size())
    return {};
  return delegates_[i]->counters();
}

size_t Module::bufferBytes() const {
  size_t n = 0;
  for (size_t s : bufferSizes_)
    n += s;
  return n;
}

Method::~Method() = default;

size_t Method::plannedBytes() const {
  size_t n = 0;
  for (size_t s : arenaSizes_)
    n += s;
  return n;
}

Status Method::setInput(size_t i, DType dtype, const int64_t *sizes, int rank,
                        const void *data) {
  if (i >= inputs_.size())
    return Error("method '" + name_ + "' has " +
                 std::to_string(inputs_.size()) + " inputs, not " +
                 std::to_string(i + 1));
  Tensor &t = *inputs_[i];
  if (dtype != t.dtype)
    return Error("input " + std::to_string(i) + " of '" + name_ + "' is " +
                 dtypeName(t.dtype) + ", got " + dtypeName(dtype));
  if (rank != t.rank)
    return Error("input " + std::to_string(i) + " of '" + name_ +
                 "' has rank " + std::to_string(t.rank) + ", got " +
                 std::to_string(rank));
  ETLLM_RETURN_IF_ERROR(t.resize(sizes, rank));
  std::memcpy(t.data, data, t.nbytes());
  return Status();
}

Status Method::execute() {
  ExecContext &ctx = *module_->ctx_;
  OpProfile *profile = ctx.profile();
  const int64_t start = profile ? profileNowNs() : 0;
  for (size_t k = 0; k < instrs_.size(); ++k) {
    Instr &in = instrs_[k];
    KernelArgs args;
    args.inputs = {in.inputs.data(), in.inputs.size()};
    args.outputs = {in.outputs.data(), in.outputs.size()};
    args.ints = {in.ints.data(), in.ints.size()};
    args.floats = {in.floats.data(), in.floats.size()};
    args.ctx = &ctx;
    const int64_t t0 = profile ? profileNowNs() : 0;
    Status st = in.delegate >= 0 ? module_->delegates_[in.delegate]->execute(
                                       args.inputs, args.outputs, ctx)
                                 : in.fn(args);
    if (profile) {
      const int64_t ns = profileNowNs() - t0;
      if (in.delegate >= 0)
        profile->addDelegateCall(ns);
      else
        profile->add(OpProfile::Where::Portable, in.op, ns);
    }
    if (!st.ok())
      return Error(module_->program().name() + ": method '" + name_ +
                   "', instruction " + std::to_string(k) + " (" +
                   (in.delegate >= 0 ? std::string("delegate")
                                     : std::string(opInfo(in.op).name)) +
                   "): " + st.message());
  }
  if (profile)
    profile->addExecute(profileNowNs() - start);
  return Status();
}

} // namespace etllm::rt
