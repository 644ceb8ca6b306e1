"""The verdict core's tolerances, each loosened in turn, and the core's tests run on each:
every line must show failures (a tolerance no test pins is a tolerance nothing checks).

    python tools/loosen_constants.py [FACTOR]      (default 4; from a checkout whose src/
                                                    holds the built kernel: pip install -e .)

Each run copies src/ to a temporary folder, edits one constant of src/sinpe/_verdict/judge.py
there (a bound made FACTOR times wider: a count of ulps times FACTOR, a power of two's
exponent raised by log2 FACTOR), and runs the core's test files against that copy. Exit 1 if
any loosened constant leaves every test passing. CONTRIBUTING.md, "Mutation testing"."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JUDGE = Path("sinpe", "_check", "judge.py")
TESTS = [
    "tests/test_verdicts.py",
    "tests/test_gguf.py",
    "tests/test_check.py",
    "tests/test_onnx.py",
    "tests/test_engines.py",
]
CONSTANTS = [
    "MATCH_ULPS",
    "ANGLE_ULPS",
    "ANGLE_LOG_ULPS",
    "_ANGLE_EPS",
    "PARAMETER_TOLERANCE",
    "FIT_TOLERANCE",
    "FACTOR_TOLERANCE",
]


def loosened(text: str, factor: float) -> str:
    """``text`` (one constant's right-hand side) with every number made ``factor`` wider."""
    shift = round(math.log2(factor))

    def wider(match: re.Match) -> str:
        if match.group("exp") is not None:  # 2.0**-24 -> 2.0**-22
            return f"2.0**{int(match.group('exp')) + shift}"
        value = float(match.group("num")) * factor
        return (
            str(int(value)) if match.group("num").isdigit() and value.is_integer() else repr(value)
        )

    number = r"(?<![\w.])(?P<num>\d+(?:\.\d+)?(?:e-?\d+)?)"
    return re.sub(r"2\.0\*\*(?P<exp>-?\d+)|" + number, wider, text)


def run(factor: float) -> int:
    original = (ROOT / "src" / JUDGE).read_text()
    survived = []
    for name in CONSTANTS:
        line = re.search(rf"^{name} = (.*?)(  #.*)?$", original, re.M)
        new = f"{name} = {loosened(line.group(1), factor)}"
        with tempfile.TemporaryDirectory() as folder:
            shutil.copytree(ROOT / "src", Path(folder, "src"))
            Path(folder, "src", JUDGE).write_text(original.replace(line.group(0), new, 1))
            env = dict(os.environ, PYTHONPATH=str(Path(folder, "src")))
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
        result = (done.stdout.strip().splitlines() or ["?"])[-1]
        print(f"{new:55s} {result}", flush=True)
        if done.returncode == 0:
            survived.append(name)
    print("every loosened constant fails a test" if not survived else f"SURVIVED: {survived}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(run(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0))
