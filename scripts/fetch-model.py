#!/usr/bin/python3
"""Finds the demo's default model (stories260K and its tokenizer, from
karpathy/llama2.c's tinyllamas release) and prints the directory that holds
them: stories260K.bin and tok512.bin.

Looked up, in order:
  1. $ETLLM_SHARED_DIR/models/stories260K/ (when ETLLM_SHARED_DIR is set),
     else ../shared/models/stories260K/ next to the repository;
  2. the cache, ${XDG_CACHE_HOME:-~/.cache}/etllm/stories260K/;
  3. downloaded into the cache from $ETLLM_MODEL_BASE_URL (default: the
     tinyllamas release on the Hugging Face hub).
Every file is checked against its SHA-256. A download goes to a temporary
file in the cache directory and is renamed only after its checksum passed,
so nothing half-written is ever left there.

Exit status 0 with the directory on stdout, or 1 with one message on stderr
saying what to download and where to put it.

Only the Python 3 standard library is used (Debian's /usr/bin/python3).
"""
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request

DEFAULT_BASE_URL = "https://huggingface.co/karpathy/tinyllamas/resolve/main"
MODEL = "stories260K"
FILES = {
    "stories260K.bin": "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696",
    "tok512.bin": "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312",
}
TIMEOUT = 60  # seconds without data before a download is given up
MAX_BYTES = 64 << 20  # far above either file: a server sending more is wrong


class FetchError(Exception):
    pass


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def complete(directory):
    """True when `directory` holds every file with the right checksum."""
    return all(os.path.isfile(os.path.join(directory, name))
               and sha256(os.path.join(directory, name)) == digest
               for name, digest in FILES.items())


def local_copy():
    shared = os.environ.get("ETLLM_SHARED_DIR")
    if shared is None:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        shared = os.path.join(os.path.dirname(repo), "shared")
    directory = os.path.join(shared, "models", MODEL)
    return directory if shared and complete(directory) else None


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "etllm", MODEL)


def download(url, directory, name, digest):
    """Downloads `url` to directory/name through a checked temporary file."""
    target = os.path.join(directory, name)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + name + ".",
                               suffix=".part")
    try:
        h = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                expected = response.headers.get("Content-Length")
                while True:
                    block = response.read(1 << 16)
                    if not block:
                        break
                    size += len(block)
                    if size > MAX_BYTES:
                        raise FetchError(f"{url} sends more than {MAX_BYTES} bytes")
                    h.update(block)
                    out.write(block)
            if expected is not None and int(expected) != size:
                raise FetchError(f"{url} ended after {size} of {expected} bytes")
        if h.hexdigest() != digest:
            raise FetchError(f"{url} has SHA-256 {h.hexdigest()}, expected {digest} "
                             f"({size} bytes received)")
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def fetch():
    directory = local_copy()
    if directory:
        return directory
    directory = cache_dir()
    if complete(directory):
        return directory
    base = os.environ.get("ETLLM_MODEL_BASE_URL", DEFAULT_BASE_URL).rstrip("/")
    os.makedirs(directory, exist_ok=True)
    for name, digest in FILES.items():
        path = os.path.join(directory, name)
        if os.path.isfile(path) and sha256(path) == digest:
            continue
        url = f"{base}/{MODEL}/{name}"
        print(f"fetch-model: downloading {url}", file=sys.stderr)
        try:
            download(url, directory, name, digest)
        except FetchError:
            raise
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            raise FetchError(f"{url}: {reason}") from None
        except Exception as e:  # http.client.IncompleteRead and the like
            raise FetchError(f"{url}: {type(e).__name__}: {e}") from None
    return directory


def main():
    try:
        print(fetch())
        return 0
    except FetchError as e:
        base = os.environ.get("ETLLM_MODEL_BASE_URL", DEFAULT_BASE_URL).rstrip("/")
        urls = " and ".join(f"{base}/{MODEL}/{name}" for name in FILES)
        print(f"fetch-model: cannot get the default model ({e}). Download {urls} "
              f"into {cache_dir()}/ (or set ETLLM_SHARED_DIR to a directory with "
              f"models/{MODEL}/ holding them), then run the demo again.",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
