"""Tests scripts/fetch-model.py against a local HTTP server on 127.0.0.1
(never the real URL): a good download, a wrong checksum, a truncated file,
a connection cut mid-file, the server gone, the cache, a local copy.
Nothing half-written may stay in the cache.

usage: fetch_model_test.py FETCH_MODEL_PY SHARED_DIR WORK_DIR
"""
import hashlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading

FILES = ["stories260K.bin", "tok512.bin"]


def fail(msg):
    sys.exit("fetch_model_test: FAIL: " + msg)


class Server:
    """Serves /stories260K/<name> from `self.files`; `self.mode` bends it."""

    def __init__(self):
        self.files, self.mode, self.requests = {}, "good", []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                if not self.path.startswith("/stories260K/") or name not in owner.files:
                    self.send_error(404)
                    return
                data = owner.files[name]
                if owner.mode == "corrupt":
                    data = bytes([data[0] ^ 1]) + data[1:]
                elif owner.mode == "short":
                    data = data[: len(data) // 2]
                self.send_response(200)
                self.send_header("Content-Length", str(len(owner.files[name])
                                                       if owner.mode == "cut" else len(data)))
                self.end_headers()
                if owner.mode == "cut":
                    self.wfile.write(data[: len(data) // 3])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def main():
    script, shared, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    source = os.path.join(shared, "models", "stories260K")
    server = Server()
    for name in FILES:
        with open(os.path.join(source, name), "rb") as f:
            server.files[name] = f.read()
    cache_home = os.path.join(work, "cache")
    cache = os.path.join(cache_home, "etllm", "stories260K")
    base = f"http://127.0.0.1:{server.port}"

    def run(env_extra, expect_ok):
        env = dict(os.environ)
        env.pop("ETLLM_SHARED_DIR", None)
        env.update({"XDG_CACHE_HOME": cache_home,
                    "ETLLM_SHARED_DIR": os.path.join(work, "no-shared"),
                    "ETLLM_MODEL_BASE_URL": base})
        env.update(env_extra)
        r = subprocess.run(["/usr/bin/python3", script], capture_output=True,
                           text=True, env=env, timeout=120)
        if (r.returncode == 0) != expect_ok:
            fail(f"exit {r.returncode} with {env_extra}: {r.stderr}")
        return r

    def leftovers():
        if not os.path.isdir(cache):
            return []
        return [n for n in os.listdir(cache) if n not in FILES]

    def check_error(r, what):
        last = r.stderr.strip().splitlines()[-1]
        if not last.startswith("fetch-model: cannot get the default model ("):
            fail(f"{what}: unclear message {r.stderr!r}")
        if what not in last or "Download " not in last or cache not in last:
            fail(f"{what}: the message does not say what and where: {last!r}")
        if leftovers():
            fail(f"{what}: files left in the cache: {leftovers()}")
        print(f"{what}: {last}")

    # Wrong checksum, a short file, a connection cut mid-file: nothing kept.
    server.mode = "corrupt"
    check_error(run({}, False), "SHA-256")
    if os.path.exists(os.path.join(cache, FILES[0])):
        fail("a file with the wrong checksum was kept")
    server.mode = "short"
    check_error(run({}, False), "SHA-256")
    server.mode = "cut"
    check_error(run({}, False), "ended after")

    # A good download lands in the cache, checksums right, nothing else.
    server.mode = "good"
    r = run({}, True)
    if r.stdout.strip() != cache:
        fail(f"printed {r.stdout!r}, expected {cache}")
    for name in FILES:
        with open(os.path.join(cache, name), "rb") as f:
            if f.read() != server.files[name]:
                fail(f"{name} differs from the served file")
    if leftovers():
        fail(f"files left in the cache: {leftovers()}")
    print(f"good: downloaded into {cache}: " + ", ".join(
        f"{n} {hashlib.sha256(server.files[n]).hexdigest()[:12]}" for n in FILES))

    # Cached: no request at all.
    before = len(server.requests)
    r = run({}, True)
    if r.stdout.strip() != cache or len(server.requests) != before:
        fail("the cached model was downloaded again")
    print("cached: no download")

    # A corrupted cache file is fetched again.
    with open(os.path.join(cache, FILES[1]), "r+b") as f:
        f.write(b"\0")
    r = run({}, True)
    if len(server.requests) != before + 1:
        fail(f"expected one download of the damaged file, got {server.requests[before:]}")
    print("damaged cache file: downloaded again")

    # Server gone, no copy anywhere: one clear message.
    server.stop()
    shutil.rmtree(cache_home)
    check_error(run({}, False), "Connection refused")

    # A local copy (ETLLM_SHARED_DIR) wins, with no network at all.
    r = run({"ETLLM_SHARED_DIR": shared}, True)
    if r.stdout.strip() != source:
        fail(f"the local copy was not used: {r.stdout!r} {r.stderr!r}")
    print(f"local copy: {source}")
    print("fetch_model_test: PASS")


if __name__ == "__main__":
    main()
