"""Structure people search by: article headings in documents and article references in questions. Pure functions.

In Turkish laws and regulations people ask for "Madde 27", "md. 27", "27. madde" or "Article 27"; in English
documents for "Section 4.2". Two sides meet on one normalised key (``article:27``, ``ek:2``, ``gecici:1``,
``section:4.2``):

* documents: ``heading_key(line)`` recognises a heading line ("MADDE 27 –", "Madde 27-", "Ek Madde 2 –",
  "Geçici Madde 1 –", "Article 27", "Section 4.2", a numbered "4.2 Results"); ``article_sections(pages)`` turns
  those headings into page sections (``Madde 27 – Genel kurul``), so chunks start at an article and carry it;
* queries: ``article_refs(query)`` finds every reference ("Madde 27", "md. 27", "27. madde", "madde 27'de",
  "27 nci maddesi", "Geçici Madde 1", "Article 27", "Art. 5", "Section 4.2", "§ 4") and
  ``section_matches(section, ref)`` says whether a chunk's section path names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kaynak.types import Page, Section

__all__ = [
    "ArticleRef",
    "article_refs",
    "article_sections",
    "heading_key",
    "promote_matching",
    "section_key",
    "section_matches",
]

T = TypeVar("T")

ARTICLE, EK, GECICI, SECTION, ANY = "article", "ek", "gecici", "section", "any"

_I = "[iİıI]"  # Turkish and English i in every case (İ/i, I/ı), so no case folding shifts offsets
_NUM = r"(\d{1,4}(?:\.\d{1,3}){0,3}(?:/[A-Za-z])?)"
_MADDE = rf"(?:madde|maddes{_I}|maddede|maddeye|maddeler{_I}?)"
_EK_GECICI = rf"(?:(?P<pre>ek|ge[çc]{_I}c{_I})\s+)?"
_ORDINAL = rf"(?:\s*\.|\s*['’]?\s*(?:{_I}nc{_I}|[ıi]nc[ıi]|[uü]nc[uü]|nc{_I}|nc[uü]|nc[ıi]))"

# Query references, tried in this order; each match yields (kind prefix, number).
_REF_PATTERNS = [
    # Madde 27, MADDE 27, md. 27, md.27, mad. 27, madde 27'de, Ek Madde 2, Geçici Madde 1, ek md. 2
    re.compile(rf"(?<!\w){_EK_GECICI}(?:{_MADDE}\s*|(?:md|mad)(?:\.\s*|\s+)){_NUM}(?!\d)", re.IGNORECASE),
    # 27. madde, 27 nci madde, 27'nci maddesi, ek 2. madde, geçici 1. madde
    re.compile(rf"(?<![\w.]){_EK_GECICI}{_NUM}{_ORDINAL}\s*{_MADDE}(?!\w)", re.IGNORECASE),
    # Article 27, Art. 27, article 27(1)
    re.compile(rf"(?<!\w)(?P<en>art{_I}cle|art\.)\s*{_NUM}(?!\d)", re.IGNORECASE),
    # Section 4.2, Sec. 4.2, Sect. 4
    re.compile(rf"(?<!\w)(?P<sec>sect{_I}on|sect?\.)\s*{_NUM}(?!\d)", re.IGNORECASE),
    # § 4, §4.2, §§ 4
    re.compile(rf"(?P<par>§§?)\s*{_NUM}(?!\d)"),
]


@dataclass(frozen=True)
class ArticleRef:
    """One article or section named in a query: ``kind`` (article, ek, gecici, section or any for "§"),
    ``number`` ("27", "4.2", "5/A"), the ``text`` as written and its span ``start``–``end`` in the query."""

    kind: str
    number: str
    text: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """``article:27``, ``ek:2``, ``gecici:1``, ``section:4.2`` or ``any:4``."""
        return f"{self.kind}:{self.number}"

    @property
    def heading(self) -> str:
        """How a heading names it, for a keyword query: "Madde 27", "Ek Madde 2", "Geçici Madde 1", "Section 4.2",
        and "Madde 4" for "§ 4" (an English "Article 27" also reads "Madde 27": Turkish law is what has them)."""
        return {EK: "Ek Madde", GECICI: "Geçici Madde", SECTION: "Section"}.get(self.kind, "Madde") + f" {self.number}"


def _norm_number(raw: str) -> str:
    return raw.rstrip(".").upper()


def _kind(m: re.Match[str]) -> str:
    groups = m.groupdict()
    if groups.get("en"):
        return ARTICLE
    if groups.get("sec"):
        return SECTION
    if groups.get("par"):
        return ANY
    pre = (groups.get("pre") or "").lower()
    if not pre:
        return ARTICLE
    return EK if pre == "ek" else GECICI


def article_refs(query: str) -> list[ArticleRef]:
    """Every article or section reference in ``query``, in the order they appear; [] when there is none."""
    found: list[ArticleRef] = []
    taken: list[tuple[int, int]] = []
    for pattern in _REF_PATTERNS:
        for m in pattern.finditer(query):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            number = next(g for g in reversed(m.groups()) if g and g[:1].isdigit())
            found.append(ArticleRef(_kind(m), _norm_number(number), m.group(0).strip(), m.start(), m.end()))
            taken.append((m.start(), m.end()))
    return sorted(found, key=lambda r: r.start)


# --------------------------------------------------------------------------------------------- headings

# A heading line: Turkish article headings need a dash (or the line's end) after the number, so that a sentence
# starting "Madde 5 uyarınca …" is no heading; English ones a capitalised title, a colon/dash/period or the end.
_TR_HEADING = re.compile(rf"^(?:(?P<pre>EK|Ek|GEÇİCİ|Geçici)\s+)?(?:MADDE|Madde)\s+{_NUM}\s*(?:\.?\s*[-–—]+|:|$)")
_EN_HEADING = re.compile(
    rf"^(?:(?P<en>ARTICLE|Article)|(?P<sec>SECTION|Section))\s+{_NUM}(?:[.:]?\s*(?:[-–—]\s*)?(?=[A-Z\"“])|[.:]?\s*$)"
)
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+([A-ZÇĞİÖŞÜ][^\d,;:!?]{1,70})$")
_MAX_HEADING_LINE = 90


def _numbered_title(line: str) -> str | None:
    """The number of a numbered heading such as "4.2 Results" or "3 Implementation" (not a list item or a row
    of a table: a short title without digits, commas or a final period, and few words after a single number)."""
    m = _NUMBERED.match(line)
    if m is None:
        return None
    number, title = m.group(1), m.group(2).strip()
    words = title.split()
    if "." not in number and line[len(number)] == ".":
        return None  # "1. Foo" is a list item
    if title.endswith(".") or len(words) > (8 if "." in number else 5) or int(number.split(".")[0]) > 30:
        return None
    return number


def heading_key(line: str, numbered: bool = True) -> str | None:
    """The key of a heading line ("MADDE 27 – …" → ``article:27``, "Section 4.2" → ``section:4.2``,
    "4.2 Results" → ``section:4.2``, unless ``numbered`` is False), or None when the line is no article or section
    heading."""
    line = line.strip()
    if not line or len(line) > 4000:
        return None
    m = _TR_HEADING.match(line)
    if m is not None:
        pre = (m.group("pre") or "").lower()
        kind = ARTICLE if not pre else (EK if pre == "ek" else GECICI)
        return f"{kind}:{_norm_number(m.group(2))}"
    m = _EN_HEADING.match(line)
    if m is not None:
        return f"{ARTICLE if m.group('en') else SECTION}:{_norm_number(m.group(3))}"
    if numbered and len(line) <= _MAX_HEADING_LINE:
        number = _numbered_title(line)
        if number is not None:
            return f"{SECTION}:{number}"
    return None


def section_key(section: str | None) -> str | None:
    """The key of the deepest article or section heading in a section path ("İKİNCİ BÖLÜM › Madde 27 – Genel
    kurul" → ``article:27``), or None when the path names none."""
    if not section:
        return None
    for part in reversed(section.split(" › ")):
        key = heading_key(part)
        if key is not None:
            return key
    return None


def section_matches(section: str | None, ref: ArticleRef) -> bool:
    """Does a chunk's section path name the article or section ``ref`` refers to? "§" refers to either."""
    key = section_key(section)
    if key is None:
        return False
    kind, number = key.split(":", 1)
    if number != ref.number:
        return False
    return ref.kind == kind or (ref.kind == ANY and kind in (ARTICLE, SECTION))


def promote_matching(items: Sequence[T], refs: Sequence[ArticleRef], section_of: Callable[[T], str | None]) -> list[T]:
    """``items`` (e.g. ranked hits) with those whose section names one of ``refs`` moved to the front, both
    groups keeping their order; unchanged when ``refs`` is empty or nothing matches."""
    if not refs:
        return list(items)
    first = [x for x in items if any(section_matches(section_of(x), r) for r in refs)]
    if not first:
        return list(items)
    chosen = {id(x) for x in first}
    return first + [x for x in items if id(x) not in chosen]


# --------------------------------------------------------------------------------------------- sections

_LINE_RE = re.compile(r"[^\n]+")
_TITLE_PREFIX = re.compile(r"^(?:[A-ZÇĞİÖŞÜ]\)|[IVXLC]{1,6}\s*[-–—.)]|\d{1,2}[.)])\s*")


def _is_title(line: str) -> bool:
    """A short line above an article heading that names it ("A) Genel kurul:", "Bakım", "Tanımlar")."""
    words = _TITLE_PREFIX.sub("", line)
    return (
        0 < len(line) <= 80
        and words[:1].isupper()
        and line[-1] not in ".;,"
        and not any(ch.isdigit() for ch in words)
        and heading_key(line) is None
    )


def _label(line: str, key: str, title: str | None) -> str:
    """The section path of a heading: its words up to the number ("MADDE 27", "Ek Madde 2", "Section 4.2"), the
    whole line for a numbered heading ("4.2 Results"), and the title line above it when there is one."""
    number = key.split(":", 1)[1]
    end = line.upper().find(number)
    english = _EN_HEADING.match(line) is not None and len(line) <= 80
    head = line[: end + len(number)] if end >= 0 and not line[:1].isdigit() and not english else line
    head = " ".join(head.split())
    if title:
        title = _TITLE_PREFIX.sub("", title).rstrip(" :").strip()
    return f"{head} – {title}" if title else head


_BARE_TR = re.compile(rf"^(?:(?:EK|Ek|GEÇİCİ|Geçici)\s+)?(?:MADDE|Madde)\s+{_NUM}$")
_RUNS_ON = re.compile(r"(?:,|\b(?:EK|Ek|ek|GEÇİCİ|Geçici|geçici|ve|and))$")


def _bare_in_running_text(lines: Sequence[tuple[int, str]], i: int) -> bool:
    """A bare "Madde 4" line (no dash after the number) that continues the line above ("…, Ek" / "Madde 4") or is
    followed by no text ("14/4/1983"), as in a table of amendments: no heading."""
    if _BARE_TR.match(lines[i][1]) is None:
        return False
    before = lines[i - 1][1] if i > 0 else ""
    after = lines[i + 1][1] if i + 1 < len(lines) else ""
    return bool(_RUNS_ON.search(before)) or not (after[:1].isalpha() or after[:1] == "(")


def _headings(text: str, numbered: bool) -> list[tuple[int, str]]:
    """(start, section path) of every heading on a page; the start moves up over title lines right above it.
    ``numbered``: also numbered headings ("4.2 Results"), for pages without heading markup."""
    lines = [(m.start(), m.group(0).strip()) for m in _LINE_RE.finditer(text)]
    out: list[tuple[int, str]] = []
    for i, (start, line) in enumerate(lines):
        key = heading_key(line, numbered)
        if key is None or _bare_in_running_text(lines, i):
            continue
        first, title = start, None
        j = i - 1 if _TR_HEADING.match(line) else -1  # English headings carry their title on their own line
        while j >= 0 and i - j <= 2 and _is_title(lines[j][1]) and (not out or lines[j][0] > out[-1][0]):
            first, title = lines[j][0], title or lines[j][1]
            j -= 1
        out.append((first, _label(line, key, title)))
    return out


def _split(
    start: int, end: int, heads: Sequence[tuple[int, str]], base: str | None, carry: str | None
) -> list[Section]:
    """Sections over text[start:end] cut at the headings inside it; text before the first one keeps ``carry``
    (the article running on from the page before) or stays as it was (``base``)."""
    inside = [(s, p) for s, p in heads if start <= s < end]
    out: list[Section] = []
    lead = carry or base
    if lead and (not inside or inside[0][0] > start):
        out.append(Section(start, inside[0][0] if inside else end, _join(base, carry) if carry else lead))
    for n, (s, path) in enumerate(inside):
        stop = inside[n + 1][0] if n + 1 < len(inside) else end
        out.append(Section(s, stop, _join(base, path)))
    return out


def _join(base: str | None, path: str) -> str:
    return path if not base or base == path else f"{base} › {path}"


def article_sections(pages: Sequence[Page]) -> list[Page]:
    """Pages whose article and section headings have become sections.

    A page without sections gets one section per heading, from the heading (and its title line) to the next; an
    article that runs on over a page break keeps its section on the next page. A page with sections already
    (Markdown, HTML, DOCX headings) gets article headings inside a section as sub-sections ("Birinci Bölüm ›
    Madde 3"); numbered lines ("4.2 Results") count as headings only on pages without heading markup.
    Pages without article headings come back unchanged.
    """
    out: list[Page] = []
    carry: str | None = None
    for page in pages:
        heads = _headings(page.text, numbered=not page.sections)
        if not heads and (page.sections or carry is None):
            out.append(page)
            continue
        if page.sections:
            sections = [x for s in page.sections for x in _split(s.start, s.end, heads, s.path, None)]
        else:
            sections = _split(0, len(page.text), heads, None, carry)
            carry = sections[-1].path if sections else carry
        out.append(Page(page.number, page.text, [s for s in sections if s.end > s.start]))
    return out
