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
