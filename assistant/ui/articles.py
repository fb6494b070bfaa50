"""The articles the answers cite, served read-only at `/articles/<lang>/<slug>#<section>`.

`ArticleLibrary.from_settings(settings)` reads the article folder once (the one the index is
built from); `link(source, lang)` is the URL of a cited section in the visitor's language (the
translation's twin section when the source is in the other language); `page_html(lang, slug)` is
the article as a standalone HTML page. Markdown is rendered with raw HTML switched off, so an
article cannot inject markup or scripts into the page.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from assistant.ui.catalogue import phrase
from assistant.ui.texts import Lang
from knowledge.article_format import Article, chunk_articles, load_articles

if TYPE_CHECKING:
    from assistant.schemas import Source
    from assistant.settings import Settings

log = logging.getLogger(__name__)

ROUTE = "/articles"
# Chunk ids are "<path>#<anchor>"; the embedder id is irrelevant to the anchors.
_ANCHORS_ONLY = "anchors"

PAGE_CSS = """
body { font: 17px/1.6 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2937; background: #fff;
       max-width: 46rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.25; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; scroll-margin-top: 1rem; }
section { scroll-margin-top: 1rem; }
section:target { border-left: 4px solid #b45309; padding-left: 0.9rem; margin-left: -1.1rem; }
a { color: #1d4ed8; }
code { background: #f3f4f6; padding: 0 0.25em; border-radius: 4px; }
pre { background: #f3f4f6; padding: 0.75rem; overflow-x: auto; }
.table-scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 1rem 0; }
td, th { border: 1px solid #d1d5db; padding: 0.35rem 0.6rem; text-align: left; }
.note { color: #4b5563; font-size: 0.9rem; }
nav .back { display: inline-block; padding: 0.4rem 0; font-weight: 600; text-decoration: none; }
nav .back:hover { text-decoration: underline; }
"""


@dataclass(frozen=True)
class ArticleEntry:
    article: Article
    anchors: tuple[str, ...]  # one per section, in order (the ids of the page's <section>s)


class ArticleLibrary:
    """The parsed articles by (language, slug), with the anchors of their sections."""

    def __init__(self, articles: list[Article]) -> None:
        chunks, _ = chunk_articles(articles, _ANCHORS_ONLY)
        anchors: dict[str, list[str]] = {}
        for chunk in chunks:
            anchors.setdefault(chunk.path, []).append(chunk.id.partition("#")[2])
        self._entries = {
            (article.lang, article.slug): ArticleEntry(article, tuple(anchors.get(article.path, ())))
            for article in articles
        }
        self._by_path = {entry.article.path: entry for entry in self._entries.values()}
        self._markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

    @classmethod
    def from_folder(cls, folder: Path) -> ArticleLibrary:
        articles, problems = load_articles(folder) if folder.is_dir() else ([], [])
        for problem in problems:
            log.warning("article not served: %s", problem)
        return cls(articles)

    @classmethod
    def from_settings(cls, settings: Settings) -> ArticleLibrary:
        from knowledge.store import SHIPPED_ARTICLES

        return cls.from_folder(Path(settings.articles_dir) if settings.articles_dir else SHIPPED_ARTICLES)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, lang: str, slug: str) -> ArticleEntry | None:
        return self._entries.get((lang, slug))

    def translation(self, entry: ArticleEntry) -> ArticleEntry | None:
        """The same article in the other language, when it exists."""
        article = entry.article
        for (lang, slug), other in self._entries.items():
            if lang == article.lang:
                continue
            if slug == article.translation_of or other.article.translation_of == article.slug:
                return other
        return None

    def link(self, source: Source, lang: Lang) -> str | None:
        """`/articles/<lang>/<slug>#<anchor>` for a cited section, in `lang` when a translation exists."""
        entry = self._by_path.get(source.path)
        if entry is None:
            return None
        position = next(
            (s.position for s in entry.article.sections if s.heading == source.section),
            0,
        )
        if entry.article.lang != lang:
            twin = self.translation(entry)
            # Translations keep their sections in the same order (knowledge/article_format.py).
            if twin is not None and len(twin.anchors) == len(entry.anchors):
                entry = twin
        anchor = entry.anchors[position] if position < len(entry.anchors) else ""
        url = f"{ROUTE}/{entry.article.lang}/{entry.article.slug}"
        return f"{url}#{anchor}" if anchor else url

    def page_html(self, lang: str, slug: str) -> str | None:
        """The whole article as an HTML page, each section an element whose id is its anchor."""
        entry = self.get(lang, slug)
        if entry is None:
            return None
        article = entry.article
        page_lang: Lang = "es" if article.lang == "es" else "en"
        title = f"<h1>{html.escape(article.title)}</h1>"
        body: list[str] = []
        for section, anchor in zip(article.sections, entry.anchors, strict=False):
            rendered = self._render(section.body)
            # The lead (the text before the first "## ") is a section named after the title.
            heading = (
                title if section.heading == article.title else f"<h2>{html.escape(section.heading)}</h2>"
            )
            body.append(f'<section id="{html.escape(anchor)}">{heading}{rendered}</section>')
        if not body or not body[0].startswith(f'<section id="{html.escape(entry.anchors[0])}"><h1>'):
            body.insert(0, title)
        twin = self.translation(entry)
        other = (
            f'<p class="note"><a href="{ROUTE}/{twin.article.lang}/{twin.article.slug}" '
            f'lang="{twin.article.lang}">{html.escape(phrase("article_other_language", page_lang))}</a></p>'
            if twin is not None
            else ""
        )
        note = html.escape(phrase("article_read_only", page_lang))
        # Relative, so the link still reaches the chat when the app is served under a path prefix.
        back = f'<nav><a href="../../" class="back">{html.escape(phrase("article_back_to_chat", page_lang))}</a></nav>'
        return (
            f'<!doctype html><html lang="{page_lang}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(article.title)}</title><style>{PAGE_CSS}</style></head>"
            f'<body>{back}<main><p class="note">{note}</p>{other}{"".join(body)}</main></body></html>'
        )

    def _render(self, markdown: str) -> str:
        rendered = self._markdown.render(markdown)
        return rendered.replace("<table>", '<div class="table-scroll"><table>').replace(
            "</table>", "</table></div>"
        )
