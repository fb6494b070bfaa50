"""The knowledge base: sizing articles (Markdown, es/en), their ingestion into Chroma, and retrieval.

`from knowledge import open_store` is cheap: Chroma and the embedding model load on first use.
"""

from knowledge.article_search import ArticleSearch
from knowledge.passages import IngestReport, Passage
from knowledge.store import ArticleStore, open_store

__all__ = ["ArticleSearch", "ArticleStore", "IngestReport", "Passage", "open_store"]
