"""What the knowledge base hands back: retrieved passages and ingestion reports."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Passage(BaseModel):
    """One article section retrieved for a query, best first in a result list."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(description="The section body, as written in the article.")
    title: str = Field(description="Title of the article the section belongs to.")
    path: str = Field(
        description="Article file relative to the articles folder, e.g. 'en/vram-arithmetic.md'."
    )
    section: str = Field(description="The section heading (the `## ` line without the hashes).")
    lang: str = Field(description="Language of the article: 'en' or 'es'.")
    score: float = Field(description="Relevance score; higher is better. Comparable within one result list.")


class IngestReport(BaseModel):
    """Outcome of one ingestion run: `chunks` in the index afterwards and what changed to get there."""

    model_config = ConfigDict(frozen=True)

    chunks: int = Field(ge=0, description="Sections in the index after the run.")
    added: int = Field(ge=0, description="Sections that were new.")
    updated: int = Field(ge=0, description="Sections whose text or title changed.")
    removed: int = Field(ge=0, description="Sections deleted because their article or heading is gone.")
    skipped_files: list[str] = Field(
        default_factory=list, description="Malformed article files that were skipped, each with the reason."
    )
