//===- packing_ggml.h - The block layout of the ggml schemes ----*- C++ -*-===//
//
// Internal to runtime/backends/cpu: PackedQBlockLayout for the ggml
// block schemes (packing.h documents the layout), used by packing.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_PACKING_GGML_H
#define ETLLM_BACKENDS_CPU_PACKING_GGML_H

#include "etllm/runtime/cpu/packing.h"

namespace etllm::rt::cpu {

/// The fields of a PackedQBlockLayout of (n, k, q) that every scheme sets
/// alike: n, k, scheme, groupSize, bits, symmetric and rowGroups.
PackedQBlockLayout blockLayoutBase(int64_t n, int64_t k, const QuantInfo &q);

/// Sets l's sections from its tile and parameter sizes: the rowGroups x
/// kBlocks tiles of tileBytes, then rowGroups x scaleGroups scales of
/// paramBytes and, with offsets, as many offsets, each section aligned to
/// kQuantSectionAlign; then totalBytes.
void layOutBlockSections(PackedQBlockLayout &l);

/// PackedQBlockLayout::compute for a ggml scheme (q.scheme != Affine),
/// after QWeightLayout::compute accepted (n, k, q).
Result<PackedQBlockLayout> computeGgmlLayout(int64_t n, int64_t k,
                                             const QuantInfo &q);

/// Packs rows [row0, row0 + l.n) of a ggml-scheme QWeightLayout blob (the
/// GGUF's blocks, rows of l.k values) into `out` (l.totalBytes, zeroed).
void packGgmlRows(const uint8_t *blob, int64_t row0,
                  const PackedQBlockLayout &l, uint8_t *out);

} // namespace etllm::rt::cpu

#endif // ETLLM_BACKENDS_CPU_PACKING_GGML_H
