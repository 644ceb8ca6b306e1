"""Find and build the hard cases of correct rounding to float32, float16 and bfloat16: a
position p and a frequency w whose exact cos(p w) or sin(p w) lies within 2^-52 of a
halfway point of the type (where a float64 value within its error bound cannot say which
way to round), and positions near multiples of pi/2 (where the value is about 1e-16 and
only a relative-error path rounds it right).

    python tools/hard_cases.py            # rewrite tests/data/hard_cases.json
    python tools/hard_cases.py --check    # exit 1 if it is out of date

Three kinds, each case checked with mpmath (the exact value's distance to the halfway
point is recorded):

- "built": a halfway point h of the type, x0 = asin(h) or acos(h) (mpmath), and w =
  RN((x0 + 2 pi k) / p) for small p: p w is then within p ulp(w)/2 of x0 + 2 pi k, so the
  value is within about 2^-53 |p w| of h; kept if within 2^-52. For every type, its
  normal binades from 2^-20 up (float16: its subnormals too), both signs.
- "pi": integer positions p that are numerators of continued-fraction convergents of
  pi (and pi/2) with w = 1 (column 0 of every sinusoidal table), and fractional positions
  RN(k pi / 2): values down to about 1e-16.
- "search": the 131072 x 128 float32 sinusoidal table's entries within 2^-50 of a float32
  halfway point, found from its float64 values (within 8.5e-16 of exact) and confirmed.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import mpmath
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "hard_cases.json"
CTX = mpmath.MPContext()
CTX.prec = 400
FORMATS = {"float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126)}


def halfway_distance(v, dtype):
    """|v - nearest halfway point of dtype| for an mpf v (its binade's, or the subnormal
    grid's): the quantity a correctly rounding filler must resolve."""
    bits, emin = FORMATS[dtype]
    a = abs(v)
    e = max(int(CTX.floor(CTX.log(a, 2))) if a else emin, emin)
    step = CTX.mpf(2) ** (e - bits)
    scaled = a / step
    return abs(scaled - CTX.floor(scaled) - CTX.mpf(0.5)) * step


def built(dtype, rng, count):
    bits, emin = FORMATS[dtype]
    cases = []
    lowest = max(emin, -20) if dtype != "float16" else -24
    while len(cases) < count:
        e = rng.randrange(lowest, 0)
        if dtype == "float16" and e < emin:  # subnormal: halfway points are odd multiples of 2^-25
            h = CTX.mpf(2 * rng.randrange(0, 2 ** (e + 24)) + 1) * CTX.mpf(2) ** -25
        else:
            m = rng.randrange(2**bits, 2 ** (bits + 1))
            h = (CTX.mpf(m) + CTX.mpf(0.5)) * CTX.mpf(2) ** (e - bits)
        h = -h if rng.random() < 0.5 else h
        kind = rng.choice(["sin", "cos"])
        x0 = CTX.asin(h) if kind == "sin" else CTX.acos(h)
        p = rng.choice([1, 2, 3, 5, 7])
        k = rng.randrange(0, 3)
        w = float((x0 + 2 * CTX.pi * k) / p)
        if w <= 0:
            continue
        x = CTX.mpf(p) * CTX.mpf(w)
        v = CTX.sin(x) if kind == "sin" else CTX.cos(x)
        d = halfway_distance(v, dtype)
        if d < CTX.mpf(2) ** -52:
            cases.append(
                {
                    "kind": "built",
                    "dtype": dtype,
                    "p": p,
                    "w": w,
                    "value": kind,
                    "distance": float(d),
                }
            )
    return cases


def convergents(x, n):
    """Numerators and denominators of the first n continued-fraction convergents of x."""
    out, (h0, h1), (k0, k1) = [], (0, 1), (1, 0)
    for _ in range(n):
        a = int(CTX.floor(x))
        h0, h1 = h1, a * h1 + h0
        k0, k1 = k1, a * k1 + k0
        out.append((h1, k1))
        x = 1 / (x - a)
    return out


def near_pi():
    cases = []
    for target, value in ((CTX.pi, "sin"), (CTX.pi / 2, "cos")):
        for num, _ in convergents(target, 40):
            if 2 <= num < 2**53:
                cases.append({"kind": "pi", "p": num, "w": 1.0, "value": value})
    for k in list(range(1, 40)) + [1001, 65535, 10**6 + 3, 2**30 + 1]:
        p = float(k * CTX.pi / 2)
        cases.append({"kind": "pi", "p": p, "w": 1.0, "value": "sin" if k % 2 == 0 else "cos"})
    for case in cases:
        x = CTX.mpf(case["p"]) * CTX.mpf(case["w"])
        case["magnitude"] = float(abs(CTX.sin(x) if case["value"] == "sin" else CTX.cos(x)))
    return cases


def searched(seq_len=131072, d_model=128, limit=2.0**-48):
    import sinpe

    w = sinpe.frequencies(d_model)
    table = sinpe.sinusoidal_positional_encoding(seq_len, d_model, dtype=np.float64)
    a = np.abs(table)
    bits = a.view(np.uint64)
    h = ((bits & np.uint64(~((1 << 29) - 1) & (2**64 - 1))) | np.uint64(1 << 28)).view(np.float64)
    rows, cols = np.nonzero(np.abs(a - h) <= limit)
    cases = []
    for r, c in zip(rows.tolist(), cols.tolist()):
        if r == 0:  # position 0: the exact values 0 and 1
            continue
        x = CTX.mpf(r) * CTX.mpf(float(w[c // 2]))
        kind = "sin" if c % 2 == 0 else "cos"
        v = CTX.sin(x) if kind == "sin" else CTX.cos(x)
        d = halfway_distance(v, "float32")
        if d < CTX.mpf(2) ** -50:
            cases.append(
                {
                    "kind": "search",
                    "dtype": "float32",
                    "p": r,
                    "w": float(w[c // 2]),
                    "value": kind,
                    "column": c,
                    "distance": float(d),
                }
            )
    return cases


def generate():
    rng = random.Random(20261202)
    cases = []
    for dtype in FORMATS:
        cases += built(dtype, rng, 40)
    cases += near_pi()
    cases += searched()
    return {"seq_len": 131072, "d_model": 128, "cases": cases}


def main() -> int:
    data = generate()
    text = json.dumps(data, indent=1) + "\n"
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date: run python {Path(__file__).name}")
            return 1
        return 0
    OUT.write_text(text)
    print(f"{len(data['cases'])} cases -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
