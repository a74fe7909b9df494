"""Copies the generated LLaVA directory SRC to DST with config.json's KEY
(dotted: vision_config.patch_size) set to the JSON VALUE ("-": unchanged).
usage: llava.test.py SRC DST KEY VALUE"""
import json
import pathlib
import shutil
import sys

src, dst, key, value = sys.argv[1:]
shutil.copytree(src, dst)
config_path = pathlib.Path(dst) / "config.json"
config = json.loads(config_path.read_text())
if key != "-":
    *path, last = key.split(".")
    node = config
    for k in path:
        node = node[k]
    node[last] = json.loads(value)
config_path.write_text(json.dumps(config, indent=2))
