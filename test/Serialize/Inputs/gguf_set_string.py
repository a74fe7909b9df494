"""Adds a string key to a GGUF file's metadata (tests: a GGUF with a
tokenizer.chat_template). usage: gguf_set_string.py IN OUT KEY VALUE_FILE"""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(buf, pos, vtype):
    if vtype == 8:  # string
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if vtype == 9:  # array
        etype, count = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        for _ in range(count):
            pos = skip_value(buf, pos, etype)
        return pos
    return pos + SIZES[vtype]


def main():
    src, dst, key, value_file = sys.argv[1:5]
    buf = open(src, "rb").read()
    value = open(value_file, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    assert magic == b"GGUF" and version in (2, 3)
    pos = 24
    alignment = 32
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", buf, pos)
        name = buf[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        (vtype,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if name == "general.alignment":
            (alignment,) = struct.unpack_from("<I", buf, pos)
        pos = skip_value(buf, pos, vtype)
    kv_end = pos
    for _ in range(n_tensors):
        (n,) = struct.unpack_from("<Q", buf, pos)
        pos += 8 + n
        (dims,) = struct.unpack_from("<I", buf, pos)
        pos += 4 + 8 * dims + 4 + 8
    infos_end = pos
    data_start = (infos_end + alignment - 1) // alignment * alignment
    k = key.encode()
    kv = struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(value)) + value
    head = struct.pack("<4sIQQ", magic, version, n_tensors, n_kv + 1)
    out = head + buf[24:kv_end] + kv + buf[kv_end:infos_end]
    out += b"\0" * ((-len(out)) % alignment)
    out += buf[data_start:]
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()
