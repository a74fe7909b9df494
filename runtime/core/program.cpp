//===- program.cpp - Loading a program file -------------------------------===//
//
// Program::load maps the file (or copies a buffer, 64-byte aligned), checks
// the 64-byte header, runs the flatbuffers Verifier and the alignment of
// 8-byte vectors it does not check, then hands the tables to
// validateProgram (program_validation.cpp) for the semantic checks. Only a
// program that passed them is read: its planned memory, metadata and LoRA
// hooks. Modules and methods are module.cpp's.
//
//===----------------------------------------------------------------------===//
#include "program_internal.h"

#include "etllm/runtime/flatbuffer_checks.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>

namespace etllm::rt {

using detail::addOverflows;
using detail::inRange;
using detail::str;
namespace fbs = etllm::schema;

namespace {

/// Rejects a program file; every message starts with the file name.
struct Checker {
  const std::string &name;
  Error operator()(const std::string &what) const {
    return detail::invalidProgram(name, what);
  }
};

/// The strings of an optional vector of strings (absent: none).
std::vector<std::string> strings(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *v) {
  std::vector<std::string> out;
  if (v)
    for (const flatbuffers::String *s : *v)
      out.push_back(str(s));
  return out;
}

/// The first vector of 8-byte elements that is not 8-aligned (its field's
/// name), or null. Runs after the Verifier (the tables are in bounds).
const char *misalignedVector(const fbs::Program &prog) {
  if (prog.buffers())
    for (const fbs::Buffer *b : *prog.buffers())
      if (!aligned8(b->sizes()))
        return "Buffer.sizes";
  if (const fbs::Metadata *m = prog.metadata())
    if (!aligned8(m->eos_ids()))
      return "Metadata.eos_ids";
  if (prog.methods())
    for (const fbs::Method *m : *prog.methods()) {
      if (!aligned8(m->arena_sizes()))
        return "Method.arena_sizes";
      if (m->values())
        for (const fbs::Tensor *t : *m->values())
          if (!aligned8(t->sizes()))
            return "Tensor.sizes";
      if (m->instructions())
        for (const fbs::InstructionEntry *e : *m->instructions())
          if (const fbs::KernelCall *k = e->instruction_as_KernelCall())
            if (!aligned8(k->ints()) || !aligned8(k->floats()))
              return "KernelCall.ints or .floats";
    }
  return nullptr;
}

} // namespace

Result<std::shared_ptr<Program>> Program::load(const std::string &path) {
  Result<std::shared_ptr<MappedFile>> file =
      MappedFile::open(path, MappedFile::Use::Weights);
  if (!file.ok())
    return file.error();
  std::shared_ptr<Program> p(new Program());
  p->name_ = path;
  p->file_ = *file;
  p->data_ = p->file_->data();
  p->size_ = p->file_->size();
  return verify(std::move(p));
}

Result<std::shared_ptr<Program>>
Program::loadFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name) {
  std::shared_ptr<Program> p(new Program());
  p->name_ = name;
  // Copy into 64-byte-aligned storage so segments keep their alignment.
  p->owned_.resize(size + 64);
  uintptr_t base = reinterpret_cast<uintptr_t>(p->owned_.data());
  size_t pad = (64 - base % 64) % 64;
  if (size)
    std::memcpy(p->owned_.data() + pad, data, size);
  p->data_ = p->owned_.data() + pad;
  p->size_ = size;
  return verify(std::move(p));
}

