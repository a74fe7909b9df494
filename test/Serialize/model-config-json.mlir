// RUN: etllm-translate --mlir-to-pte %s -o %t.pte
// RUN: etllm-translate --pte-to-text %t.pte | FileCheck %s

// The program's metadata holds the typed #etllm.model_config as JSON: every
// field under its parameter name, sorted, doubles exact; the serializer
// takes the vocabulary size and the dynamic-dimension bound from it.
// CHECK: %0 = f32 [<=6, 4] planned
// CHECK: metadata:
// CHECK-NEXT: model_config: {"architecture":"LlamaForCausalLM","attention_scale":0.25,"attn_logit_softcapping":0,"bos_token_id":1,"dtype":"float32","eos_token_ids":[2,3],"final_logit_softcapping":0,"head_dim":16,"hidden_size":32,"intermediate_size":64,"layer_sliding_window":[false,true],"max_seq_len":6,"model_type":"llama","num_attention_heads":2,"num_hidden_layers":2,"num_key_value_heads":1,"rms_norm_eps":1.0000000000000001e-05,"rope_theta":10000,"rotary_dim":16,"sliding_window":4,"tie_word_embeddings":true,"vocab_size":8}
// CHECK-NEXT: vocab_size: 8
// CHECK-NEXT: max_seq_len: 6
// CHECK-NEXT: bos_id: 1
// CHECK-NEXT: eos_ids: [2, 3]
module attributes {etllm.model_config = #etllm.model_config<
    architecture = "LlamaForCausalLM", model_type = "llama", dtype = "float32",
    hidden_size = 32, intermediate_size = 64, num_hidden_layers = 2,
    num_attention_heads = 2, num_key_value_heads = 1, head_dim = 16,
    vocab_size = 8, max_seq_len = 6, rotary_dim = 16, rms_norm_eps = 1.0e-05,
    rope_theta = 10000.0, attention_scale = 0.25, sliding_window = 4,
    tie_word_embeddings = true, bos_token_id = 1, eos_token_ids = [2, 3],
    layer_sliding_window = [false, true]>} {
  func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %y = etllm.exp %x : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
