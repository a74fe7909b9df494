// RUN: etllm-translate --mlir-to-pte %s --split-input-file --verify-diagnostics -o /dev/null
// The serializer checks a recorded memory plan against the IR before it
// emits it: a plan that does not fit (the IR changed after planning, or the
// plan is wrong) is an error, one case per check.

// The plan's summary must say how large the arena is.
// expected-error @+1 {{malformed memory plan: etllm.memory needs a non-negative arena_bytes}}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> attributes {etllm.memory = {aliases = 0 : i64}} {
  return %x : tensor<4xf32>
}

// -----

// One entry per result.
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 128 : i64}} {
  // expected-error @+1 {{malformed memory plan: etllm.plan must hold one entry per result (1), got []}}
  %e = etllm.exp %x {etllm.plan = []} : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// An op added after planning has no slot.
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 128 : i64}} {
  %e = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 2]>]} : tensor<4xf32>
  // expected-error @+1 {{stale memory plan: the value has no slot (the plan says nothing); run etllm-plan-memory again after the last transformation}}
  %n = etllm.neg %e : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// Constants are not planned.
func.func @forward() -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 0 : i64}} {
  // expected-error @+1 {{stale memory plan: the value is stored in the constant segment, not #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}}
  %c = etllm.constant {etllm.plan = [#etllm.slot<arena 0, offset 0, size 64, live [0, 0]>]} dense<1.0> : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// A tied result is its operand's storage.
etllm.buffer @cache : tensor<1x1x4x2xf32>
func.func @forward(%pos: tensor<1xi64> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>},
                   %new: tensor<1x1x1x2xf32> {etllm.plan = #etllm.slot<arena 0, offset 64, size 64, live [0, 0]>})
    -> tensor<1x1x4x2xf32> attributes {etllm.memory = {arena_bytes = 256 : i64}} {
  %c = etllm.buffer.read @cache : tensor<1x1x4x2xf32>
  // expected-error @+1 {{stale memory plan: the result is tied to operand 0 (#etllm.alias<operand 0>), the plan says #etllm.slot<arena 0, offset 128, size 64, live [0, 1]>}}
  %u = etllm.kv_cache.update %c[%pos], %new {etllm.plan = [#etllm.slot<arena 0, offset 128, size 64, live [0, 1]>]} : (tensor<1x1x4x2xf32>, tensor<1xi64>, tensor<1x1x1x2xf32>) -> tensor<1x1x4x2xf32>
  return %u : tensor<1x1x4x2xf32>
}

// -----

// Only views and tied results alias an operand.
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 64 : i64}} {
  // expected-error @+1 {{stale memory plan: only a view or a tied result can alias an operand, not #etllm.alias<operand 0>}}
  %e = etllm.exp %x {etllm.plan = [#etllm.alias<operand 0>]} : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// A view of a constant would let its kernel write read-only memory.
func.func @forward() -> tensor<2x2xf32> attributes {etllm.memory = {arena_bytes = 64 : i64}} {
  %c = etllm.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{stale memory plan: a view of read-only storage cannot alias it}}
  %r = etllm.reshape %c [2, 2] {etllm.plan = [#etllm.alias<operand 0>]} : tensor<4xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// expected-error @+1 {{stale memory plan: arena 1 does not exist (a program has one arena)}}
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 1, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 64 : i64}} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{stale memory plan: offset 8 is not a multiple of 16}}
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 8, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 128 : i64}} {
  return %x : tensor<4xf32>
}

// -----

// The value grew (16 bytes) after it was planned in 8.
// expected-error @+1 {{stale memory plan: the slot holds 8 bytes, the value needs 16}}
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 8, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 64 : i64}} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{stale memory plan: the slot [64, +64) lies outside the arena of 64 bytes}}
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 64, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 64 : i64}} {
  return %x : tensor<4xf32>
}

// -----

// A use added after planning outlives the slot.
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 128 : i64}} {
  // expected-error @+1 {{stale memory plan: the slot is live over [0, 1], the value over [0, 2]}}
  %e = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 1]>]} : tensor<4xf32>
  %n = etllm.neg %e {etllm.plan = [#etllm.slot<arena 0, offset 0, size 64, live [1, 2]>]} : tensor<4xf32>
  %s = etllm.add %e, %n {etllm.plan = [#etllm.slot<arena 0, offset 0, size 64, live [2, 3]>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Two values alive at the same time in the same bytes: the second would
// clobber the first.
func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32> attributes {etllm.memory = {arena_bytes = 128 : i64}} {
  // expected-note @+1 {{the live value}}
  %e = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 2]>]} : tensor<4xf32>
  // expected-error @+1 {{memory plan: the value shares arena bytes [64, 128) with a value that is still live}}
  %n = etllm.neg %e {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [1, 2]>]} : tensor<4xf32>
  %s = etllm.add %e, %n {etllm.plan = [#etllm.slot<arena 0, offset 0, size 64, live [2, 3]>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
