"""The C headers build with every compiler at hand, for Linux and (cross-compiled) Windows,
and the thread runtime runs its chunks: POSIX threads, Windows threads (built only: nothing
runs a Windows program here), and the headers alone (no Python) so a packager can check them.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

import sinpe

HEADERS = Path(sinpe.__file__).parent / "_c"
PROBE = r"""
#include "fill.h"
static void work(void *context, ptrdiff_t chunk, double *scratch)
{
    (void)scratch;
    ((long *)context)[chunk] = (long)chunk + 1;
}
int main(void)
{
    long seen[200] = {0};
    int i;
    sinpe_team_init();
    if (sinpe_team_run(4, 200, work, seen, 64, 512, NULL) != 0)
        return 1;
    for (i = 0; i < 200; i++)
        if (seen[i] != i + 1)
            return 2;
    return sinpe_isa() >= 0 && sinpe_isa() <= SINPE_MAX_SIMD ? 0 : 3;
}
"""
COMPILERS = [
    ("gcc", ["-pthread", "-lm"], True),
    ("clang", ["-pthread", "-lm"], True),
    ("x86_64-w64-mingw32-gcc", [], False),  # Windows threads: built, not run
]


@pytest.mark.skipif(not (HEADERS / "fill.h").exists(), reason="the C headers are not installed")
@pytest.mark.parametrize("compiler, flags, run", COMPILERS, ids=[c[0] for c in COMPILERS])
def test_the_headers_build_and_the_pool_runs(tmp_path, compiler, flags, run):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    source, program = tmp_path / "probe.c", tmp_path / "probe.exe"
    source.write_text(PROBE)
    warnings = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-function"]
    built = subprocess.run(
        [
            compiler,
            "-O2",
            "-ffp-contract=off",
            *warnings,
            f"-I{HEADERS}",
            str(source),
            "-o",
            str(program),
            *flags,
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    if run:
        assert subprocess.run([str(program)], timeout=60).returncode == 0
