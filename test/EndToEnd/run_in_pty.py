"""Runs a command with its stdout and stderr on a pseudo-terminal and prints
what it wrote, with \\r and escape bytes made visible (<CR>, <ESC>), one
terminal line per output line. usage: run_in_pty.py CMD [ARG...]"""
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
text = out.decode("utf-8", "replace").replace("\r\n", "\n")
sys.stdout.write(text.replace("\r", "<CR>").replace("\x1b", "<ESC>"))
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
