// RUN: etllm-opt %s --split-input-file | etllm-opt --split-input-file | FileCheck %s
// Round trip of #etllm.model_config: every field printed, parsed again and
// printed the same; defaults are elided; keys parse in any order.

// Every field away from its default (a Gemma2-like config).
// CHECK-LABEL: module @every_field
// CHECK-SAME: etllm.model_config = #etllm.model_config<architecture = "Gemma2ForCausalLM", model_type = "gemma2", dtype = "bfloat16", hidden_size = 64, intermediate_size = 128, num_hidden_layers = 2, num_attention_heads = 4, num_key_value_heads = 2, head_dim = 32, vocab_size = 512, max_seq_len = 128, rotary_dim = 32, rms_norm_eps = 9.9999999999999995E-7, rope_theta = 1.000000e+04, attention_scale = 0.17677669529663687, sliding_window = 64, attn_logit_softcapping = 5.000000e+01, final_logit_softcapping = 3.000000e+01, tie_word_embeddings = true, bos_token_id = 2, eos_token_ids = [1, 107], layer_sliding_window = [true, false]>
module @every_field attributes {etllm.model_config = #etllm.model_config<
    architecture = "Gemma2ForCausalLM", model_type = "gemma2",
    dtype = "bfloat16", hidden_size = 64, intermediate_size = 128,
    num_hidden_layers = 2, num_attention_heads = 4, num_key_value_heads = 2,
    head_dim = 32, vocab_size = 512, max_seq_len = 128, rotary_dim = 32,
    rms_norm_eps = 1.0e-06, rope_theta = 10000.0,
    attention_scale = 0.17677669529663687, sliding_window = 64,
    attn_logit_softcapping = 50.0, final_logit_softcapping = 30.0,
    tie_word_embeddings = true, bos_token_id = 2, eos_token_ids = [1, 107],
    layer_sliding_window = [true, false]>} {
}

// -----

// Only what a test needs; the rest keeps its default and is not printed.
// CHECK-LABEL: module @partial
// CHECK-SAME: etllm.model_config = #etllm.model_config<vocab_size = 8, max_seq_len = 16>
module @partial attributes {etllm.model_config = #etllm.model_config<max_seq_len = 16, vocab_size = 8>} {
}

// -----

// An empty configuration, and explicit defaults, print as empty.
// CHECK-LABEL: module @defaults
// CHECK-SAME: etllm.model_config = #etllm.model_config<>
module @defaults attributes {etllm.model_config = #etllm.model_config<bos_token_id = -1, tie_word_embeddings = false, eos_token_ids = [], rms_norm_eps = 0.0>} {
}

// -----

// Doubles survive the round trip bit for bit (1e-5 is not a short binary
// fraction); a bos of 0 and a false layer entry are kept.
// CHECK-LABEL: module @exact
// CHECK-SAME: #etllm.model_config<num_hidden_layers = 1, rms_norm_eps = 1.000000e-05, rope_theta = 5.000000e+05, bos_token_id = 0, layer_sliding_window = [false]>
module @exact attributes {etllm.model_config = #etllm.model_config<num_hidden_layers = 1, rms_norm_eps = 1.0e-05, rope_theta = 500000.0, bos_token_id = 0, layer_sliding_window = [false]>} {
}

// -----

// The multi-head latent attention and mixture-of-experts fields are nested
// groups, present only for such models; their defaults are elided too
// (moe_scoring softmax, moe_topk_method greedy, routed_scaling_factor 1).
// CHECK-LABEL: module @groups
// CHECK-SAME: #etllm.model_config<num_hidden_layers = 2, mla = <kv_lora_rank = 32, qk_nope_head_dim = 16, v_head_dim = 20>, moe = <num_experts = 8, num_experts_per_tok = 2, moe_scoring = "sigmoid", n_group = 4, topk_group = 2, routed_scaling_factor = 2.500000e+00, layer_moe = [false, true]>>
module @groups attributes {etllm.model_config = #etllm.model_config<
    moe = <layer_moe = [false, true], num_experts = 8, num_experts_per_tok = 2,
           moe_scoring = "sigmoid", moe_topk_method = "greedy", n_group = 4,
           topk_group = 2, routed_scaling_factor = 2.5>,
    num_hidden_layers = 2,
    mla = <v_head_dim = 20, kv_lora_rank = 32, qk_nope_head_dim = 16>>} {
}

// -----

// A group may also be written in its full form.
// CHECK-LABEL: module @full_group
// CHECK-SAME: #etllm.model_config<mla = <kv_lora_rank = 8, qk_nope_head_dim = 4, v_head_dim = 4>>
module @full_group attributes {etllm.model_config = #etllm.model_config<
    mla = #etllm.mla_config<kv_lora_rank = 8, qk_nope_head_dim = 4, v_head_dim = 4>>} {
}
