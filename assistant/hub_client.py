"""The Hugging Face Hub adapter behind `tools.hub.HubLookup` (huggingface_hub, imported lazily).

For a repo id it reads config.json (with its quantization_config) and the safetensors headers
(element counts per dtype, through the index and each shard's first bytes, never the weights),
and keeps the answer as one JSON file per repo under `$SIZING_DATA_DIR/hub`, so a repo looked up
once is sized offline from then on. SIZING_HF_ENDPOINT points it at any Hub-compatible server
(same meaning as HF_ENDPOINT), SIZING_HF_TOKEN opens gated repos, SIZING_HF_LOOKUPS turns it on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.hub import HubFiles, HubLookupError, looks_like_hub_id

if TYPE_CHECKING:
    from assistant.settings import Settings

# Seconds for one request: a stalled Hub must not stall a chat answer.
HUB_TIMEOUT = 10.0


class HuggingFaceHub:
    def __init__(
        self, endpoint: str, token: str | None, cache_dir: Path, timeout: float = HUB_TIMEOUT
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.cache_dir = cache_dir
        self.timeout = timeout

    def model_files(self, repo_id: str) -> HubFiles:
        repo_id = repo_id.strip()
        if not looks_like_hub_id(repo_id):
            raise HubLookupError(repo_id, "not a Hub id of the form owner/name")
        cached = self._read_cache(repo_id)
        if cached is not None:
            return cached
        files = self._fetch(repo_id)
        self._write_cache(files)
        return files

    def _cache_path(self, repo_id: str) -> Path:
        host = self.endpoint.split("://", 1)[-1].replace("/", "_").replace(":", "_")
        return self.cache_dir / host / (repo_id.replace("/", "--") + ".json")

    def _read_cache(self, repo_id: str) -> HubFiles | None:
        path = self._cache_path(repo_id)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return HubFiles(repo_id, dict(raw["config"]), dict(raw["dtype_counts"]), raw.get("quantization"))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or damaged: fetch again

    def _write_cache(self, files: HubFiles) -> None:
        path = self._cache_path(files.repo_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "config": files.config,
            "dtype_counts": files.dtype_counts,
            "quantization": files.quantization,
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        tmp.replace(path)

    def _fetch(self, repo_id: str) -> HubFiles:
        from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            NotASafetensorsRepoError,
            RepositoryNotFoundError,
            SafetensorsParsingError,
        )

        try:
            # One HEAD without retries first: an unreachable Hub answers in one timeout, not five.
            get_hf_file_metadata(
                hf_hub_url(repo_id, "config.json", endpoint=self.endpoint),
                token=self.token or False,
                timeout=self.timeout,
                retry_on_errors=False,
            )
            path = hf_hub_download(
                repo_id,
                "config.json",
                endpoint=self.endpoint,
                token=self.token or False,
                cache_dir=self.cache_dir / "files",
                etag_timeout=self.timeout,
            )
            config = _read_json(Path(path), repo_id)
            counts: dict[str, int] = {}
            try:
                api = HfApi(endpoint=self.endpoint, token=self.token or False)
                meta = api.get_safetensors_metadata(repo_id, timeout=self.timeout)
                counts = {str(k): int(v) for k, v in meta.parameter_count.items()}
            except (NotASafetensorsRepoError, SafetensorsParsingError):
                counts = {}
        except GatedRepoError:
            raise HubLookupError(
                repo_id, "is gated: set SIZING_HF_TOKEN to a token that has access"
            ) from None
        except RepositoryNotFoundError:
            raise HubLookupError(repo_id, "was not found (or is private)") from None
        except LocalEntryNotFoundError:
            raise HubLookupError(repo_id, "could not be reached and is not cached") from None
        except EntryNotFoundError:
            raise HubLookupError(repo_id, "has no config.json") from None
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else "?"
            raise HubLookupError(repo_id, f"the Hub answered HTTP {status}") from None
        except Exception as exc:  # the HTTP client's transport errors: no network, refused, timeouts
            raise HubLookupError(
                repo_id, f"could not be reached ({type(exc).__name__}) and is not cached"
            ) from None
        quantization = config.get("quantization_config")
        return HubFiles(repo_id, config, counts, quantization if isinstance(quantization, dict) else None)


def _read_json(path: Path, repo_id: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise HubLookupError(repo_id, "config.json is not valid JSON") from None
    if not isinstance(data, dict):
        raise HubLookupError(repo_id, "config.json is not a JSON object")
    return data


def hub_from_settings(settings: Settings) -> HuggingFaceHub | None:
    """The Hub client the settings ask for, or None when lookups are off."""
    if not settings.hf_lookups:
        return None
    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    return HuggingFaceHub(settings.hf_endpoint, token, settings.data_dir / "hub")


__all__ = ["HUB_TIMEOUT", "HuggingFaceHub", "hub_from_settings"]
