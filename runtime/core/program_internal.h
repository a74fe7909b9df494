//===- program_internal.h - Shared by the program-file sources --*- C++ -*-===//
//
// What program.cpp (loading), program_validation.cpp (the semantic checks)
// and module.cpp (instances and execution) share; not installed.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_CORE_PROGRAM_INTERNAL_H
#define ETLLM_RUNTIME_CORE_PROGRAM_INTERNAL_H

#include "etllm/runtime/program.h"
#include "etllm/schema/program_generated.h"

#include <cstdint>
#include <string>

namespace etllm::rt::detail {

namespace fbs = etllm::schema;

inline bool addOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

/// [offset, offset + size) lies inside [0, limit).
inline bool inRange(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end;
  return !addOverflows(offset, size, end) && end <= limit;
}

/// The text of an optional string field ("" when absent).
inline std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// The QuantInfo of schema quantization parameters (defaults when absent).
inline QuantInfo quantOf(const fbs::QuantParams *p) {
  QuantInfo q;
  if (p) {
    q.bits = p->bits();
    q.symmetric = p->symmetric();
    q.scaleType = static_cast<DType>(p->scale_dtype());
    q.groupSize = p->group_size();
    q.perToken = p->per_token();
    q.scheme = static_cast<QScheme>(p->scheme());
  }
  return q;
}

/// The QuantInfo of a value from the schema.
inline QuantInfo quantOf(const fbs::Tensor *t) { return quantOf(t->quant()); }

/// The QuantInfo of a mutable buffer (a QACT buffer: an int8 KV cache).
inline QuantInfo quantOf(const fbs::Buffer *b) { return quantOf(b->quant()); }

/// The error for an invalid program file `name`: "NAME: invalid program
/// file: WHAT".
inline Error invalidProgram(const std::string &name, const std::string &what) {
  return Error(name + ": invalid program file: " + what);
}

/// The semantic checks of a program the flatbuffers Verifier accepted
/// (program_validation.cpp): segments, constants and delegates in range;
/// buffers (dtype, shape, bytes; a QACT buffer is an int8 KV cache with
/// exactly its quantization); every method's values (dtype, rank, quantization,
/// storage bytes, planned range inside its arena, constant or buffer large
/// enough, aliases of earlier values), inputs and outputs (in range; nothing
/// writes a read-only value), instructions (a known operator with its contract,
/// a delegate in range); the tokenizer's segment; the LoRA hook table and every
/// lora call's hook. `header` is the file's header (segment alignment, format
/// version); errors come from invalidProgram(name, ...).
Status validateProgram(const fbs::Program &prog, const FileHeader &header,
                       const std::string &name);

} // namespace etllm::rt::detail

#endif // ETLLM_RUNTIME_CORE_PROGRAM_INTERNAL_H
