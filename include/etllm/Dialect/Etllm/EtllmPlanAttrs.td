//===- EtllmPlanAttrs.td - The memory plan in the IR -------*- tablegen -*-===//
//
// etllm-plan-memory records where every value of `forward` lives as the
// discardable attribute `etllm.plan`: on each op whose results the program
// stores in planned memory, one entry per result; on each argument of
// `forward`, its slot. The serializer emits what is recorded (after checking
// that it is still a valid plan for the IR).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_PLANATTRS_TD
#define ETLLM_DIALECT_ETLLM_PLANATTRS_TD

include "etllm/Dialect/Etllm/EtllmBase.td"
include "mlir/IR/AttrTypeBase.td"

def Etllm_MemorySlotAttr : AttrDef<Etllm_Dialect, "MemorySlot"> {
  let mnemonic = "slot";
  let summary = "a value's place in a planned arena";
  let description = [{
    The value occupies bytes `[offset, offset + size)` of arena `arena`
    while it is live: from instruction `live[0]` (the one that produces it;
    0 for an input) through instruction `live[1]` (the last that reads it or
    any alias of it; the instruction count for an output). Instructions are
    numbered as the program file orders them (the ops of `forward` that
    become kernel or delegate calls, write-back copies included).

    ```mlir
    %e = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 1]>]} : tensor<4xf32>
    ```
  }];
  let parameters = (ins "uint32_t":$arena, "uint64_t":$offset,
                        "uint64_t":$size, "int64_t":$liveBegin,
                        "int64_t":$liveEnd);
  let assemblyFormat = "`<` `arena` $arena `,` `offset` $offset `,` `size` "
                       "$size `,` `live` ` ` `[` $liveBegin `,` $liveEnd `]` `>`";
}

def Etllm_MemoryAliasAttr : AttrDef<Etllm_Dialect, "MemoryAlias"> {
  let mnemonic = "alias";
  let summary = "a value stored in one of its op's operands";
  let description = [{
    The result is stored in the storage of operand `operand` of its op: a
    view of it (ViewLikeOpInterface) or the operand updated in place
    (TiedOpInterface). It has no bytes of its own; the root value lives as
    long as any of its aliases.

    ```mlir
    %u = etllm.kv_cache.update %c[%pos], %new {etllm.plan = [#etllm.alias<operand 0>]} : ...
    ```
  }];
  let parameters = (ins "unsigned":$operand);
  let assemblyFormat = "`<` `operand` $operand `>`";
}

#endif // ETLLM_DIALECT_ETLLM_PLANATTRS_TD
