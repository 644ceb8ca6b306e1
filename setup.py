"""Build the optional Cython kernel; everything else is declared in pyproject.toml.

Rules (see README, "Installing"):
- the extension ``sinpe._c._kernel`` is built from ``src/sinpe/_c/_kernel.pyx`` and the C
  headers beside it;
- threads are sinpe's own (POSIX threads, Windows threads; ``_c/team.h``): no OpenMP;
- if the extension cannot be built, the install goes on with the NumPy fallback and says so
  loudly, unless ``SINPE_REQUIRE_EXTENSION=1``, which turns the failure into an error;
- ``SINPE_DEBUG_BUILD=1`` compiles with Cython's bounds, initialisation and division checks
  on, C asserts on, and the kernel checking every argument it otherwise trusts (CI runs the
  whole test suite once on such a build);
- the user's ``CFLAGS`` are honoured: ``-O3`` and ``-g0`` are added only where they name no
  ``-O`` or ``-g`` of their own, and C asserts stay off (``-DNDEBUG``) except in a debug build;
- ``SINPE_SIMD=avx512``, ``avx2``, ``sse2`` or ``c`` caps the hot loop at that instruction set
  (default ``auto``: AVX-512 (with AVX512_BF16's bfloat16 stores where the CPU has them) or
  AVX2 where the CPU has it, chosen at run time), so that CI can run the
  whole test suite on the loops that other CPUs would otherwise run;
  ``SINPE_SIMD=avx512-emulated`` builds the AVX-512 loops on SIMDe's portable intrinsics
  (the ``simde-py`` package must be installed in the build environment) and runs them on
  any CPU: a slow test build, for machines without AVX-512.
"""

import glob
import os
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRE_EXTENSION = os.environ.get("SINPE_REQUIRE_EXTENSION", "") == "1"
DEBUG_BUILD = os.environ.get("SINPE_DEBUG_BUILD", "") == "1"
SIMD_LEVELS = {"c": 0, "sse2": 1, "avx2": 2, "avx512": 3, "auto": 4, "avx512-emulated": 3}
SIMD = os.environ.get("SINPE_SIMD", "").strip().lower() or "auto"
if SIMD not in SIMD_LEVELS:
    sys.exit(f"SINPE_SIMD={SIMD!r}: use one of {', '.join(SIMD_LEVELS)}")


def simde_include():
    """SIMDe's headers: SINPE_SIMDE_INCLUDE, else the simde-py package's (which pip's isolated
    build environment lacks: CI passes its path)."""
    given = os.environ.get("SINPE_SIMDE_INCLUDE", "").strip()
    if given:
        return given
    try:
        import simde_py
    except ImportError:
        sys.exit(
            "SINPE_SIMD=avx512-emulated needs SIMDe's headers: pip install simde-py, and set "
            "SINPE_SIMDE_INCLUDE=$(python -c 'import simde_py; print(simde_py.get_include())')"
        )
    return simde_py.get_include()


def shout(message):
    bar = "=" * 78
    print(f"\n{bar}\nsinpe: {message}\n{bar}\n", file=sys.stderr, flush=True)


class OptionalBuildExt(build_ext):
    """Build the kernel; on failure fall back to NumPy loudly, or fail when required."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True  # see cythonize(force=True) below

    def build_extensions(self):
        compile_args, link_args = [], []
        if self.compiler.compiler_type != "msvc":
            # -ffp-contract=off: no fused multiply-add contraction, so the kernel rounds exactly
            # like the NumPy fallback and both backends return bit-identical tables.
            compile_args.append("-ffp-contract=off")
            # The user's CFLAGS come first on the command line and these after, so a flag
            # added here would override theirs: -O3 and -g0 only where they chose none.
            user = f"{os.environ.get('CFLAGS', '')} {os.environ.get('CPPFLAGS', '')}".split()
            if not any(flag.startswith("-O") for flag in user):
                compile_args.append("-O3")
            if not DEBUG_BUILD and not any(flag.startswith("-g") for flag in user):
                compile_args.append("-g0")  # Python's flags carry -g: 1.5 MB in the wheel
            if sys.platform != "win32":  # the helpers of team.h
                compile_args.append("-pthread")
                link_args.append("-pthread")
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args or []) + compile_args
            ext.extra_link_args = list(ext.extra_link_args or []) + link_args
            ext.define_macros = list(ext.define_macros or []) + [
                ("SINPE_DEBUG", "1" if DEBUG_BUILD else "0"),
                ("SINPE_MAX_SIMD", str(SIMD_LEVELS[SIMD])),
            ]
            if SIMD == "avx512-emulated":
                ext.define_macros.append(("SINPE_AVX512_EMULATED", "1"))
                if self.compiler.compiler_type != "msvc":  # SIMDe's 512-bit values, no target
                    ext.extra_compile_args.append("-Wno-psabi")
                ext.include_dirs = list(ext.include_dirs or []) + [simde_include()]
            if not DEBUG_BUILD:  # a user's CFLAGS replace Python's, -DNDEBUG with them
                ext.define_macros.append(("NDEBUG", None))
        super().build_extensions()

    def run(self):
        try:
            super().run()
        except Exception as exc:
            self.fail(exc, self.extensions)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self.fail(exc, [ext])

    def fail(self, exc, failed):
        # A kernel left over from an earlier build (build/lib..., or src/ for an editable
        # install) would otherwise be installed in place of the one that just failed.
        for ext in failed:
            stale = self.get_ext_fullpath(ext.name)
            if os.path.exists(stale):
                os.remove(stale)
                print(f"sinpe: removed the stale {stale}", file=sys.stderr)
        if REQUIRE_EXTENSION:
            shout(f"building the Cython kernel failed and SINPE_REQUIRE_EXTENSION=1: {exc}")
            raise exc
        shout(
            "WARNING: the Cython kernel could not be built "
            f"({type(exc).__name__}: {exc}).\n"
            "sinpe is installed with the pure-NumPy fallback only (sinpe.BACKEND == 'numpy'),\n"
            "which is exact but slower. Install a C compiler and reinstall for the fast path;\n"
            "set SINPE_REQUIRE_EXTENSION=1 to make this an error."
        )


def extensions():
    try:
        from Cython.Build import cythonize
    except ImportError as exc:
        if REQUIRE_EXTENSION:
            raise
        shout(f"WARNING: Cython is not available ({exc}); installing the NumPy fallback only.")
        return []
    import numpy

    directives = {
        "language_level": 3,
        "boundscheck": DEBUG_BUILD,
        "wraparound": False,
        "initializedcheck": DEBUG_BUILD,
        "cdivision": not DEBUG_BUILD,
        "freethreading_compatible": True,
    }
    ext = Extension(
        "sinpe._c._kernel",
        ["src/sinpe/_c/_kernel.pyx"],
        depends=sorted(glob.glob("src/sinpe/_c/*.h")),  # the C the .pyx includes
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    if DEBUG_BUILD:
        shout("debug build: bounds checks and argument checks on")
        ext.undef_macros = ["NDEBUG"]
    if SIMD != "auto":
        shout(f"SINPE_SIMD={SIMD}: the hot loop is capped at {SIMD} (a test build, not a fast one)")
    # force: a .c or .so left by an earlier build (debug or not, or with another compiler)
    # must never stand in for this one; regenerating costs seconds.
    return cythonize([ext], compiler_directives=directives, quiet=True, force=True)


if sysconfig.get_config_var("Py_GIL_DISABLED"):
    print("sinpe: building for free-threaded CPython", file=sys.stderr)

setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
