"""Cache bytes per token of an etllm IR file: the sum, over every
`etllm.buffer` whose name ends in `cache` (k_cache, v_cache, latent_cache),
of its bytes divided by its sequence length (dimension 2, the one the
cache updates index). Prints one line per buffer kind and the total.

usage: cache_bytes_per_token.py IR.mlir
"""
import re
import sys
from collections import defaultdict

SIZES = {"f32": 4, "f16": 2, "bf16": 2}
BUFFER = re.compile(r"etllm\.buffer @(\S+) : tensor<([0-9x]+)x(f32|f16|bf16)>")


def main():
    per_kind = defaultdict(int)
    layers = set()
    for line in open(sys.argv[1]):
        m = BUFFER.search(line)
        if not m or not m.group(1).endswith("cache"):
            continue
        name, dims, dtype = m.groups()
        shape = [int(d) for d in dims.split("x")]
        if len(shape) != 4:
            sys.exit(f"cache_bytes_per_token: {name}: rank {len(shape)}")
        total = SIZES[dtype]
        for d in shape:
            total *= d
        per_kind[name.rsplit(".", 1)[1]] += total // shape[2]
        layers.add(name.rsplit(".", 1)[0])
    for kind in sorted(per_kind):
        print(f"{kind}: {per_kind[kind]} bytes per token")
    print(f"total: {sum(per_kind.values())} bytes per token over "
          f"{len(layers)} layers")


if __name__ == "__main__":
    main()
