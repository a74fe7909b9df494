"""export_config.yaml from Python is the C++ parser's: the same keys,
defaults and errors as etllm-export (no second parser)."""

import subprocess

import pytest

import etllm


def test_schema_is_the_c_plus_plus_one(tool):
    keys = [k["name"] for k in etllm.export_config_schema()]
    assert keys[:3] == ["model.max_seq_len", "model.dtype",
                        "model.last_logits_only"]
    ref = subprocess.run([tool("etllm-export"), "--print-config-reference"],
                         capture_output=True, text=True, check=True).stdout
    for k in keys:
        assert f"## `{k}`" in ref
    c = etllm.ExportConfig()
    assert c.get("model.max_seq_len") == 0
    assert c.get("model.last_logits_only") is True
    assert c.get("quantization.exclude") == []
    assert not c.is_explicit("pipeline.name")


def test_dicts_files_and_overrides(tmp_path):
    c = etllm.load_config({"model": {"max_seq_len": 128},
                           "quantization.exclude": ["lm_head", "model.*"],
                           "pipeline": {"name": "cpu-int4"}},
                          ["quantization.group_size=64"])
    assert c.get("model.max_seq_len") == 128
    assert c.get("quantization.exclude") == ["lm_head", "model.*"]
    assert c.get("quantization.group_size") == 64
    assert c.is_explicit("pipeline.name")
    f = tmp_path / "c.yaml"
    f.write_text(c.to_yaml())
    assert etllm.load_config(f).to_yaml() == c.to_yaml()
    assert etllm.load_config(c).to_yaml() == c.to_yaml()


@pytest.mark.parametrize("yaml", [
    "model:\n  max_seq_lenn: 64\n",
    "pipeline:\n  name: nope\n",
    "model:\n  max_seq_len: many\n",
    "quantization: [1, 2\n",
])
def test_errors_are_etllm_exports(tmp_path, tool, yaml):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml)
    with pytest.raises(etllm.Error) as e:
        etllm.ExportConfig.from_file(f)
    r = subprocess.run([tool("etllm-export"), "--model", "unused", "--config",
                        str(f), "-o", str(tmp_path / "x.pte")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr == f"etllm-export: error: {e.value}\n"


def test_set_errors_name_the_key(tool, tmp_path):
    c = etllm.ExportConfig()
    with pytest.raises(etllm.Error) as e:
        c.set("quantization.group_size=big")
    r = subprocess.run([tool("etllm-export"), "--model", "unused", "--set",
                        "quantization.group_size=big", "-o",
                        str(tmp_path / "x.pte")], capture_output=True, text=True)
    assert r.stderr == f"etllm-export: error: {e.value}\n"
    with pytest.raises(etllm.Error, match="unknown key 'nope'"):
        c.get("nope")


@pytest.mark.parametrize("setting, message", [
    ("quantization.group_size=7", "7 is out of range \\(-1, 0 or a power of "
     "two in \\[2, 65536\\]\\)"),
    ("quantization.group_size=-7", "-7 is out of range"),
    ("quantization.group_size=1099511627776", "is out of range"),
    ("quantization.embedding_group_size=1", "1 is out of range"),
    ("model.max_seq_len=16777216", "16777216 is out of range"),
    ("model.max_seq_len=nan", "'nan' is not an integer"),
])
def test_integer_keys_are_range_checked(setting, message):
    # The same schema ranges as etllm-export --set (one parser, in C++).
    with pytest.raises(etllm.Error, match=message):
        etllm.ExportConfig().set(setting)


def test_former_recipe_names_are_aliases():
    # The CPU backend was `xnnpack`: each xnnpack-* recipe name is the cpu-*
    # recipe (RecipeAliases.h), stored under the recipe's own name.
    aliases = dict(etllm.recipe_aliases())
    assert aliases == {"xnnpack-fp32": "cpu-fp32", "xnnpack-int4": "cpu-int4",
                       "xnnpack-8da4w": "cpu-8da4w",
                       "xnnpack-8sa4w": "cpu-8sa4w",
                       "xnnpack-gguf": "cpu-gguf",
                       "xnnpack-int8": "cpu-int8"}
    assert set(aliases.values()) <= set(etllm.recipe_names())
    assert not set(aliases) & set(etllm.recipe_names())
    for alias, recipe in aliases.items():
        c = etllm.load_config({"pipeline": {"name": alias}})
        assert c.get("pipeline.name") == recipe
    with pytest.raises(etllm.Error, match="'xnnpack-int5' is not one of"):
        etllm.load_config({"pipeline": {"name": "xnnpack-int5"}})