Result<std::shared_ptr<Program>> Program::verify(std::shared_ptr<Program> p) {
  Checker bad{p->name_};
  if (p->size_ < sizeof(FileHeader))
    return bad("the file is " + std::to_string(p->size_) +
               " bytes, smaller than the 64-byte header");
  FileHeader h;
  std::memcpy(&h, p->data_, sizeof h);
  if (std::memcmp(h.magic, kProgramMagic, 8) != 0)
    return bad("bad magic (not an etllm program file)");
  if (h.version < kMinProgramFormatVersion || h.version > kProgramFormatVersion)
    return bad("format version " + std::to_string(h.version) +
               " is not supported (this runtime reads versions " +
               std::to_string(kMinProgramFormatVersion) + " to " +
               std::to_string(kProgramFormatVersion) + ")");
  if (h.headerSize != sizeof(FileHeader))
    return bad("header size " + std::to_string(h.headerSize));
  if (h.flatbufferOffset < sizeof(FileHeader) || h.flatbufferOffset % 8 ||
      !inRange(h.flatbufferOffset, h.flatbufferSize, p->size_) ||
      h.flatbufferSize < 8)
    return bad("flatbuffer range [" + std::to_string(h.flatbufferOffset) +
               ", +" + std::to_string(h.flatbufferSize) +
               ") is outside the file");
  if (h.segmentAlignment == 0 || h.segmentAlignment > 65536 ||
      (h.segmentAlignment & (h.segmentAlignment - 1)) ||
      h.segmentBase % h.segmentAlignment ||
      h.segmentBase < h.flatbufferOffset + h.flatbufferSize ||
      !inRange(h.segmentBase, h.segmentDataSize, p->size_))
    return bad("segment data range [" + std::to_string(h.segmentBase) + ", +" +
               std::to_string(h.segmentDataSize) + ") or alignment " +
               std::to_string(h.segmentAlignment) + " is invalid");

  const uint8_t *fb = p->data_ + h.flatbufferOffset;
  flatbuffers::Verifier::Options vopts;
  vopts.max_depth = 64;
  vopts.max_tables = 10000000;
  flatbuffers::Verifier verifier(fb, h.flatbufferSize, vopts);
  if (!fbs::ProgramBufferHasIdentifier(fb))
    return bad("missing the ETLM file identifier");
  if (!fbs::VerifyProgramBuffer(verifier))
    return bad("the flatbuffer failed verification");
  const fbs::Program *prog = fbs::GetProgram(fb);
  // The Verifier checks scalars' alignment but a vector's only for its
  // 4-byte length: a file can place the elements of a [long], [ulong] or
  // [double] at 4 mod 8, and every read of them would be a misaligned load
  // (undefined behaviour; found by the pte fuzzer). The flatbuffer starts
  // 8-aligned (a mapped file or an owned copy, at an offset % 8 == 0), so
  // the elements' addresses are checked.
  if (const char *v = misalignedVector(*prog))
    return bad(std::string("the flatbuffer's ") + v +
               " vector is not 8-byte aligned");
  p->fb_ = prog;
  p->segmentBase_ = p->data_ + h.segmentBase;

  // The semantic checks; what passes is read without further checks.
  ETLLM_RETURN_IF_ERROR(detail::validateProgram(*prog, h, p->name_));

  // Planned memory (saturating: every term is bounded above, the sum of
  // many could still wrap).
  auto add = [](uint64_t &acc, uint64_t v) {
    if (addOverflows(acc, v, acc))
      acc = UINT64_MAX;
  };
  for (const fbs::Method *m : *prog->methods())
    if (m->arena_sizes())
      for (uint64_t a : *m->arena_sizes())
        add(p->planned_.arenas, a);
  if (prog->buffers())
    for (const fbs::Buffer *b : *prog->buffers())
      add(p->planned_.buffers, b->nbytes());
  if (!p->file_)
    p->planned_.constants = p->size_;

  // Metadata.
  ProgramMetadata &md = p->metadata_;
  if (const fbs::Metadata *m = prog->metadata()) {
    md.modelConfigJson = str(m->model_config_json());
    md.vocabSize = m->vocab_size();
    md.maxSeqLen = m->max_seq_len();
    md.bosId = m->bos_id();
    if (m->eos_ids())
      md.eosIds.assign(m->eos_ids()->begin(), m->eos_ids()->end());
    if (const fbs::TokenizerInfo *t = m->tokenizer()) {
      TokenizerMetadata &tm = md.tokenizer;
      tm.kind = str(t->kind());
      if (t->file_segment() >= 0) {
        tm.fileData = p->segmentData(t->file_segment());
        tm.fileSize = p->segmentSize(t->file_segment());
      }
      tm.fileName = str(t->file_name());
      tm.pre = str(t->pre());
      tm.tokens = strings(t->tokens());
      tm.merges = strings(t->merges());
      if (t->scores())
        tm.scores.assign(t->scores()->begin(), t->scores()->end());
      if (t->token_types())
        tm.tokenTypes.assign(t->token_types()->begin(),
                             t->token_types()->end());
      tm.bosId = t->bos_id();
      tm.eosId = t->eos_id();
      tm.unkId = t->unk_id();
      tm.padId = t->pad_id();
      tm.eotId = t->eot_id();
      tm.addBos = t->add_bos();
      tm.addSpacePrefix = t->add_space_prefix();
    }
    if (const fbs::Provenance *pv = m->provenance()) {
      md.etllmVersion = str(pv->etllm_version());
      md.pipeline = str(pv->pipeline());
      md.configYaml = str(pv->config_yaml());
      md.stages = strings(pv->stages());
      if (pv->inputs())
        for (const fbs::KeyValue *kv : *pv->inputs())
          md.inputs.push_back({str(kv->key()), str(kv->value())});
    }
    if (const fbs::KvRing *r = m->kv_ring()) { // validated
      md.ringChunk = r->chunk();
      md.ringSinks = r->sinks();
    }
    if (const fbs::ChatTemplateInfo *c = m->chat()) {
      md.chat.source = str(c->source());
      md.chat.bosToken = str(c->bos_token());
      md.chat.eosToken = str(c->eos_token());
      md.chat.stopStrings = strings(c->stop_strings());
    }
  }

  // LoRA hooks (validated).
  if (const fbs::LoraHooks *l = prog->lora()) {
    p->loraMaxRank_ = l->max_rank();
    for (const fbs::LoraHook *hk : *l->hooks())
      p->loraHooks_.push_back(
          {hk->name()->str(), hk->in_features(), hk->out_features()});
    static const char *kHex = "0123456789abcdef";
    const uint8_t *d = p->segmentData(uint32_t(l->hash_segment()));
    for (int i = 0; i < 32; ++i) {
      p->contentHash_ += kHex[d[i] >> 4];
      p->contentHash_ += kHex[d[i] & 15];
    }
  }
  return p;
}

uint64_t Program::PlannedMemory::total() const {
  uint64_t t = arenas;
  if (addOverflows(t, buffers, t) || addOverflows(t, constants, t))
    return UINT64_MAX;
  return t;
}

std::vector<std::string> Program::methodNames() const {
  std::vector<std::string> names;
  for (const fbs::Method *m : *fb_->methods())
    names.push_back(m->name()->str());
  return names;
}

const uint8_t *Program::segmentData(uint32_t index) const {
  return segmentBase_ + fb_->segments()->Get(index)->offset();
}
size_t Program::segmentSize(uint32_t index) const {
  return fb_->segments()->Get(index)->size();
}

} // namespace etllm::rt
