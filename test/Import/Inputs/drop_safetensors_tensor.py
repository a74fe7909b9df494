#!/usr/bin/env python3
"""Writes a copy of a .safetensors file without one tensor (tests of a
missing tensor): drop_safetensors_tensor.py IN NAME OUT. The other tensors
keep their bytes and order; their offsets close the gap."""
import json
import struct
import sys

src, name, dst = sys.argv[1:]
with open(src, "rb") as f:
    data = f.read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
if name not in header:
    sys.exit(f"{src}: no tensor '{name}'")
del header[name]
out, pos = bytearray(), 0
for key, info in sorted(((k, v) for k, v in header.items()
                         if k != "__metadata__"),
                        key=lambda kv: kv[1]["data_offsets"][0]):
    begin, end = info["data_offsets"]
    out += body[begin:end]
    info["data_offsets"] = [pos, pos + end - begin]
    pos += end - begin
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + out)
