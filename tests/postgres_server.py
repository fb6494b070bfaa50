"""A real PostgreSQL server for the desk tests: initdb into a temp folder, pg_ctl on a free port.

Debian's `postgresql` package provides the binaries (`.ci/run` installs it). PostgreSQL refuses
to run as root, so under root the cluster belongs to the `postgres` system user (runuser).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port

BIN_DIRS = [Path("/usr/lib/postgresql") / version / "bin" for version in ("17", "16", "15")]


def postgres_bin() -> Path | None:
    for folder in BIN_DIRS:
        if (folder / "initdb").exists():
            return folder
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def running_postgres() -> Iterator[str]:
    """Start a throwaway cluster; yields a postgresql+psycopg URL; stops and removes it after.

    The cluster lives in its own folder under the system temp dir, not under pytest's tmp_path:
    pytest keeps its base folder private to root, and the postgres user must reach the data.
    """
    binaries = postgres_bin()
    if binaries is None:
        raise RuntimeError("PostgreSQL binaries not found (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="sizing-postgres-"))
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        for path in (folder, sockets):
            shutil.chown(path, "postgres")
    subprocess.run(
        _as_owner([str(binaries / "initdb"), "-D", str(data), "-U", "desk", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    subprocess.run(
        _as_owner(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "server.log"),
                "-o",
                options,
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            [str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "desk", "desk"],
            check=True,
            capture_output=True,
        )
        yield f"postgresql+psycopg://desk@127.0.0.1:{port}/desk"
    finally:
        subprocess.run(
            _as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)
