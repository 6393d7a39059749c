"""Code outside a variant's own files never names it: it asks the registry (issue 14).

``grep -rni red3`` over ``replays/`` and ``web/`` Python, leaving out Red 3's own modules
(``web/red3_*.py``: its pages; everything else of Red 3 is in ``domain/red3/``), finds nothing
but the lines listed here, each with the work that removes it. (Before issue 14 the
same grep found 103 lines in 17 modules.) The registry's list itself lives in
``domain/variants/__init__.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN = re.compile(r"^web/red3_[^/]*\.py$")
# Pool and Deals Rummy's own pages (``Variant.web_pages``), as Red 3's are web/red3_*.py.
POOLDEALS_OWN = re.compile(r"^web/pooldeals_[^/]*\.py$")
# Files allowed to name a variant, each with the work that removes it (none left: the
# record bounds moved into domain/red3/record_schema.py with the declared schema).
KNOWN_FILES: set[str] = set()


def naming_lines() -> list[str]:
    found = []
    for top in ("replays", "web"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if OWN.match(relative) or relative in KNOWN_FILES:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if "red3" in line.lower():
                    found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_only_the_registry_names_a_variant():
    assert naming_lines() == []


def test_the_registry_list_names_every_family():
    text = (ROOT / "domain" / "variants" / "__init__.py").read_text()
    assert "RED3" in text and "POINTS" in text and "RAISE" in text
    assert "POOL" in text and "DEALS" in text


# Pool and Deals Rummy have no modules outside domain/pooldeals/ but their own pages
# (web/pooldeals_*.py): their names, as a value or the family's package, appear nowhere
# else in replays/ or web/ ("pool" alone is also a word for connection pools, so only the
# quoted variant names and the package name count).
POOL_DEALS = re.compile(r"pooldeals|[\"']pool[\"']|[\"']deals[\"']|\b(?:Pool|Deals) Rummy\b")


def test_nothing_outside_the_family_names_pool_or_deals():
    found = []
    for top in ("replays", "web"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if POOLDEALS_OWN.match(relative):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if POOL_DEALS.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []


def test_the_known_files_still_name_it():
    # A file whose lines went comes off KNOWN_FILES.
    for relative in KNOWN_FILES:
        assert "red3" in (ROOT / relative).read_text().lower(), relative
