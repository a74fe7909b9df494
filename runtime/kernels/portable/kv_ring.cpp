//===- kv_ring.cpp - kv_ring_slots, kv_ring_mask --------------------------===//
//
// Ring KV caches (etllm-kv-ring): the slot each position is written to and
// the attention mask over the slots once a call's positions are written.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include <cmath>
#include <limits>

namespace etllm::rt::portable {

namespace {

/// The ring's attributes, checked: `sinks` >= 0 fixed slots, then
/// size - sinks >= 1 ring slots.
Status checkRing(const char *op, int64_t sinks, int64_t size) {
  if (sinks < 0 || size < 1 || sinks >= size)
    return opError(op, "a ring of size " + std::to_string(size) + " with " +
                           std::to_string(sinks) + " sinks has no ring slot");
  return Status();
}

/// The positions of one call: a 1-D index tensor, none negative.
Status checkPositions(const char *op, const Tensor &pos) {
  if (pos.rank != 1 || (pos.dtype != DType::I64 && pos.dtype != DType::I32))
    return opError(op, "positions must be i64/i32 [n], got " +
                           std::string(dtypeName(pos.dtype)) + " " +
                           pos.shapeString());
  for (int64_t i = 0; i < pos.sizes[0]; ++i)
    if (loadIndex(pos, i) < 0)
      return opError(op, "position " + std::to_string(loadIndex(pos, i)) +
                             " is negative");
  return Status();
}

/// The non-negative remainder of x by m > 0.
int64_t floorMod(int64_t x, int64_t m) { return ((x % m) + m) % m; }

} // namespace

/// kv_ring_slots: position p < sinks stays in slot p; a later one goes to
/// sinks + (p - sinks) mod (size - sinks).
Status kernelKvRingSlots(const KernelArgs &a) {
  const char *op = opName(OpId::KvRingSlots);
  const Tensor &pos = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  const int64_t sinks = a.ints[0], size = a.ints[1];
  ETLLM_RETURN_IF_ERROR(checkRing(op, sinks, size));
  ETLLM_RETURN_IF_ERROR(checkPositions(op, pos));
  if (out.dtype != pos.dtype)
    return opError(op, std::string("the slots must be ") +
                           dtypeName(pos.dtype) + ", not " +
                           dtypeName(out.dtype));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(pos)));
  const int64_t ring = size - sinks;
  for (int64_t i = 0; i < pos.sizes[0]; ++i) {
    const int64_t p = loadIndex(pos, i);
    const int64_t slot = p < sinks ? p : sinks + (p - sinks) % ring;
    if (out.dtype == DType::I64)
      out.ptr<int64_t>()[i] = slot;
    else
      out.ptr<int32_t>()[i] = int32_t(slot);
  }
  return Status();
}

/// kv_ring_mask: [1, 1, n, size] of 0 (visible) or -inf, for one call's n
/// ascending positions p0 .. pL written into the ring (kv_ring_slots).
Status kernelKvRingMask(const KernelArgs &a) {
  const char *op = opName(OpId::KvRingMask);
  const Tensor &pos = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  const int64_t sinks = a.ints[0], size = a.ints[1], window = a.ints[2];
  ETLLM_RETURN_IF_ERROR(checkRing(op, sinks, size));
  ETLLM_RETURN_IF_ERROR(checkPositions(op, pos));
  const int64_t ring = size - sinks, n = pos.sizes[0];
  if (window < 0 || window > ring)
    return opError(op, "window " + std::to_string(window) + " is outside [0, " +
                           std::to_string(ring) + "]");
  // Positions ascending by one: the slots hold p0 .. pL and, before p0, the
  // ring's older positions.
  for (int64_t i = 1; i < n; ++i)
    if (loadIndex(pos, i) != loadIndex(pos, 0) + i)
      return opError(op, "the positions of a call must ascend by one, got " +
                             std::to_string(loadIndex(pos, i - 1)) + " then " +
                             std::to_string(loadIndex(pos, i)));
  // Every query's window must still be in the ring after the call's last
  // position is written: n - 1 newer positions overwrite its oldest slots.
  const int64_t capacity = window > 0 ? ring - window + 1 : ring;
  if (n > capacity)
    return opError(op, "a call of " + std::to_string(n) +
                           " positions overwrites slots its own queries "
                           "attend to: a ring of " +
                           std::to_string(ring) + " slots with window " +
                           std::to_string(window) + " takes at most " +
                           std::to_string(capacity) + " per call");
  if (out.dtype != DType::F32)
    return opError(op, std::string("the mask must be f32, not ") +
                           dtypeName(out.dtype));
  Shape s;
  s.rank = 4;
  s.sizes[0] = 1;
  s.sizes[1] = 1;
  s.sizes[2] = n;
  s.sizes[3] = size;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, s));
  if (n == 0)
    return Status();
  const int64_t last = loadIndex(pos, n - 1);
  const float hidden = -std::numeric_limits<float>::infinity();
  float *m = out.ptr<float>();
  for (int64_t j = 0; j < size; ++j) {
    // The position slot j holds after the call (-1: none).
    int64_t held;
    if (j < sinks) {
      held = j <= last ? j : -1;
    } else {
      held = last - floorMod(last - j, ring);
      if (held < sinks)
        held = -1;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = loadIndex(pos, i);
      const bool visible = held >= 0 && held <= p &&
                           (j < sinks || window == 0 || held > p - window);
      m[i * size + j] = visible ? 0.0f : hidden;
    }
  }
  return Status();
}

} // namespace etllm::rt::portable
