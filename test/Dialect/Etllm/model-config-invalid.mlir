// RUN: etllm-opt %s --split-input-file --verify-diagnostics
// One case per diagnostic of #etllm.model_config and of the
// etllm.model_config module attribute.

// The old string-keyed dictionary is rejected, not silently ignored.
// expected-error @+1 {{'etllm.model_config' must be a #etllm.model_config<...>, got {max_seq_len = 8 : i64}}}
module attributes {etllm.model_config = {max_seq_len = 8 : i64}} {
}

// -----

// The configuration belongs on the module.
module {
  // expected-error @+1 {{'etllm.model_config' belongs on a builtin.module}}
  func.func @f() attributes {etllm.model_config = #etllm.model_config<>} {
    return
  }
}

// -----

// An unknown key.
// expected-error @+1 {{duplicate or unknown struct parameter name: hidden}}
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 8, hidden = 4>} {
}

// -----

// expected-error @+2 {{expected 'true' or 'false'}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'tie_word_embeddings' which is to be a `bool`}}
module attributes {etllm.model_config = #etllm.model_config<tie_word_embeddings = 1>} {
}

// -----

// expected-error @+2 {{expected integer value}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'vocab_size' which is to be a `int64_t`}}
module attributes {etllm.model_config = #etllm.model_config<vocab_size = "big">} {
}

// -----

// expected-error @+1 {{dtype 'float8' is not float32, float16 or bfloat16}}
module attributes {etllm.model_config = #etllm.model_config<dtype = "float8">} {
}

// -----

// expected-error @+1 {{max_seq_len must not be negative, got -4}}
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = -4>} {
}

// -----

// expected-error @+1 {{num_key_value_heads 3 does not divide num_attention_heads 4}}
module attributes {etllm.model_config = #etllm.model_config<num_attention_heads = 4, num_key_value_heads = 3>} {
}

// -----

// expected-error @+1 {{rotary_dim 32 is larger than head_dim 16}}
module attributes {etllm.model_config = #etllm.model_config<head_dim = 16, rotary_dim = 32>} {
}

// -----

// expected-error @+1 {{attn_logit_softcapping must be a finite, non-negative double}}
module attributes {etllm.model_config = #etllm.model_config<attn_logit_softcapping = -1.0>} {
}

// -----

// expected-error @+1 {{rms_norm_eps must be smaller than 1}}
module attributes {etllm.model_config = #etllm.model_config<rms_norm_eps = 1.5>} {
}

// -----

// expected-error @+1 {{bos_token_id 8 is outside the vocabulary of 8}}
module attributes {etllm.model_config = #etllm.model_config<vocab_size = 8, bos_token_id = 8>} {
}

// -----

// expected-error @+1 {{eos_token_ids: -1 is outside the vocabulary of 0}}
module attributes {etllm.model_config = #etllm.model_config<eos_token_ids = [-1]>} {
}

// -----

// expected-error @+1 {{layer_sliding_window has 1 entries for 2 layers}}
module attributes {etllm.model_config = #etllm.model_config<num_hidden_layers = 2, sliding_window = 4, layer_sliding_window = [true]>} {
}

// -----

// expected-error @+1 {{layer_sliding_window marks a layer but sliding_window is 0}}
module attributes {etllm.model_config = #etllm.model_config<num_hidden_layers = 2, layer_sliding_window = [true, false]>} {
}

// -----

// expected-error @+1 {{rms_norm_eps must be a finite, non-negative double}}
module attributes {etllm.model_config = #etllm.model_config<rms_norm_eps = -1.0>} {
}

// -----

// The groups' fields belong in their group.
// expected-error @+1 {{duplicate or unknown struct parameter name: kv_lora_rank}}
module attributes {etllm.model_config = #etllm.model_config<kv_lora_rank = 32>} {
}

// -----

// expected-error @+2 {{duplicate or unknown struct parameter name: hidden_size}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <hidden_size = 4>>} {
}

// -----

// expected-error @+2 {{multi-head latent attention needs qk_nope_head_dim and v_head_dim}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'mla'}}
module attributes {etllm.model_config = #etllm.model_config<mla = <kv_lora_rank = 32, qk_nope_head_dim = 16>>} {
}

// -----

// expected-error @+2 {{q_lora_rank, qk_nope_head_dim and v_head_dim need kv_lora_rank (multi-head latent attention)}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'mla'}}
module attributes {etllm.model_config = #etllm.model_config<mla = <q_lora_rank = 8>>} {
}

// -----

// expected-error @+2 {{kv_lora_rank must not be negative, got -1}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'mla'}}
module attributes {etllm.model_config = #etllm.model_config<mla = <kv_lora_rank = -1>>} {
}

// -----

// expected-error @+2 {{moe_scoring 'relu' is not softmax or sigmoid}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <num_experts = 4, moe_scoring = "relu">>} {
}

// -----

// expected-error @+2 {{moe_topk_method '' is not greedy, group_limited_greedy or noaux_tc}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <num_experts = 4, moe_topk_method = "">>} {
}

// -----

// expected-error @+2 {{num_experts_per_tok 3 is more than num_experts 2}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <num_experts = 2, num_experts_per_tok = 3>>} {
}

// -----

// expected-error @+2 {{routed_scaling_factor must be a finite, non-negative double}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <num_experts = 2, routed_scaling_factor = -2.0>>} {
}

// -----

// expected-error @+2 {{layer_moe marks a layer but num_experts is 0}}
// expected-error @+1 {{failed to parse Etllm_ModelConfigAttr parameter 'moe'}}
module attributes {etllm.model_config = #etllm.model_config<moe = <layer_moe = [true]>>} {
}

// -----

// expected-error @+1 {{layer_moe has 1 entries for 2 layers}}
module attributes {etllm.model_config = #etllm.model_config<num_hidden_layers = 2, moe = <num_experts = 2, layer_moe = [true]>>} {
}
