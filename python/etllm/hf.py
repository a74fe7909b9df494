"""Hugging Face transformers models for export_llm.

A transformers causal LM (``LlamaForCausalLM``, ``Qwen3ForCausalLM``,
``Gemma3ForCausalLM``, ...) is exported by ``etllm.export_llm`` like any
module once it has the signature etllm's programs have,
``forward(tokens [1, S], positions [S]) -> logits [1, S, vocab]``, and a KV
cache the capture sees as buffers:

    import etllm, etllm.hf, torch
    lm = etllm.hf.StaticCacheLM(model, max_seq_len=512)
    tokens, positions = torch.tensor([[1, 2, 3]]), torch.arange(3)
    program = etllm.export_llm(lm, (tokens, positions),
                               {"model": {"max_seq_len": 512}},
                               model_config=etllm.hf.model_config(model),
                               output="model.pte")

``StaticCacheLM`` passes transformers a ``StaticCache`` whose layers write
the new keys and values at the call's positions into buffers of the wrapper
(transformers' own static layer counts the tokens it has seen instead,
which a program cannot replay), so the captured graph updates the caches
with ``index_copy`` and the KV-cache stage makes that in place. The masks
are built from the positions as transformers' masking_utils builds them
(causal, sliding-window) and passed in ready-made, which fuse-sdpa
recognizes as causal (and windowed) attention over the positions.

Only transformers is imported here, lazily by the wrapper's constructor.
"""

import torch

__all__ = ["StaticCacheLM", "model_config"]


class _Call:
    """The positions of the running call: a plain object, since torch.export
    wants every tensor attribute of a module registered as a buffer."""

    positions = None


def _positioned_layer_class():
    from transformers.cache_utils import StaticLayer

    class PositionedLayer(StaticLayer):
        """A static cache layer that writes at the call's positions."""

        def __init__(self, call, max_cache_len, keys, values):
            super().__init__(max_cache_len)
            self._call = call
            self.lazy_initialization(keys, values)
            self.keys, self.values = keys, values

        def update(self, key_states, value_states, *args, **kwargs):
            pos = self._call.positions
            self.keys.index_copy_(2, pos, key_states)
            self.values.index_copy_(2, pos, value_states)
            return self.keys, self.values

        def get_seq_length(self):
            # The masks count query positions from here: the call's first
            # position (the positions of one call are consecutive).
            return self._call.positions[0]

    return PositionedLayer


def _text_config(model):
    config = model.config
    if hasattr(config, "get_text_config"):
        config = config.get_text_config(decoder=True)
    return config


class StaticCacheLM(torch.nn.Module):
    """`model` (a transformers causal LM) as forward(tokens, positions) ->
    logits with a static KV cache of `max_seq_len` positions per layer, held
    as buffers (`key_cache_<i>`, `value_cache_<i>`, zeros at the start)."""

    def __init__(self, model, max_seq_len):
        super().__init__()
        from transformers.cache_utils import StaticCache

        if max_seq_len <= 0:
            raise ValueError("max_seq_len must be positive")
        self.model = model
        config = _text_config(model)
        heads = getattr(config, "num_key_value_heads", None) or \
            config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or \
            config.hidden_size // config.num_attention_heads
        dtype = next(model.parameters()).dtype
        self.max_seq_len = max_seq_len
        self.cache = StaticCache(config=config, max_cache_len=max_seq_len)
        self._call = _Call()
        layer_class = _positioned_layer_class()
        for i in range(len(self.cache.layers)):
            k = torch.zeros(1, heads, max_seq_len, head_dim, dtype=dtype)
            v = torch.zeros(1, heads, max_seq_len, head_dim, dtype=dtype)
            self.register_buffer(f"key_cache_{i}", k, persistent=False)
            self.register_buffer(f"value_cache_{i}", v, persistent=False)
            self.cache.layers[i] = layer_class(self._call, max_seq_len, k, v)

    def reset(self):
        """Empties the caches (a new sequence)."""
        for name, b in self.named_buffers():
            if name.startswith(("key_cache_", "value_cache_")):
                b.zero_()

    def forward(self, tokens, positions):
        # The buffers may have been swapped (functional_call, export): the
        # layers write to whatever the module holds now.
        for i, layer in enumerate(self.cache.layers):
            layer.keys = getattr(self, f"key_cache_{i}")
            layer.values = getattr(self, f"value_cache_{i}")
        self._call.positions = positions
        out = self.model(input_ids=tokens, position_ids=positions.unsqueeze(0),
                         attention_mask=self._masks(positions),
                         cache=self.cache, use_cache=True)
        return out.logits

    def _masks(self, positions):
        """The attention masks over the cache, from the positions: query i
        attends to key j <= positions[i] (and, for sliding-window layers,
        j > positions[i] - window), as transformers' masking_utils builds
        them. Given to the model ready-made (4-D boolean, True: attend) so
        that no size the capture cannot follow (arange(S)) enters the
        graph."""
        config = _text_config(self.model)
        keys = torch.arange(self.max_seq_len).view(1, 1, 1, -1)
        query = positions.view(1, 1, -1, 1)
        causal = keys <= query
        types = getattr(config, "layer_types", None)
        if not types:
            return causal
        masks = {}
        for t in set(types):
            if t == "full_attention":
                masks[t] = causal
            elif t == "sliding_attention":
                window = config.sliding_window
                masks[t] = causal & (keys > query - window)
            else:
                raise ValueError(f"etllm.hf.StaticCacheLM: layers of type "
                                 f"'{t}' are not supported (full_attention, "
                                 "sliding_attention)")
        # One kind of layer: the tensor (every model takes one); several:
        # the mapping by layer type the hybrid models take.
        return causal if set(masks) == {"full_attention"} else masks


def model_config(model):
    """The `model_config` keys export_llm records for a transformers model
    (what etllm's stages read: heads, head size, norms, special tokens)."""
    c = _text_config(model)
    heads = c.num_attention_heads
    out = {
        "architecture": type(model).__name__,
        "model_type": getattr(c, "model_type", ""),
        "hidden_size": c.hidden_size,
        "num_hidden_layers": c.num_hidden_layers,
        "num_attention_heads": heads,
        "num_key_value_heads": getattr(c, "num_key_value_heads", None) or heads,
        "head_dim": getattr(c, "head_dim", None) or c.hidden_size // heads,
        "vocab_size": c.vocab_size,
    }
    if getattr(c, "intermediate_size", None):
        out["intermediate_size"] = c.intermediate_size
    eps = getattr(c, "rms_norm_eps", None)
    if eps is not None:
        out["rms_norm_eps"] = float(eps)
    if getattr(c, "bos_token_id", None) is not None:
        out["bos_token_id"] = int(c.bos_token_id)
    eos = getattr(c, "eos_token_id", None)
    if eos is not None:
        out["eos_token_ids"] = [int(e) for e in
                                (eos if isinstance(eos, (list, tuple))
                                 else [eos])]
    return out
