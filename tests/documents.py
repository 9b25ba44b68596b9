"""The documentation the tests keep exact: README.md and the pages of docs/, read as Markdown."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# README.md first, then docs/*.md in name order: paths relative to the repository's root.
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
CONSOLE_BLOCK = re.compile(r"```console\n\$ (jaxfix [^\n]*)\n(.*?)```", re.S)


def text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def fenced(page_text: str, language: str) -> list[str]:
    """The bodies of the page's ```LANGUAGE blocks, in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", page_text, re.S | re.M)


def fenced_everywhere(language: str) -> list[tuple[str, str]]:
    """(page, body) of every ```LANGUAGE block of every page."""
    return [(page, body) for page in PAGES for body in fenced(text(page), language)]


def console_blocks() -> list[tuple[str, str, str]]:
    """(page, command, output) of every ```console block that runs `$ jaxfix ...`."""
    return [(page, m[1], m[2]) for page in PAGES for m in CONSOLE_BLOCK.finditer(text(page))]


def headings(page_text: str) -> list[tuple[int, str]]:
    """(level, title) of each Markdown heading, those in code fences left out."""
    found, in_code = [], False
    for line in page_text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"(#{1,6}) (.*)", line)):
            found.append((len(m[1]), m[2].strip()))
    return found


def section(title: str) -> str:
    """The text under the heading `title` (on whichever page has it), up to the next heading of
    the same or a higher level; exactly one page may have it."""
    found = []
    for page in PAGES:
        page_text = text(page)
        in_code, start, level = False, None, 0
        lines = page_text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else re.match(r"(#{1,6}) (.*)", line)
            if m and start is not None and len(m[1]) <= level:
                found.append("".join(lines[start:i]))
                start = None
            if m and m[2].strip() == title and start is None:
                start, level = i + 1, len(m[1])
        if start is not None:
            found.append("".join(lines[start:]))
    assert len(found) == 1, f"{len(found)} sections titled {title!r} in {PAGES}"
    return found[0]


def github_anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped,
    spaces made `-`."""
    slug = re.sub(r"[^\w\- ]", "", title.lower())
    return slug.replace(" ", "-")


def anchors(page_text: str) -> set[str]:
    """Every heading's anchor on the page (GitHub numbers repeated ones: `x`, `x-1`, ...)."""
    seen: dict[str, int] = {}
    result = set()
    for _, title in headings(page_text):
        slug = github_anchor(title)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result
