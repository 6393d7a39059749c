"""The solver compiled with mypyc (domain/rummy13/native.py) against its pure source.

The compiled modules must give the pure source's answers, every one of them (score,
groups in order, loose cards, the counted cards, declarations); a build whose source has
changed since must not run; ``RUMMY_LEDGER_PURE=1`` must run the source. Tests needing a
build skip without one (a machine without a C compiler), never in CI, where ``make setup``
builds it.
"""

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from oracle import JOKER_CLASSES, deal_in_class, deal_joker_rich, deal_near_complete, deal_random

from domain.rummy13 import native, solver

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
HANDS = 3_000


@pytest.fixture
def built():
    """Skip without a build in use, outside CI; fail in CI."""
    if not native.compiled():
        reason = native.refusal()[0]
        if IN_CI:
            pytest.fail(f"CI must run the compiled solver, and it does not: {reason}")
        pytest.skip(f"the solver runs pure here: {reason}")


def _answers(module, hand, wild):
    """Everything the solver's public functions say of a hand, as text."""
    best = module.best_grouping(hand, wild)
    bounded = module.best_grouping(hand, wild, bound=best.hand_score + 3)
    score, counted = module.deadwood(hand, wild)
    declared = module.declaration(hand, wild)
    return (
        best.hand_score,
        [str(group) for group in best.groups],
        [str(card) for card in best.loose],
        best.reasons,
        [str(group) for group in bounded.groups],
        score,
        [str(card) for card in counted],
        module.min_hand_score(hand, wild),
        None if declared is None else [str(group) for group in declared.groups],
    )


def test_compiled_and_pure_give_the_same_answers(built):
    _, pure = native.pure_modules()
    assert pure is not solver and pure.__file__.endswith("solver.py")
    rng = random.Random(33)
    dealers = [deal_random, deal_near_complete, deal_joker_rich]
    dealers += [lambda rng, name=name: deal_in_class(rng, name) for name in JOKER_CLASSES]
    differing = []
    for module in solver, pure:
        module.clear_caches()
    for number in range(HANDS):
        hand, wild = dealers[number % len(dealers)](rng)
        compiled_answers = _answers(solver, hand, wild)
        if compiled_answers != _answers(pure, hand, wild):
            differing.append((" ".join(map(str, hand)), str(wild)))
    assert differing == []


def test_a_build_is_used_only_while_it_is_the_sources(tmp_path, monkeypatch):
    monkeypatch.delenv(native.PURE, raising=False)
    record = tmp_path / "native_build.json"
    assert native.refusal(record) == ("not built", False)
    record.write_text(json.dumps({"built": False, "reason": "no compiler"}))
    assert native.refusal(record) == ("the build failed: no compiler", False)
    sources = {module: native.fingerprint(native.source_path(module)) for module in native.MODULES}
    record.write_text(json.dumps({"built": True, "sources": sources}))
    if all(native.library_path(module).exists() for module in native.MODULES):
        assert native.refusal(record) == (None, False)
        edited = dict(sources, **{"domain.rummy13.solver": "00000000-1"})
        record.write_text(json.dumps({"built": True, "sources": edited}))
        assert native.refusal(record) == ("solver.py changed since it was compiled", True)
    else:
        assert native.refusal(record)[1]  # a build recorded, its libraries gone: a warning
    monkeypatch.setenv(native.PURE, "1")
    assert native.refusal(record) == ("RUMMY_LEDGER_PURE is set", False)


def _imported_solver(root: Path, **environment: str) -> subprocess.CompletedProcess:
    """A fresh process importing the solver from the copy of the package at ``root``."""
    env = {key: value for key, value in os.environ.items() if key != native.PURE}
    code = (
        "from domain.rummy13 import native, solver; "
        "print(solver.__file__); print(native.compiled()); "
        "print(solver.min_hand_score('AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D'.split(), '7D'))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**env, **environment},
        capture_output=True,
        text=True,
        check=True,
    )


def test_an_edited_source_runs_as_it_reads_not_as_compiled(built, tmp_path):
    """The build and sources copied, the copy's solver.py edited after the build: its
    import runs the edited source, says so, and the unedited copy runs compiled."""
    shutil.copytree(ROOT / "domain", tmp_path / "domain", ignore=shutil.ignore_patterns("*.pyc"))
    as_built = _imported_solver(tmp_path)
    assert as_built.stdout.split() == [
        str(native.library_path("domain.rummy13.solver")).replace(str(ROOT), str(tmp_path)),
        "True",
        "27",
    ]
    assert as_built.stderr == ""
    forced = _imported_solver(tmp_path, **{native.PURE: "1"})
    assert forced.stdout.split()[1:] == ["False", "27"] and forced.stderr == ""
    source = tmp_path / "domain" / "rummy13" / "solver.py"
    source.write_text(
        source.read_text().replace(
            "    return two[0] if two is not None else score\n", "    return -1\n"
        )
    )
    edited = _imported_solver(tmp_path)
    assert edited.stdout.split() == [str(source), "False", "-1"]
    assert "solver.py changed since it was compiled" in edited.stderr
