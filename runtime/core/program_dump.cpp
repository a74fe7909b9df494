//===- program_dump.cpp - Readable listing of a program file --------------===//
#include "etllm/runtime/program.h"

#include <cstdio>

#include "etllm/schema/program_generated.h"

#include <sstream>

namespace etllm::rt {

namespace fbs = etllm::schema;

static const char *storageName(fbs::StorageKind k) {
  switch (k) {
  case fbs::StorageKind::PLANNED:
    return "planned";
  case fbs::StorageKind::CONSTANT:
    return "constant";
  case fbs::StorageKind::BUFFER:
    return "buffer";
  case fbs::StorageKind::ALIAS:
    return "alias";
  }
  return "?";
}

template <typename V> static void list(std::ostream &os, const V *v) {
  if (!v)
    return;
  bool first = true;
  for (auto x : *v) {
    os << (first ? "" : ", ") << x;
    first = false;
  }
}

std::string dumpProgram(const Program &program) {
  const fbs::Program &p = program.schema();
  std::ostringstream os;
  os << "program version " << p.version() << ", " << program.fileSize()
     << " bytes\n";
  uint32_t nseg = p.segments() ? p.segments()->size() : 0;
  os << "segments: " << nseg << "\n";
  for (uint32_t i = 0; i < nseg; ++i)
    os << "  [" << i << "] offset " << p.segments()->Get(i)->offset()
       << " size " << p.segments()->Get(i)->size() << "\n";
  uint32_t nconst = p.constants() ? p.constants()->size() : 0;
  os << "constants: " << nconst << "\n";
  for (uint32_t i = 0; i < nconst; ++i) {
    const fbs::Constant *c = p.constants()->Get(i);
    os << "  [" << i << "] " << c->name()->str() << ": segment " << c->segment()
       << " offset " << c->offset() << " size " << c->size();
    if (c->elements() > 0) {
      char bits[32];
      std::snprintf(bits, sizeof bits, "%.2f",
                    8.0 * double(c->size()) / double(c->elements()));
      os << " (" << c->elements() << " values, " << bits << " bits each)";
    }
    os << "\n";
  }
  uint32_t nbuf = p.buffers() ? p.buffers()->size() : 0;
  os << "buffers: " << nbuf << "\n";
  for (uint32_t i = 0; i < nbuf; ++i) {
    const fbs::Buffer *b = p.buffers()->Get(i);
    os << "  [" << i << "] " << b->name()->str() << ": "
       << dtypeName(static_cast<DType>(b->dtype())) << " [";
    list(os, b->sizes());
    os << "] " << b->nbytes() << " bytes\n";
  }
  uint32_t ndel = p.delegates() ? p.delegates()->size() : 0;
  os << "delegates: " << ndel << "\n";
  for (uint32_t i = 0; i < ndel; ++i) {
    const fbs::Delegate *d = p.delegates()->Get(i);
    os << "  [" << i << "] " << d->backend()->str() << ": segment "
       << d->segment() << " (" << program.segmentSize(d->segment())
       << " bytes)\n";
  }
  for (const fbs::Method *m : *p.methods()) {
    uint32_t nv = m->values() ? m->values()->size() : 0;
    uint32_t ni = m->instructions() ? m->instructions()->size() : 0;
    os << "method " << m->name()->str() << ": " << nv << " values, " << ni
       << " instructions, arenas [";
    list(os, m->arena_sizes());
    os << "] bytes\n  inputs: ";
    list(os, m->inputs());
    os << "\n  outputs: ";
    list(os, m->outputs());
    os << "\n";
    for (uint32_t v = 0; v < nv; ++v) {
      const fbs::Tensor *t = m->values()->Get(v);
      os << "  %" << v << " = " << dtypeName(static_cast<DType>(t->dtype()))
         << " [";
      for (uint32_t d = 0; t->sizes() && d < t->sizes()->size(); ++d) {
        bool dyn = t->dynamic_dims() && d < t->dynamic_dims()->size() &&
                   t->dynamic_dims()->Get(d);
        os << (d ? ", " : "") << (dyn ? "<=" : "") << t->sizes()->Get(d);
      }
      os << "] " << storageName(t->storage());
      switch (t->storage()) {
      case fbs::StorageKind::PLANNED:
        os << " arena " << t->arena() << " @" << t->offset();
        break;
      case fbs::StorageKind::CONSTANT:
        os << " #" << t->constant();
        break;
      case fbs::StorageKind::BUFFER:
        os << " #" << t->buffer();
        break;
      case fbs::StorageKind::ALIAS:
        os << " %" << t->alias_of();
        break;
      }
      os << " (" << t->capacity() << " bytes)";
      if (t->name() && t->name()->size())
        os << " " << t->name()->str();
      os << "\n";
    }
    for (uint32_t k = 0; k < ni; ++k) {
      const fbs::InstructionEntry *e = m->instructions()->Get(k);
      os << "  " << k << ": ";
      auto vals = [&](const flatbuffers::Vector<uint32_t> *idx) {
        bool first = true;
        if (idx)
          for (uint32_t i : *idx) {
            os << (first ? "" : ", ") << "%" << i;
            first = false;
          }
      };
      if (const fbs::KernelCall *kc = e->instruction_as_KernelCall()) {
        os << kc->op()->str() << "(";
        vals(kc->inputs());
        os << ")";
        if (kc->ints() && kc->ints()->size()) {
          os << " ints [";
          list(os, kc->ints());
          os << "]";
        }
        if (kc->floats() && kc->floats()->size()) {
          os << " floats [";
          list(os, kc->floats());
          os << "]";
        }
        os << " -> ";
        vals(kc->outputs());
      } else if (const fbs::DelegateCall *dc =
                     e->instruction_as_DelegateCall()) {
        os << "delegate #" << dc->delegate() << "(";
        vals(dc->inputs());
        os << ") -> ";
        vals(dc->outputs());
      }
      os << "\n";
    }
  }
  const ProgramMetadata &md = program.metadata();
  os << "metadata:\n  model_config: " << md.modelConfigJson
     << "\n  vocab_size: " << md.vocabSize
     << "\n  max_seq_len: " << md.maxSeqLen;
  if (md.ringChunk > 0)
    os << "\n  kv_ring: chunk " << md.ringChunk << ", sinks " << md.ringSinks;
  os << "\n  bos_id: " << md.bosId << "\n  eos_ids: [";
  for (size_t i = 0; i < md.eosIds.size(); ++i)
    os << (i ? ", " : "") << md.eosIds[i];
  os << "]\n  tokenizer: "
     << (md.tokenizer.kind.empty() ? "none" : md.tokenizer.kind);
  if (md.tokenizer.fileData)
    os << " (embedded file " << md.tokenizer.fileName << ", "
       << md.tokenizer.fileSize << " bytes)";
  if (!md.tokenizer.tokens.empty())
    os << " (" << md.tokenizer.tokens.size() << " tokens)";
  os << "\n  etllm_version: " << md.etllmVersion
     << "\n  pipeline: " << md.pipeline << "\n  stages: [";
  for (size_t i = 0; i < md.stages.size(); ++i)
    os << (i ? ", " : "") << md.stages[i];
  os << "]\n  inputs:\n";
  for (auto &[path, hash] : md.inputs)
    os << "    " << path << " " << hash << "\n";
  if (!md.chat.source.empty()) {
    os << "  chat_template: " << md.chat.source.size() << " bytes, bos_token "
       << md.chat.bosToken << ", eos_token " << md.chat.eosToken
       << ", stop_strings [";
    for (size_t i = 0; i < md.chat.stopStrings.size(); ++i)
      os << (i ? ", " : "") << md.chat.stopStrings[i];
    os << "]\n";
  }
  if (!program.loraHooks().empty()) {
    os << "lora: " << program.loraHooks().size() << " hooks, max_rank "
       << program.loraMaxRank()
       << ", content hash sha256:" << program.contentHash() << "\n";
    for (size_t i = 0; i < program.loraHooks().size(); ++i) {
      const LoraHookInfo &h = program.loraHooks()[i];
      os << "  hook " << i << ": " << h.name << " [" << h.outFeatures << ", "
         << h.inFeatures << "]\n";
    }
  }
  return os.str();
}

} // namespace etllm::rt
