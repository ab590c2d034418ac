"""docs/ builds into a static site (mkdocs-material, warnings as errors), and every internal link of
the READMEs and of docs/ lands on a file and, with an #anchor, on a heading there.

mkdocs.yml's ``validation`` makes a link to a missing page or heading a warning, which --strict
fails; the link walk below covers what the site does not render (the READMEs) and holds every
heading to one anchor on GitHub and on the site alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
READMES = [p for p in (ROOT / "README.md", ROOT / "README.zh-CN.md") if p.exists()]
# the READMEs beside the benchmarks and the fixture recorders: not on the site, linked from it
OTHERS = [ROOT / "benchmarks" / "README.md", ROOT / "tools" / "README.md"]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)|<(?:img|a)\s[^>]*?(?:src|href)=\"([^\"]+)\"")
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)


def prose(path: Path) -> str:
    """The file without its code: fenced blocks and inline code spans hold no links."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", path.read_text(encoding="utf-8")))


def headings(path: Path) -> list[tuple[int, str]]:
    return [(len(m.group(1)), m.group(2)) for m in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8")))]


def github_slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {github_slug(t) for _, t in headings(path)}


def links(path: Path) -> list[str]:
    return [a or b for a, b in LINK.findall(prose(path))]


def test_site_builds_with_warnings_as_errors(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in PAGES:
        assert (site / page.with_suffix(".html").name).is_file(), page.name


@pytest.mark.parametrize("path", READMES + PAGES + OTHERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_internal_links_resolve(path):
    for link in links(path):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        file, _, anchor = link.partition("#")
        target = (path.parent / file).resolve() if file else path
        assert target.exists(), f"{path.name}: {link} names no file"
        if path.parent == DOCS:  # the site holds docs/ only: a link out of it is broken there
            assert DOCS in target.parents, f"{path.name}: {link} leaves docs/"
        if anchor:
            assert target.suffix == ".md" and anchor in anchors(target), f"{path.name}: {link} names no heading"


@pytest.mark.parametrize("path", READMES + PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_heading_has_one_anchor(path):
    titles = [t for _, t in headings(path)]
    assert len({github_slug(t) for t in titles}) == len(titles), "two headings share an anchor"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_a_heading_has_the_same_anchor_on_github_and_on_the_site(path):
    """A page is read on GitHub and on the site: a link to a heading must work on both."""
    for _, title in headings(path):
        assert github_slug(title) == slugify(title, "-"), title


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_page_opens_with_its_contents(path):
    """The list of links before the first section names every section and subsection, in order,
    a subsection's nested by four spaces (Python-Markdown's nesting, which GitHub reads too)."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    first = text.index("\n## ")
    listed = re.findall(r"^( *)- \[[^\]]+\]\(#([^)]+)\)", text[:first], re.M)
    expected = [(" " * 4 * (level - 2), github_slug(t)) for level, t in headings(path) if level in (2, 3)]
    assert listed == expected


def test_the_readme_is_a_guide():
    """At most about 300 lines; the reference
    lives in docs/, and the README links every page."""
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 300
    linked = {(readme.parent / link.partition("#")[0]).resolve() for link in links(readme)}
    assert {p.resolve() for p in PAGES} <= linked, "a page of docs/ the README does not link"
