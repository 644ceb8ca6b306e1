"""Compare digest.py's outputs of two machines, and the hard cases with the exact values.

    python compare.py X86_DIR ARM_DIR TESTS_DIR     (x86 Python with mpmath; exit 1 on any miss)

Every (engine, group) digest the ARM side has must equal the x86 one of the same engine, and
the ARM kernel (plain C, its only set) must equal every x86 instruction set's. On a
mismatch the first differing elements are printed from the .npz dumps. Hard cases: each
value every engine wrote on either machine must be the correctly rounded value
(tests/oracle.py, mpmath), as tests/test_correct.py checks.
"""

import json
import os
import sys

import numpy as np

x86_dir, arm_dir, tests_dir = sys.argv[1:4]
sys.path.insert(0, tests_dir)
x86 = json.load(open(os.path.join(x86_dir, "digest.json")))
arm = json.load(open(os.path.join(arm_dir, "digest.json")))
bad = 0


def show_diff(engine_x, engine_a, group):
    fx = np.load(os.path.join(x86_dir, f"{engine_x}__{group}.npz"))
    fa = np.load(os.path.join(arm_dir, f"{engine_a}__{group}.npz"))
    labels = json.load(open(os.path.join(arm_dir, f"{engine_a}__{group}.labels.json")))
    shown = 0
    for i, (label, dtype) in enumerate(labels):
        a, b = fx[f"a{i}"], fa[f"a{i}"]
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            where = (
                np.argwhere(a.view(np.uint8).reshape(a.shape + (-1,)).any(-1) | True)[:0]
                if a.shape != b.shape
                else np.argwhere(
                    a.view(f"u{a.itemsize}") != b.view(f"u{b.itemsize}")
                    if a.dtype.kind != "c"
                    else a != b
                )
            )
            print(
                f"   {label} [{dtype}] {a.shape}: {len(where)} entries differ; first:",
                [
                    (tuple(int(k) for k in w), a[tuple(w)].item(), b[tuple(w)].item())
                    for w in where[:3]
                ],
            )
            shown += 1
            if shown >= 10:
                break


print("== digests")
for key, h in sorted(arm["digests"].items()):
    engine, threads, group = key.split(" ")
    wanted = [key] if key in x86["digests"] else []
    if engine.startswith("cython@"):  # the ARM kernel against every x86 set
        wanted = [
            k
            for k in x86["digests"]
            if k.startswith("cython@") and k.split(" ", 1)[1] == key.split(" ", 1)[1]
        ]
    for k in wanted:
        same = x86["digests"][k] == h
        if not same:
            bad += 1
            print(f"DIFF  arm {key}  vs  x86 {k}")
            if group != "ALL" and threads == "threads=1":
                show_diff(k.split(" ")[0], engine, group)
    print(
        f"{'same' if all(x86['digests'][k] == h for k in wanted) else 'DIFF':4s}  {key}"
        f"  (vs x86 {', '.join(k.split(' ')[0] for k in wanted)})"
    )

# nothing missing: the ARM side judged every group the x86 side has, on the kernel and NumPy
needed = {k for k in x86["digests"] if k.split(" ")[0] in ("cython@c", "numpy")}
missing = sorted(needed - set(arm["digests"]))
if missing or not needed:
    bad += 1
    print(f"MISSING on ARM: {missing or 'every digest'}")

print("== hard cases")
import oracle  # noqa: E402  (mpmath)

cases = json.load(open(os.path.join(tests_dir, "data", "hard_cases.json")))["cases"]
x86_by = {(r["engine"], r["dtype"], r["case"], r["fn"]): r for r in x86["hard"]}
expected = {}
counts = {}
for side, records in (("x86", x86["hard"]), ("arm", arm["hard"])):
    for r in records:
        key = (r["case"], r["dtype"])
        if key not in expected:
            c = cases[r["case"]]
            expected[key] = oracle.cos_sin_narrow([c["p"]], [c["w"]], r["dtype"])[0, :, 0]
        n = counts.setdefault((side, r["engine"]), [0, 0])
        for i, what in enumerate(("cos", "sin")):
            if r[what] is None:
                continue
            n[0] += 1
            want = float(expected[key][i]).hex()
            if r[what] != want:
                n[1] += 1
                bad += 1
                print(
                    f"WRONG {side} {r['engine']} {r['fn']} {what} case {r['case']} "
                    f"{r['dtype']}: {r[what]} want {want}"
                )
            if side == "arm":
                other = x86_by.get(
                    (
                        r["engine"] if r["engine"] == "numpy" else "cython@c",
                        r["dtype"],
                        r["case"],
                        r["fn"],
                    )
                )
                if other is None or other[what] != r[what]:
                    bad += 1
                    print(f"DIFF  arm vs x86: {r}  {other}")
for engine in ("cython@c", "numpy"):  # every hard case written on ARM by both engines
    if counts.get(("arm", engine), [0])[0] != counts.get(("x86", engine), [-1])[0]:
        bad += 1
        print(f"MISSING on ARM: hard cases of {engine}")
for (side, engine), (n, wrong) in sorted(counts.items()):
    print(f"{side} {engine:12s} {n} values, {wrong} not correctly rounded")
print(
    "RESULT:",
    "all the same bits, all hard cases correctly rounded" if not bad else f"{bad} differences",
)
sys.exit(1 if bad else 0)
