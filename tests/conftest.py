"""Suite-wide guards and shared fixtures.

Real model requests are impossible in the default suite: every outbound
connection that is not to loopback is refused, so a test that forgets to fake the
LLM fails loudly instead of calling a paid API.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.servers import ServerDidNotStart, free_port, stop_process, wait_until_answering

if TYPE_CHECKING:
    from assistant.settings import Settings

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:  # AF_UNIX paths and the like are local by definition
        return True
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests may not reach {address!r}: only loopback is allowed")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests may not reach {address!r}: only loopback is allowed")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _only_loopback() -> Iterator[None]:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Chroma server (`chroma run`, shipped with chromadb) on a free loopback port; yields its URL.

    Owned by the knowledge tests; any test that needs a Chroma server may use it. Collections
    persist for the session, so give each test its own collection name.
    """
    import signal
    import subprocess
    import sys
    from pathlib import Path

    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.fail(f"{chroma} not found: chromadb ships the `chroma` command; reinstall the venv")
    folder = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [str(chroma), "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_answering(
                f"{url}/api/v2/heartbeat",
                server,
                timeout_s=60,
                log_path=log_path,
                what="chroma run",
                interval_s=0.2,
            )
        except ServerDidNotStart as failure:
            pytest.fail(str(failure))
        yield url
    finally:
        stop_process(server, signal.SIGTERM, timeout_s=10)


@pytest.fixture(scope="session")
def shipped_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings whose data folder holds the shipped articles' embedded index, built once per session.

    Built the way `sizing ingest` builds it with the default settings (collection, embedder, shipped
    vectors), whatever SIZING_* variables the machine running the tests has: `open_store(shipped_index)`
    and `SIZING_DATA_DIR=<shipped_index.data_dir>` find it ready. Read it in place; a test that
    ingests, edits or rebuilds works on a copy (`shutil.copytree` of the data folder).
    """
    from assistant.settings import Settings
    from knowledge import open_store

    settings = Settings(
        data_dir=tmp_path_factory.mktemp("shipped-index") / "data",
        chroma_url=None,
        articles_dir=None,
        embeddings_base_url=None,
        llm_base_url=None,
        llm_model=None,
    )
    with open_store(settings) as store:
        store.ingest()
    return settings
