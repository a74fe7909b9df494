#!/usr/bin/env python3
"""Cuts a kernel's hot loop out of an arm64 object file for llvm-mca.

    mca_loop.py [--enclosing] [--dot MNEMONIC] OBJDUMP OBJECT SYMBOL_REGEX

Disassembles OBJECT (OBJDUMP -d -C), takes the first function whose
demangled name matches SYMBOL_REGEX, finds its loops (a backward branch to
an address inside the function), and picks the innermost loop holding the
most integer dot-product instructions (SDOT, SMMLA, or the SMULL/SMLAL
products of the Armv8.0 kernels). With --enclosing it takes the smallest
loop around that one instead (etllm's kernels walk the scale groups in an
outer loop and their blocks in an inner one: for group-32 weights the outer
loop runs one block per iteration, scale loads included). --dot counts only
that instruction (a function with an SDOT loop and an SMMLA loop: which one
is wanted). The instructions
of the loop, branches removed, go to stdout in the syntax llvm-mca reads; a
summary goes to stderr.
"""
import argparse
import re
import subprocess
import sys

DOT = re.compile(r"^(sdot|udot|usdot|sudot|smmla|ummla|usmmla)$")
MULL = re.compile(r"^(smull2?|smlal2?)$")
BRANCH = re.compile(r"^(b|b\..*|bl|cbz|cbnz|tbz|tbnz|ret|br|blr)$")


def parse(objdump, obj, pattern):
    out = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", obj],
                         check=True, capture_output=True, text=True).stdout
    regex = re.compile(pattern)
    insns, name, taking = [], None, False
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            if taking:
                break
            taking = bool(regex.search(m.group(2)))
            name = m.group(2) if taking else None
            continue
        if not taking:
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m:
            ops = m.group(3).split("//")[0].strip()
            insns.append((int(m.group(1), 16), m.group(2), ops))
    if not insns:
        sys.exit("mca_loop: no function matches %r in %s" % (pattern, obj))
    return name, insns


ONLY = None  # --dot


def dots(insns):
    n = 0
    for _, mn, ops in insns:
        if ONLY:
            n += mn == ONLY
        elif DOT.match(mn) or (MULL.match(mn) and ".8h" in ops):
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("objdump")
    ap.add_argument("obj")
    ap.add_argument("symbol")
    ap.add_argument("--enclosing", action="store_true")
    ap.add_argument("--dot")
    args = ap.parse_args()
    global ONLY
    ONLY = args.dot
    name, insns = parse(args.objdump, args.obj, args.symbol)
    lo, hi = insns[0][0], insns[-1][0]
    loops = []
    for addr, mn, ops in insns:
        if not BRANCH.match(mn) or mn in ("ret", "br", "blr", "bl"):
            continue
        target = re.match(r"^(?:.*,\s*)?([0-9a-f]+)\s*(<.*>)?$", ops)
        if not target:
            continue
        t = int(target.group(1), 16)
        if lo <= t < addr:
            loops.append((t, addr))
    if not loops:
        sys.exit("mca_loop: %s has no loop" % name)

    def body(loop):
        return [i for i in insns if loop[0] <= i[0] <= loop[1]]

    best = max(loops, key=lambda l: (dots(body(l)), -(l[1] - l[0])))
    if dots(body(best)) == 0:
        sys.exit("mca_loop: no loop of %s has dot products" % name)
    # The innermost of the loops with the most dot products.
    inner = [l for l in loops if dots(body(l)) == dots(body(best))]
    best = min(inner, key=lambda l: l[1] - l[0])
    if args.enclosing:
        around = [l for l in loops if l[0] <= best[0] and best[1] <= l[1] and
                  l != best]
        if not around:
            sys.exit("mca_loop: no loop around the hot loop of %s" % name)
        best = min(around, key=lambda l: l[1] - l[0])
    lines = [i for i in body(best) if not BRANCH.match(i[1])]
    print("# %s: loop [%#x, %#x]" % (name, best[0], best[1]))
    for _, mn, ops in lines:
        print("\t%s\t%s" % (mn, ops))
    sys.stderr.write("%s: %d instructions, %d dot products\n" %
                     (name, len(lines), dots(lines)))


if __name__ == "__main__":
    main()
