"""Generate the literal constants of src/sinpe/_frequency_constants.py (mpmath only here).

    python tools/gen_frequency_constants.py          # rewrite the generated block
    python tools/gen_frequency_constants.py --check  # exit 1 if the block is stale

Every constant is computed at 300 bits and rounded to nearest; floats are written with
``repr``, which round-trips exactly.
"""

from __future__ import annotations

import pathlib
import sys

import mpmath as mp

mp.mp.prec = 300

TARGET = (
    pathlib.Path(__file__).resolve().parent.parent / "src" / "sinpe" / "_frequency_constants.py"
)
BEGIN = "# BEGIN GENERATED CONSTANTS (tools/gen_frequency_constants.py)\n"
END = "# END GENERATED CONSTANTS\n"

TABLE_BITS = 8  # each of the two exp2 tables has 2**8 entries
STEP_BITS = 2 * TABLE_BITS  # exp reduction step is ln2 / 2**16
REDUCTION_PART_BITS = 25  # |k| < 2**28, so k * (25-bit constant) is exact
LN2_PART_BITS = 42  # |exponent of base| <= 1075 < 2**11, so e * (42-bit part of ln2) is exact
ATANH_TERMS = 21  # atanh series terms: s**2 <= 0.0295, so s**(2*21)/43 < 2**-112
ATANH_DD_TERMS = 11  # terms k < 11 need double-double coefficients; s**22 < 2**-55


def round_bits(x: mp.mpf, bits: int) -> float:
    """x rounded to nearest with `bits` significant bits, as a float (exact)."""
    if x == 0:
        return 0.0
    _, e = mp.frexp(x)
    return float(mp.ldexp(mp.nint(mp.ldexp(x, bits - e)), e - bits))


def double(x: mp.mpf) -> float:
    return round_bits(x, 53)


def double_double(x: mp.mpf) -> tuple[float, float]:
    hi = double(x)
    return hi, double(x - hi)


def split_constant(x: mp.mpf, head_bits: list[int]) -> list[float]:
    """x as a sum of floats with the given head sizes in bits, then a 53-bit tail."""
    parts = []
    for bits in head_bits:
        parts.append(round_bits(x, bits))
        x -= parts[-1]
    parts.append(double(x))
    return parts


def table(step: int) -> tuple[list[float], list[float]]:
    """Double-double 2**(j/step) for j in range(2**TABLE_BITS)."""
    pairs = [double_double(mp.power(2, mp.mpf(j) / step)) for j in range(2**TABLE_BITS)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def literal_tuple(name: str, values: list[float], per_line: int = 3) -> str:
    lines = [f"{name} = ("]
    for start in range(0, len(values), per_line):
        lines.append("    " + " ".join(f"{v!r}," for v in values[start : start + per_line]))
    lines.append(")")
    return "\n".join(lines) + "\n"


def generate() -> str:
    ln2 = mp.log(2)
    ln2_1, ln2_2, ln2_3 = split_constant(ln2, [LN2_PART_BITS, LN2_PART_BITS])
    inverse_odd = [mp.mpf(1) / (2 * k + 1) for k in range(ATANH_TERMS)]
    atanh_dd = [double_double(c) for c in inverse_odd[:ATANH_DD_TERMS]]
    step = ln2 / 2**STEP_BITS
    step_1, step_2, step_3 = split_constant(step, [REDUCTION_PART_BITS, REDUCTION_PART_BITS])
    coarse_hi, coarse_lo = table(2**TABLE_BITS)
    fine_hi, fine_lo = table(2**STEP_BITS)
    out = [
        BEGIN,
        f"# ln2 = _LN2_1 + _LN2_2 + _LN2_3 (+ < 2**-138); _LN2_1, _LN2_2 have {LN2_PART_BITS}"
        " bits.\n",
        f"_LN2_1 = {ln2_1!r}\n",
        f"_LN2_2 = {ln2_2!r}\n",
        f"_LN2_3 = {ln2_3!r}\n",
        f"# 1/(2k+1): double-double for k < {ATANH_DD_TERMS}, float64 for k < {ATANH_TERMS}.\n",
        literal_tuple("_ATANH_HI", [c[0] for c in atanh_dd]),
        literal_tuple("_ATANH_LO", [c[1] for c in atanh_dd]),
        literal_tuple("_ATANH_TAIL", [double(c) for c in inverse_odd[ATANH_DD_TERMS:]]),
        f"# ln2 / 2**{STEP_BITS} = _STEP_1 + _STEP_2 + _STEP_3 (+ < 2**-120); the first two have"
        f" {REDUCTION_PART_BITS} bits.\n",
        f"_STEP_1 = {step_1!r}\n",
        f"_STEP_2 = {step_2!r}\n",
        f"_STEP_3 = {step_3!r}\n",
        f"# 2**{STEP_BITS} / ln2 rounded; only used to choose k.\n",
        f"_INV_STEP = {double(1 / step)!r}\n",
        f"# 2**(j/{2**TABLE_BITS}) = _COARSE_HI[j] + _COARSE_LO[j]\n",
        literal_tuple("_COARSE_HI", coarse_hi),
        literal_tuple("_COARSE_LO", coarse_lo),
        f"# 2**(j/{2**STEP_BITS}) = _FINE_HI[j] + _FINE_LO[j]\n",
        literal_tuple("_FINE_HI", fine_hi),
        literal_tuple("_FINE_LO", fine_lo),
        END,
    ]
    return "".join(out)


def main() -> int:
    source = TARGET.read_text()
    head, rest = source.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    updated = head + generate() + tail
    if "--check" in sys.argv[1:]:
        if updated != source:
            print(f"{TARGET.name}: generated constants are stale")
            return 1
        print(f"{TARGET.name}: generated constants are up to date")
        return 0
    TARGET.write_text(updated)
    print(f"{TARGET.name}: constants written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
