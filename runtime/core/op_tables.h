//===- op_tables.h - Lookups in the tables of ops.def -----------*- C++ -*-===//
//
// What kernel.cpp (attribute contracts) and verify_ops.cpp (value, rule and
// check contracts) share; not installed.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_CORE_OP_TABLES_H
#define ETLLM_RUNTIME_CORE_OP_TABLES_H

#include "etllm/runtime/kernel.h"

#include <cstddef>

namespace etllm::rt::detail {

/// The entries of `id` in a table whose entries are grouped by operator:
/// `ops[i]` is the operator of `items[i]`.
template <typename T, size_t N>
Span<const T> entriesOf(const OpId (&ops)[N], const T (&items)[N], OpId id) {
  size_t begin = 0;
  while (begin < N && ops[begin] != id)
    ++begin;
  size_t end = begin;
  while (end < N && ops[end] == id)
    ++end;
  return {begin < end ? &items[begin] : nullptr, end - begin};
}

} // namespace etllm::rt::detail

#endif // ETLLM_RUNTIME_CORE_OP_TABLES_H
