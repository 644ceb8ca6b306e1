"""The pytest plugin of sinpe's conformance kit (entry point ``pytest11``: ``sinpe``).

A module of its own, outside the ``sinpe`` package: pytest loads every installed plugin in
every run, and this one imports nothing of sinpe until a test asks for
``rope_config``, so that installing sinpe costs another project's test run nothing.

Opt-in: it changes nothing unless a test asks for the ``rope_config`` fixture, is marked
``@pytest.mark.sinpe_corpus``, or ``--sinpe-corpus`` is given. A test taking ``rope_config``
runs once per corpus config (its id the config's name); a config sinpe refuses is skipped
with its reason. ``--sinpe-corpus=all`` (default), a rope type (``yarn``, ``longrope``, ...),
``defaults`` (transformers' default configs) or a folder of ``config.json`` files."""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_generate_tests", "selected"]

_MARK = "sinpe_corpus"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("sinpe", "sinpe RoPE conformance kit")
    group.addoption(
        "--sinpe-corpus",
        default=None,
        metavar="WHICH",
        help="the configs the rope_config fixture runs over: all, a rope type (yarn, "
        "longrope, llama3, ...), defaults (transformers' default configs) or a folder of "
        "config.json files (default: all)",
    )


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARK}(rope_type=None, family=None, form=None): run the test once per sinpe corpus "
        "config (the rope_config fixture), selected as sinpe.testing.configs selects",
    )


def selected(which: str | None, **select) -> list:
    """The corpus entries ``--sinpe-corpus=which`` names, narrowed by a marker's selection."""
    from sinpe.testing.corpus import select_corpus  # only now: a test asked for the corpus

    try:
        return select_corpus(which, **select)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc) -> None:
    if "rope_config" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(_MARK)
    select = dict(marker.kwargs) if marker is not None else {}
    entries = selected(metafunc.config.getoption("--sinpe-corpus"), **select)
    params = [
        pytest.param(
            entry,
            id=entry.name,
            marks=[pytest.mark.skip(reason=f"sinpe refuses {entry.name}: {entry.refused}")]
            if entry.refused
            else [],
        )
        for entry in entries
    ]
    metafunc.parametrize("rope_config", params)
