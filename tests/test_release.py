"""The release files agree with the version: CHANGELOG.md has its section, CITATION.cff its number, LICENSE
the licence pyproject.toml names, and the README stays a front page (at most 160 lines, no release notes: those
are CHANGELOG.md's).

A release bumps `kgfed.engine.__version__` alone; these fail until the other files follow.
"""
from __future__ import annotations

import re
import tomllib

import yaml

from kgfed.engine import __version__

from .conftest import ROOT


def test_the_changelog_has_a_section_for_this_version_and_keeps_the_format():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "Keep a Changelog" in text and "## [Unreleased]" in text
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, flags=re.M)
    assert releases and releases[0][0] == __version__, "the newest release section of CHANGELOG.md is this version"
    assert [v for v, _ in releases] == sorted((v for v, _ in releases), key=lambda v: tuple(map(int, v.split("."))),
                                              reverse=True)
    assert [d for _, d in releases] == sorted((d for _, d in releases), reverse=True)
    sections = set(re.findall(r"^### (\w+)$", text, flags=re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, sections


def test_citation_cff_names_this_version_and_the_licence():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert str(citation["version"]) == __version__
    assert citation["license"] == pyproject["project"]["license"] == "MIT"
    assert citation["authors"] and citation["title"].startswith("kgfed")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{__version__}] - {citation['date-released']}" in changelog  # released the day the changelog says


def test_the_licence_file_is_mit():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the kgfed developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_the_readme_is_one_screen_of_introduction():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines: move long sections into docs/ (docs/cli.md)"
    headings = [line for line in lines if line.startswith("#")]
    assert not [h for h in headings if re.search(r"new in|since \d|release|unreleased|changelog", h, re.I)], \
        "release notes go in CHANGELOG.md, not in the README"
    first_command = next(i for i, line in enumerate(lines) if line.startswith("make demo"))
    assert first_command < 20, "the two set-up commands come first"
    assert any(line.startswith("make test") for line in lines[first_command:first_command + 3])
