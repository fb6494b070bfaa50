"""The article format: Markdown files with YAML front matter, cut into one chunk per `## ` section.

An article lives at `<articles_dir>/<lang>/<slug>.md`:

    ---
    title: How much VRAM does a model need?
    lang: en
    slug: vram-arithmetic
    translation_of: aritmetica-vram
    ---
    Optional lead paragraph (indexed as a section named after the title).

    ## First section
    ...

Translations keep the same sections in the same order, so section N of one language is paired
with section N of the other; retrieval uses the pairing to answer across languages.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from knowledge.errors import ArticleFormatError
from tools.i18n import LANGUAGES

REQUIRED_FIELDS = ("title", "lang", "slug")
# Optional front matter `kind`: "glossary" marks short definitions, which search prefers for questions
# such as "what is a KV cache?" (knowledge.ranking.DEFINITION_BOOST). Everything else is an "article".
KINDS = ("article", "glossary")
# Part of every content hash: bump it when what gets embedded for a section changes shape, so existing
# indexes re-embed their sections instead of keeping vectors of the old texts.
RECORD_FORMAT = "2"
_SECTION_HEADING = re.compile(r"^##\s+(?P<heading>.+?)\s*#*\s*$")
_FENCE = re.compile(r"^(```|~~~)")


@dataclass(frozen=True)
class Section:
    heading: str
    body: str
    position: (
        int  # 0-based order within the article; the translation's section at the same position is its twin
    )


@dataclass(frozen=True)
class Article:
    path: str  # relative to the articles folder, POSIX separators: "en/vram-arithmetic.md"
    title: str
    lang: str
    slug: str
    translation_of: str | None
    sections: tuple[Section, ...]
    kind: str = "article"

    @property
    def pair_name(self) -> str:
        """Shared by an article and its translation: the two slugs, sorted."""
        if not self.translation_of:
            return self.slug
        return "|".join(sorted((self.slug, self.translation_of)))


# What every chunk carries over from its article unchanged.
FROM_ARTICLE = ("title", "lang", "path", "slug", "kind")


@dataclass(frozen=True)
class Chunk:
    """One section, ready for the index."""

    id: str  # "<path>#<section anchor>": stable while the file and the heading stay
    text: str  # the section body as written
    title: str
    section: str
    lang: str
    path: str
    slug: str
    position: int
    pair_key: str  # equal for a section and its translation's twin; unique when there is no twin
    content_hash: str  # changes whenever what gets embedded or stored with it changes
    kind: str = "article"

    @property
    def embedding_text(self) -> str:
        """What the embedder sees for the full-text record: the heading gives a short section its context.

        The title is left out: the section's heading record (`heading_text`) carries it, and repeating
        it in every section cost 8 % of the tokens embedded at ingest without improving recall (measured
        on four golden sets with the variants of `benchmarks/retrieval.py`).
        """
        return f"{self.section}\n{self.text}"

    @property
    def heading_text(self) -> str:
        """The article title and section heading alone: a second, short view of what the section is about."""
        return f"{self.title} — {self.section}"

    def metadata(self) -> dict[str, str | int]:
        return {
            "title": self.title,
            "section": self.section,
            "lang": self.lang,
            "path": self.path,
            "slug": self.slug,
            "position": self.position,
            "pair_key": self.pair_key,
            "content_hash": self.content_hash,
            "kind": self.kind,
        }


def parse_article(file: Path, articles_dir: Path) -> Article:
    """Read one article; raise ArticleFormatError naming the file when it breaks the format."""
    relative = file.relative_to(articles_dir).as_posix()
    try:
        raw = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ArticleFormatError(relative, "not UTF-8 text") from None
    except OSError as exc:
        raise ArticleFormatError(relative, f"cannot be read ({exc.strerror or exc})") from None
    front, body = _split_front_matter(raw, relative)
    fields: dict[str, str] = {}
    for field in REQUIRED_FIELDS:
        value = front.get(field)
        if not isinstance(value, str) or not value.strip():
            raise ArticleFormatError(relative, f"front matter lacks '{field}'")
        fields[field] = value.strip()
    lang = fields["lang"]
    if lang not in LANGUAGES:
        raise ArticleFormatError(relative, f"lang {lang!r} is not one of {', '.join(LANGUAGES)}")
    folder = Path(relative).parts[0] if len(Path(relative).parts) > 1 else None
    if folder in LANGUAGES and folder != lang:
        raise ArticleFormatError(relative, f"lang {lang!r} does not match its folder '{folder}/'")
    translation_of = front.get("translation_of")
    if translation_of is not None and not isinstance(translation_of, str):
        raise ArticleFormatError(relative, "'translation_of' must be a slug (text)")
    kind = front.get("kind", "article")
    if kind not in KINDS:
        raise ArticleFormatError(relative, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    title = fields["title"]
    sections = _split_sections(body, title)
    if not sections:
        raise ArticleFormatError(relative, "has no text")
    return Article(
        path=relative,
        title=title,
        lang=lang,
        slug=fields["slug"],
        translation_of=translation_of.strip() if translation_of else None,
        sections=tuple(sections),
        kind=kind,
    )


def load_articles(articles_dir: Path) -> tuple[list[Article], list[ArticleFormatError]]:
    """Every `*.md` under the folder, sorted by path; malformed files come back as errors, not articles."""
    articles: list[Article] = []
    problems: list[ArticleFormatError] = []
    for file in sorted(articles_dir.rglob("*.md")):
        try:
            articles.append(parse_article(file, articles_dir))
        except ArticleFormatError as exc:
            problems.append(exc)
    slugs: dict[tuple[str, str], str] = {}
    unique: list[Article] = []
    for article in articles:
        key = (article.lang, article.slug)
        if key in slugs:
            problems.append(
                ArticleFormatError(article.path, f"slug {article.slug!r} already used by {slugs[key]}")
            )
            continue
        slugs[key] = article.path
        unique.append(article)
    return unique, problems


def chunk_articles(articles: list[Article], embedder_id: str) -> tuple[list[Chunk], list[str]]:
    """One chunk per section; returns the chunks and warnings about translations that cannot be paired."""
    by_slug = {(a.lang, a.slug): a for a in articles}
    warnings: list[str] = []
    chunks: list[Chunk] = []
    for article in articles:
        twin = _find_translation(article, by_slug)
        paired = twin is not None and len(twin.sections) == len(article.sections)
        if twin is not None and not paired and article.lang == "en":
            warnings.append(
                f"{article.path} and {twin.path} have {len(article.sections)} and {len(twin.sections)} "
                "sections; keep translations section for section so answers pair across languages"
            )
        anchors: set[str] = set()
        for section in article.sections:
            anchor = _unique_anchor(_anchor(section.heading), anchors)
            pair_key = f"{article.pair_name}#{section.position}" if paired else f"{article.path}#{anchor}"
            digest = hashlib.sha256(
                "\x1f".join(
                    (
                        RECORD_FORMAT,
                        embedder_id,
                        article.title,
                        section.heading,
                        section.body,
                        pair_key,
                        article.kind,
                    )
                ).encode()
            ).hexdigest()[:16]
            chunks.append(
                Chunk(
                    id=f"{article.path}#{anchor}",
                    text=section.body,
                    section=section.heading,
                    position=section.position,
                    pair_key=pair_key,
                    content_hash=digest,
                    **{name: getattr(article, name) for name in FROM_ARTICLE},
                )
            )
    return chunks, warnings


def _find_translation(article: Article, by_slug: dict[tuple[str, str], Article]) -> Article | None:
    if not article.translation_of:
        return None
    for lang in LANGUAGES:
        if lang == article.lang:
            continue
        twin = by_slug.get((lang, article.translation_of))
        if twin is not None:
            return twin
    return None


def _split_front_matter(raw: str, relative: str) -> tuple[dict[str, object], str]:
    text = raw.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ArticleFormatError(relative, "does not start with front matter (a '---' line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ArticleFormatError(relative, "front matter is not closed by a '---' line") from None
    try:
        front = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ArticleFormatError(relative, f"front matter is not valid YAML ({first})") from None
    if not isinstance(front, dict):
        raise ArticleFormatError(relative, "front matter is not a set of 'key: value' lines")
    return front, "\n".join(lines[end + 1 :])


def _split_sections(body: str, title: str) -> list[Section]:
    """Cut at `## ` headings outside code fences; text before the first heading is a lead section."""
    parts: list[tuple[str, list[str]]] = [(title, [])]
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
        match = None if in_fence else _SECTION_HEADING.match(line)
        if match:
            parts.append((match.group("heading").strip(), []))
        else:
            parts[-1][1].append(line)
    sections: list[Section] = []
    for heading, lines in parts:
        text = "\n".join(lines).strip()
        if text:
            sections.append(Section(heading=heading, body=text, position=len(sections)))
    return sections


def _anchor(heading: str) -> str:
    lowered = heading.lower()
    return re.sub(r"[^\w]+", "-", lowered).strip("-") or "section"


def _unique_anchor(anchor: str, seen: set[str]) -> str:
    candidate, n = anchor, 2
    while candidate in seen:
        candidate, n = f"{anchor}-{n}", n + 1
    seen.add(candidate)
    return candidate
