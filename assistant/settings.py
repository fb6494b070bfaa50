"""The one settings object. Built once in `main()` and passed down.

Every field reads from the environment with the `SIZING_` prefix (for example
`SIZING_LLM_BASE_URL`). Tests construct `Settings(...)` directly.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from platformdirs import user_data_dir
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    return Path(user_data_dir("sizing-assistant", appauthor=False))


IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_trusted_proxies(text: str) -> tuple[IpNetwork, ...]:
    """Comma-separated addresses or networks ("10.0.0.1, 172.16.0.0/12"); ValueError names a bad one."""
    networks = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"trusted proxy {item!r} is not an IP address or network (such as 10.0.0.1 or 10.0.0.0/8)"
            ) from None
    return tuple(networks)


def _loopback_switch(shows: str) -> Any:
    """A web-app part no outside visitor should reach by default: on or off as set; unset, on only
    where the app binds a loopback host."""
    return Field(
        default=None,
        description=f"{shows} Unset: on only when the app binds a loopback host (127.0.0.1, ::1, localhost); "
        "set true for a staff deployment.",
    )


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
    client_rate_limit_per_minute: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most chat messages one client address may send per minute, however many sessions it opens. "
            "Unset: the same as rate_limit_per_minute. Raise it where many visitors share one address."
        ),
    )
    trusted_proxies: str = Field(
        default="",
        description=(
            "Comma-separated addresses or networks of reverse proxies whose X-Forwarded-For header names the "
            "client (such as 127.0.0.1 or 10.0.0.0/8). Unset: forwarded headers are ignored."
        ),
    )
    session_idle_timeout_s: float = Field(
        default=3600.0, gt=0, description="Seconds after its last event that a visitor session is forgotten."
    )
    max_sessions: int = Field(
        default=1000,
        ge=1,
        description="Most visitor sessions kept in memory; past it the least recently used is forgotten.",
    )
    concurrency_limit: int = Field(
        default=8, ge=1, description="Chat events the web app processes at once (the rest wait in the queue)."
    )
    # WARNING by default: a terminal user's first `ask` should not print the index-build progress.
    log_level: str = Field(
        default="WARNING", description="Python logging level (DEBUG, INFO, WARNING, ERROR)."
    )
    hf_lookups: bool = Field(
        default=False,
        description=(
            "Look models up on the Hugging Face Hub by id (config.json, safetensors headers), cached under "
            "data_dir/hub. Off: catalog ids, aliases and bare sizes only."
        ),
    )
    hf_endpoint: str = Field(
        default="https://huggingface.co",
        description="Hugging Face Hub (or mirror) the lookups use; same meaning as HF_ENDPOINT.",
    )
    hf_token: SecretStr | None = Field(default=None, description="Hugging Face token for gated repos.")
    compare_tab: bool | None = _loopback_switch(
        "Show the web app's Compare tab, whose form makes this server send requests to any URL a visitor types."
    )
    sales_draft_panel: bool | None = _loopback_switch(
        "Show the Sales draft panel beside the web chat (a staff tool: it drafts replies to customers' e-mails)."
    )

    # Sales desk: leads, feedback and the question log (assistant/desk), drafts and quotes
    database_url: str | None = Field(
        default=None,
        description=(
            "SQLAlchemy URL of the desk database (postgresql+psycopg://user:pass@host/db for several "
            "replicas). Unset: SQLite in data_dir/desk.sqlite3."
        ),
    )
    retention_days: int = Field(
        default=365,
        ge=1,
        description="Days leads, feedback and logged questions are kept; older rows are deleted.",
    )
    question_log: bool = Field(
        default=True, description="Record each chat question and its outcome for `sizing report`."
    )
    company_name: str = Field(default="", description="Company name in the sales draft's signature.")
    salesperson_name: str = Field(default="", description="Salesperson's name in the draft's signature.")
    salesperson_contact: str = Field(
        default="", description="Contact line (e-mail, phone) in the draft's signature."
    )
    prices_file: Path | None = Field(
        default=None,
        description="YAML price list of server configurations for quotes. Unset: quotes carry no prices.",
    )
    quote_utilization: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Share of the month a quoted server is generating, for the cost per million tokens.",
    )
    notify_webhook_url: str | None = Field(
        default=None, description="URL that gets a JSON POST for every new lead (handoff)."
    )
    smtp_host: str | None = Field(default=None, description="SMTP server that e-mails new leads.")
    smtp_port: int = Field(default=25, ge=1, le=65535, description="Port of the SMTP server.")
    notify_email_from: str | None = Field(default=None, description="Sender address of lead e-mails.")
    notify_email_to: str | None = Field(default=None, description="Sales-team address lead e-mails go to.")
    admin_token: SecretStr | None = Field(
        default=None,
        description="Token that opens the web app's Admin tab (leads, report). Unset: no Admin tab.",
    )

    browser_state_secret: SecretStr | None = Field(
        default=None,
        description=(
            "Key that encrypts the conversation each browser keeps (so a reload continues it). Set the same "
            "value on every replica; unset: a random key per process, so a restart starts visitors afresh."
        ),
    )

    # Embeddable widget (/widget)
    widget_allowed_origins: str = Field(
        default="",
        description=(
            "Space- or comma-separated origins (https://www.example.com) whose pages may embed /widget: "
            "sent as Content-Security-Policy frame-ancestors and used for CORS. Empty: only this app's own pages."
        ),
    )
    widget_title: str = Field(
        default="Sizing Assistant", max_length=80, description="Title shown at the top of the widget."
    )
    widget_greeting: str | None = Field(
        default=None,
        max_length=500,
        description="Greeting shown in the empty widget chat. Unset: a greeting in the visitor's language.",
    )
    widget_primary_color: str = Field(
        default="#1d4ed8",
        pattern=r"^#[0-9a-fA-F]{6}$",
        description="The widget's accent colour (#rrggbb) for buttons and links; the text on it is chosen for contrast.",
    )
    widget_logo_url: str | None = Field(
        default=None,
        description="Logo shown beside the widget title: an https:// URL or a path on this app ('/static/logo.png').",
    )

    @field_validator("widget_allowed_origins")
    @classmethod
    def _origins_are_origins(cls, value: str) -> str:
        for origin in value.replace(",", " ").split():
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
                raise ValueError(
                    f"{origin!r} is not an origin; write scheme and host, e.g. https://www.example.com"
                )
        return value

    @field_validator("widget_logo_url")
    @classmethod
    def _logo_is_a_url(cls, value: str | None) -> str | None:
        if value is None or (value.startswith("/") and not value.startswith("//")):
            return value
        if urlsplit(value).scheme != "https":
            raise ValueError(f"{value!r} must be an https:// URL or a path starting with '/'")
        return value

    @property
    def widget_origins(self) -> list[str]:
        """The allowed embedding origins, without a trailing slash."""
        return [origin.rstrip("/") for origin in self.widget_allowed_origins.replace(",", " ").split()]

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_parse(cls, value: str) -> str:
        parse_trusted_proxies(value)
        return value

    @property
    def trusted_proxy_networks(self) -> tuple[IpNetwork, ...]:
        return parse_trusted_proxies(self.trusted_proxies)

    @property
    def client_rate_limit(self) -> int:
        return self.client_rate_limit_per_minute or self.rate_limit_per_minute

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def compare_tab_enabled(self) -> bool:
        """An explicit compare_tab wins; unset, only a loopback-bound app (no outside visitors) has it,
        since on a public site the tab would let anyone make the server request any URL."""
        return self.binds_loopback if self.compare_tab is None else self.compare_tab

    @property
    def sales_draft_panel_enabled(self) -> bool:
        """An explicit sales_draft_panel wins; unset, only a loopback-bound app (staff on their own
        machine) shows it: public visitors have no use for a tool that drafts replies to customers."""
        return self.binds_loopback if self.sales_draft_panel is None else self.sales_draft_panel

    @property
    def binds_loopback(self) -> bool:
        """Whether the app listens only on this machine (127.0.0.1, ::1, localhost)."""
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

    @property
    def desk_database_url(self) -> str:
        """database_url, or the SQLite file in the data folder."""
        return self.database_url or f"sqlite:///{self.data_dir / 'desk.sqlite3'}"
