#!/usr/bin/env python3
"""Checks etllm-bench's outputs against llama-bench's (recorded from
llama.cpp v0.5.0 with the same -p/-n/-pg/-t/-r flags) and against
themselves: the same markdown columns and tests, the same JSON/CSV fields
with the same types, statistics consistent with the samples, and etllm's
added fields where they apply.

usage: check-bench-output.py LLAMA_DIR OURS_PREFIX
  LLAMA_DIR/llama-bench-v0.5.0.{md,json,csv}; OURS_PREFIX.{md,json,csv,jsonl}
"""
import csv
import json
import math
import sys


def fail(msg):
    sys.exit("check-bench-output: " + msg)


def md_table(path):
    rows = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    if len(rows) < 3:
        fail(f"{path}: no markdown table")
    return rows


def raw_md_lines(path):
    return [l.rstrip("\n") for l in open(path, encoding="utf-8")
            if l.startswith("|")]


llama_dir, ours = sys.argv[1], sys.argv[2]
ref = llama_dir + "/llama-bench-v0.5.0"

# --- markdown ---------------------------------------------------------------
lmd, omd = md_table(ref + ".md"), md_table(ours + ".md")
n_common = len(lmd[0])  # model size params backend threads test t/s
if omd[0][:n_common] != lmd[0]:
    fail(f"markdown header {omd[0][:n_common]} != llama-bench's {lmd[0]}")
# The same column widths and alignments, byte for byte.
lraw, oraw = raw_md_lines(ref + ".md"), raw_md_lines(ours + ".md")
for i in (0, 1):
    if not oraw[i].startswith(lraw[i]):
        fail(f"markdown line {i}: {oraw[i]!r} does not extend {lraw[i]!r}")
if [r[5] for r in omd[2:]] != [r[5] for r in lmd[2:]]:
    fail(f"tests {[r[5] for r in omd[2:]]} != {[r[5] for r in lmd[2:]]}")
extra = omd[0][n_common:]
if extra != ["ttft ms", "load ms", "rss MiB", "roofline"]:
    fail(f"etllm's markdown columns are {extra}")
for r in omd[2:]:
    if len(r) != len(omd[0]):
        fail(f"markdown row {r} has {len(r)} cells, the header {len(omd[0])}")
    mean, sd = r[6].split(" ± ")
    float(mean), float(sd)
    is_tg = r[5].startswith("tg")
    if (r[10] != "-") != is_tg:
        fail(f"roofline '{r[10]}' for test {r[5]}")
    if (r[7] != "-") != ("pp" in r[5]):
        fail(f"ttft '{r[7]}' for test {r[5]}")

# --- json / jsonl -----------------------------------------------------------
ljs, ojs = json.load(open(ref + ".json")), json.load(open(ours + ".json"))
if len(ojs) != len(ljs):
    fail(f"{len(ojs)} JSON tests, llama-bench has {len(ljs)}")
jsonl = [json.loads(l) for l in open(ours + ".jsonl") if l.strip()]
if len(jsonl) != len(ojs):
    fail(f"{len(jsonl)} jsonl lines for {len(ojs)} tests")
common = [k for k in ljs[0] if k in ojs[0]]
required = ["build_commit", "build_number", "cpu_info", "gpu_info",
            "backends", "model_filename", "model_type", "model_size",
            "model_n_params", "n_batch", "n_threads", "n_prompt", "n_gen",
            "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts",
            "stddev_ts", "samples_ns", "samples_ts"]
missing = [k for k in required if k not in common]
if missing:
    fail(f"JSON lacks llama-bench's {missing}")
added = ["file_size", "load_ms", "ttft_ms", "peak_rss_bytes",
         "planned_bytes", "bytes_per_token", "bandwidth_bytes_per_s",
         "roofline"]
