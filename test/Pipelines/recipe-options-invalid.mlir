// A recipe's scheme options take the values of OptionEnums.def or
// `pipeline` (the recipe's own); any other value fails the pipeline with one
// error naming the recipe, the option and what it accepts.
// RUN: not etllm-opt %s --pipeline="cpu-int4{linear=int3}" 2>&1 | FileCheck %s --check-prefix=LINEAR
// LINEAR: error: cpu-int4: linear='int3' is not one of none, int4, int8, 8da4w, 8da8w, gguf (or pipeline: the recipe's)
// RUN: not etllm-opt %s --pipeline="portable{output-layer=int2 scale-type=f8}" 2>&1 | FileCheck %s --check-prefix=FIRST
// FIRST: error: portable: output-layer='int2' is not one of same, none, int4, int8, 8da4w, 8da8w, gguf (or pipeline: the recipe's)
// The near misses: the recipe's own and an enum value are accepted.
// RUN: etllm-opt %s --pipeline="cpu-int4{linear=pipeline scale-type=f32}" | FileCheck %s --check-prefix=OK
// OK: module
// The options with a default of their own are typed: the option parser
// names the value it does not know.
// RUN: not etllm-opt %s --pipeline="portable{moe=dense}" 2>&1 | FileCheck %s --check-prefix=MOE
// MOE: for the --moe option: Cannot find option named 'dense'
// RUN: not etllm-opt %s --pipeline="cpu-fp32{kv-cache-dtype=int4}" 2>&1 | FileCheck %s --check-prefix=KV
// KV: for the --kv-cache-dtype option: Cannot find option named 'int4'
module {
}
