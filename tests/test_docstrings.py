"""Every docstring example of the installed package runs and prints what it shows (the
docs' examples run through pytest's ``--doctest-glob``; these are the modules')."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sinpe


def _modules() -> list:
    names = {m.name for m in pkgutil.walk_packages(sinpe.__path__, "sinpe.")}
    return sorted(["sinpe"] + [n for n in names if not n.endswith("__main__")])


MODULES = _modules()


def _examples(name: str) -> list:
    if name.startswith("sinpe.torch"):
        pytest.importorskip("torch")
    if name.startswith("sinpe.mlx"):
        pytest.importorskip("mlx.core")
    module = importlib.import_module(name)
    found = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    return [test for test in found if test.examples]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_print_what_they_show(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list = []
    for test in _examples(name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_the_public_functions_have_examples():
    counted = sum(
        len(t.examples)
        for name in MODULES
        if not name.startswith(("sinpe.torch", "sinpe.mlx"))
        for t in _examples(name)
    )
    assert counted >= 20, counted