for lt, ot, lo in zip(ljs, ojs, jsonl):
    if set(lo) != set(ot):
        fail("jsonl and json objects have different keys")
    for k in common:
        a, b = lt[k], ot[k]
        same = (type(a) is type(b) or
                (isinstance(a, (int, float)) and isinstance(b, (int, float))
                 and not isinstance(a, bool) and not isinstance(b, bool)
                 and (type(a) is float) == (type(b) is float)))
        if not same:
            fail(f"'{k}': {type(b).__name__} where llama-bench has "
                 f"{type(a).__name__}")
    for k in ("n_prompt", "n_gen", "n_depth", "n_threads", "n_batch"):
        if lt[k] != ot[k]:
            fail(f"'{k}' {ot[k]} != llama-bench's {lt[k]}")
    ns, ts = ot["samples_ns"], ot["samples_ts"]
    if len(ns) != len(lt["samples_ns"]) or len(ts) != len(ns):
        fail(f"{len(ns)} samples, llama-bench has {len(lt['samples_ns'])}")
    n = ot["n_prompt"] + ot["n_gen"]
    for a, b in zip(ns, ts):
        if not math.isclose(1e9 * n / a, b, rel_tol=1e-4):
            fail(f"samples_ts {b} != 1e9 * {n} / {a}")
    if not math.isclose(ot["avg_ts"], sum(ts) / len(ts), rel_tol=1e-4):
        fail(f"avg_ts {ot['avg_ts']} is not the mean of {ts}")
    if abs(ot["avg_ns"] - sum(ns) / len(ns)) > 1:
        fail(f"avg_ns {ot['avg_ns']} is not the mean of {ns}")
    for k in added:
        if k not in ot:
            fail(f"JSON lacks '{k}'")
    for k in ("load_ms", "peak_rss_bytes", "file_size", "model_size",
              "planned_bytes", "bandwidth_bytes_per_s", "model_n_params"):
        if not ot[k] > 0:
            fail(f"'{k}' is {ot[k]}")
    if (ot["ttft_ms"] > 0) != (ot["n_prompt"] > 0):
        fail(f"ttft_ms {ot['ttft_ms']} with n_prompt {ot['n_prompt']}")
    if (ot["bytes_per_token"] > 0) != (ot["n_gen"] > 0):
        fail(f"bytes_per_token {ot['bytes_per_token']}")
    tg = ot["n_gen"] > 0 and ot["n_prompt"] == 0
    if (ot["roofline"] > 0) != tg:
        fail(f"roofline {ot['roofline']} for n_prompt {ot['n_prompt']}")
    if tg:
        want = ot["avg_ts"] * ot["bytes_per_token"] / \
            ot["bandwidth_bytes_per_s"]
        if not math.isclose(ot["roofline"], want, rel_tol=1e-3):
            fail(f"roofline {ot['roofline']} != {want}")
        if ot["bytes_per_token"] < ot["model_size"] / 2:
            fail("a decode step reads less than half the weights")

# --- csv --------------------------------------------------------------------
lcsv = list(csv.reader(open(ref + ".csv")))
ocsv = list(csv.reader(open(ours + ".csv")))
if len(ocsv) != len(lcsv):
    fail(f"{len(ocsv) - 1} CSV rows, llama-bench has {len(lcsv) - 1}")
lhead, ohead = lcsv[0], ocsv[0]
shared = [k for k in lhead if k in ohead]
if [k for k in ohead if k in lhead] != shared:
    fail("CSV fields shared with llama-bench are in another order")
if [k for k in required if k not in ("samples_ns", "samples_ts")] != \
        [k for k in shared if k in required]:
    fail(f"CSV lacks llama-bench fields: {shared}")
for row, obj in zip(ocsv[1:], ojs):
    if len(row) != len(ohead):
        fail(f"CSV row of {len(row)} fields, header of {len(ohead)}")
    rec = dict(zip(ohead, row))
    for k in ("n_prompt", "n_gen", "n_threads", "model_filename"):
        if rec[k] != str(obj[k]):
            fail(f"CSV '{k}' {rec[k]} != JSON {obj[k]}")
print("check-bench-output: ok")
