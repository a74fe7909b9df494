"""--hf_id / --hf-id: a model in the local Hugging Face hub cache, laid out
as huggingface_hub lays it out (snapshots/<commit>/ links into blobs/,
refs/<branch> naming the commit), is found without the network, by the one
C++ resolver behind both the Python package and etllm-export."""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

import etllm
import etllm._export

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def make_cache(root, source, repo="org/stories", commit=COMMIT, ref="main"):
    """A hub cache holding the files of `source` for `repo`."""
    folder = root / ("models--" + repo.replace("/", "--"))
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    (folder / "refs").mkdir(exist_ok=True)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    for f in sorted(source.iterdir()):
        data = f.read_bytes()
        blob = hashlib.sha256(data).hexdigest()
        (folder / "blobs" / blob).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), snap / f.name)
    (folder / "refs" / ref).write_text(commit)
    return folder


@pytest.fixture
def hub(tmp_path, shared, monkeypatch):
    cache = tmp_path / "hub"
    make_cache(cache, shared / "models" / "stories260K-hf")
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME",
                "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_resolves_refs_main_to_the_snapshot(hub):
    snap = etllm.resolve_hf_id("org/stories")
    assert snap == str(hub / "models--org--stories" / "snapshots" / COMMIT)
    assert os.path.islink(os.path.join(snap, "model.safetensors"))
    assert etllm.hf_hub_cache_dir() == str(hub)


def test_cache_location_follows_the_environment(tmp_path, shared, monkeypatch):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME",
                "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    src = shared / "models" / "stories260K-hf"
    home = tmp_path / "home"
    make_cache(home / ".cache" / "huggingface" / "hub", src)
    monkeypatch.setenv("HOME", str(home))
    assert etllm.resolve_hf_id("org/stories").startswith(
        str(home / ".cache" / "huggingface" / "hub"))
    make_cache(tmp_path / "xdg" / "huggingface" / "hub", src)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert etllm.resolve_hf_id("org/stories").startswith(str(tmp_path / "xdg"))
    make_cache(tmp_path / "hfhome" / "hub", src)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    assert etllm.resolve_hf_id("org/stories").startswith(
        str(tmp_path / "hfhome" / "hub"))


def test_revisions(hub, shared):
    make_cache(hub, shared / "models" / "stories260K-hf", commit=OTHER,
               ref="v1")
    base = hub / "models--org--stories" / "snapshots"
    assert etllm.resolve_hf_id("org/stories@v1") == str(base / OTHER)
    assert etllm.resolve_hf_id(f"org/stories@{COMMIT}") == str(base / COMMIT)
    with pytest.raises(etllm.Error, match="no revision 'v2'.*snapshots: "
                       f"{COMMIT}, {OTHER}"):
        etllm.resolve_hf_id("org/stories@v2")


def test_python_and_etllm_export_make_the_same_program(tmp_path, hub, shared,
                                                       tok512, tool):
    direct = tmp_path / "direct.pte"
    subprocess.run([tool("etllm-export"), "--quiet", "--model",
                    str(shared / "models" / "stories260K-hf"), "--tokenizer",
                    str(tok512), "-o", str(direct)], check=True)
    viaexport = tmp_path / "via-etllm-export.pte"
    subprocess.run([tool("etllm-export"), "--quiet", "--hf-id", "org/stories",
                    "--tokenizer", str(tok512), "-o", str(viaexport)],
                   check=True)
    viapython = tmp_path / "via-python.pte"
    r = subprocess.run([sys.executable, "-m", "etllm.export_llm", "--quiet",
                        "--hf_id", "org/stories", "--tokenizer", str(tok512),
                        "-o", str(viapython)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert direct.read_bytes() == viaexport.read_bytes() == \
        viapython.read_bytes()
    g = etllm.Runner(viapython).generate("Once upon a time", max_new_tokens=60,
                                         temperature=0)
    assert "Once upon a time" + g.text + "\n" == (
        shared / "models" / "stories260K" /
        "greedy_once_upon_a_time_n64.txt").read_text()


def test_absent_models_fail_clearly(tmp_path, hub, tool, capsys):
    out = tmp_path / "x.pte"
    rc = etllm._export.main(["--quiet", "--hf_id", "org/absent", "-o",
                             str(out)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "hub id 'org/absent' is not in the local Hugging Face cache" in err
    assert str(hub / "models--org--absent") in err
    assert "huggingface-cli download org/absent" in err
    assert "from HF_HUB_CACHE" in err
    assert not out.exists()
    r = subprocess.run([tool("etllm-export"), "--hf-id", "org/absent", "-o",
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "etllm-export: error: --hf-id: hub id 'org/absent' is not in the " \
        "local Hugging Face cache" in r.stderr
    assert not out.exists()


def test_incomplete_downloads_and_bad_ids(hub):
    snap = hub / "models--org--stories" / "snapshots" / COMMIT
    target = os.readlink(snap / "config.json")
    os.remove(snap / target)
    with pytest.raises(etllm.Error, match="dangling link into blobs/"):
        etllm.resolve_hf_id("org/stories")
    shutil.rmtree(snap)
    with pytest.raises(etllm.Error, match=f"is commit {COMMIT}, but .* is "
                       "missing"):
        etllm.resolve_hf_id("org/stories")
    (hub / "models--org--stories" / "refs" / "main").write_text("not-a-hash")
    with pytest.raises(etllm.Error, match="does not hold a commit hash"):
        etllm.resolve_hf_id("org/stories")
    for bad in ["../stories", "org/sto/ries", "org/sto--ries", "", "org/",
                "org/stories@../main"]:
        with pytest.raises(etllm.Error, match="hub id"):
            etllm.resolve_hf_id(bad)
