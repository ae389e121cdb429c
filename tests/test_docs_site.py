"""The docs site builds with `mkdocs build --strict`: every page in the nav, no broken link or anchor, and
an API reference generated from the docstrings (mkdocstrings), as CI builds it.

mkdocs comes with the `docs` extra, which `make test` installs; a local venv without it skips with the
reason, CI (KGFED_REQUIRE_SERVERS=1) fails instead. A page with a broken link, built with the site's own
settings, must fail: strict mode has teeth. (About 10 s for both on a quiet machine, 22 s at load 10.)
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


from .conftest import ROOT
from .conftest_servers import unavailable

MKDOCS = Path(sys.executable).parent / "mkdocs"


def build(project: Path, site: Path) -> subprocess.CompletedProcess:
    if not MKDOCS.exists():
        unavailable("mkdocs is not installed in this venv: pip install -e '.[docs]' (make test does)")
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(project / "mkdocs.yml"), "-d", str(site)],
                          cwd=project, capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                                                       "PATH": str(MKDOCS.parent)})


def nav_pages(config: str) -> list[str]:
    return re.findall(r":\s*([\w/.-]+\.md)\s*$", config, flags=re.M)


def test_the_site_builds_strict_with_every_page_and_the_api_reference(tmp_path):
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-3000:]}"
    config = (ROOT / "mkdocs.yml").read_text()
    pages = nav_pages(config)
    written = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts}
    assert written == set(pages), "every docs page is in the nav of mkdocs.yml, and every nav entry exists"
    for page in pages:
        html = tmp_path / "site" / ("index.html" if page == "index.md" else page.removesuffix(".md") + "/index.html")
        assert html.is_file(), page
    api = (tmp_path / "site" / "api" / "kg" / "index.html").read_text()
    # generated from the docstrings: the facade's methods with their own words
    for anchor in ("kgfed.engine.kg.facade.KG.relations", "kgfed.engine.kg.facade.KG.neighbors", "kgfed.engine.kg.facade.KG.open"):
        assert f'id="{anchor}"' in api
    from kgfed.engine.kg.facade import KG

    first_line = KG.relations.__doc__.strip().splitlines()[0][:40]
    assert first_line.split("`")[0] in api
    errors = (tmp_path / "site" / "api" / "errors" / "index.html").read_text()
    assert 'id="kgfed.sparql.errors.KgfedError"' in errors
    changelog = (tmp_path / "site" / "changelog" / "index.html").read_text()
    assert "Keep a Changelog" in changelog and "0.1.0" in changelog  # CHANGELOG.md itself, included


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The site's own settings (validation, extensions, plugins) on one page with a broken link: strict fails."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["nav"] = [{"Home": "index.md"}]
    config["hooks"] = [str(ROOT / hook) for hook in config.get("hooks", [])]
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "mkdocs.yml").write_text(yaml.safe_dump(config))
    (project / "docs" / "index.md").write_text("# kgfed\n\nSee [the missing page](no-such-page.md).\n")
    done = build(project, tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr
    (project / "docs" / "index.md").write_text("# kgfed\n\nNo link at all.\n")
    assert build(project, tmp_path / "site").returncode == 0  # the same project without the broken link builds
