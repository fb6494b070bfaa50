"""The one settings object. Built once in `main()` and passed down.

Every field reads from the environment with the `SIZING_` prefix (for example
`SIZING_LLM_BASE_URL`). Tests construct `Settings(...)` directly.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    return Path(user_data_dir("sizing-assistant", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SIZING_", frozen=True, extra="ignore")

    # Storage and retrieval
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Folder for the embedded Chroma index and other local state.",
    )
    chroma_url: str | None = Field(
        default=None,
        description="URL of a Chroma server (http://host:8000). Unset: embedded Chroma on disk under data_dir.",
    )
    collection: str = Field(default="sizing-articles", description="Chroma collection name for the articles.")
    articles_dir: Path | None = Field(
        default=None,
        description="Folder of Markdown articles to ingest. Unset: the articles shipped in knowledge/articles.",
    )
    embeddings_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible embeddings endpoint. Unset: the bundled offline multilingual model.",
    )
    embeddings_model: str = Field(
        default="text-embedding-3-small",
        description="Embedding model name sent to the endpoint in embeddings_base_url.",
    )
    embeddings_api_key: SecretStr | None = Field(
        default=None, description="API key for the embeddings endpoint, if it needs one."
    )

    # LLM
    llm_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, LM Studio). Unset: offline mode.",
    )
    llm_model: str | None = Field(default=None, description="Model name sent to the chat endpoint.")
    llm_api_key: SecretStr | None = Field(
        default=None, description="API key for the chat endpoint, if it needs one."
    )
    llm_timeout: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds one LLM answer may take in all (wall clock, whatever the endpoint sends); "
            "then the offline answer is used."
        ),
    )
    llm_max_steps: int = Field(
        default=6,
        ge=1,
        le=50,
        description="Most model calls in one agent run (stops endless tool-call loops).",
    )
    llm_temperature: float = Field(
        default=0.0, ge=0, le=2, description="Sampling temperature for the chat model."
    )
    llm_max_tokens: int = Field(
        default=512,
        ge=16,
        le=32768,
        description="Most tokens the model may write in one call (sent as max_tokens).",
    )
    llm_context_tokens: int = Field(
        default=8192,
        ge=1024,
        description=(
            "Context window the chat endpoint serves the model with. The prompt is kept within it "
            "minus llm_max_tokens (fewer article passages, then fewer history turns), never cut by the server."
        ),
    )
    llm_max_response_bytes: int = Field(
        default=2_000_000,
        ge=10_000,
        description="Largest HTTP response one model call may send; a larger one is cut and answered offline.",
    )

    # Web app
    host: str = Field(default="127.0.0.1", description="Address the web app binds to.")
    port: int = Field(default=7860, ge=1, le=65535, description="Port of the web app.")
    max_input_chars: int = Field(
        default=4000, ge=100, description="Longer visitor messages are truncated with a notice."
    )
    rate_limit_per_minute: int = Field(
        default=30, ge=1, description="Most chat messages one visitor session may send per minute."
    )
    concurrency_limit: int = Field(
        default=8, ge=1, description="Chat events the web app processes at once (the rest wait in the queue)."
    )
    log_level: str = Field(default="INFO", description="Python logging level (DEBUG, INFO, WARNING, ERROR).")
    compare_tab: bool | None = Field(
        default=None,
        description=(
            "Show the web app's Compare tab, whose form makes this server send requests to any URL a visitor "
            "types. Unset: on only when the app binds a loopback host (127.0.0.1, ::1, localhost)."
        ),
    )

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def compare_tab_enabled(self) -> bool:
        """An explicit compare_tab wins; unset, only a loopback-bound app (no outside visitors) has it,
        since on a public site the tab would let anyone make the server request any URL."""
        if self.compare_tab is not None:
            return self.compare_tab
        host = self.host.strip().strip("[]").lower()
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"
