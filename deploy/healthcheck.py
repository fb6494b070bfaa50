"""Container health probe: exits 0 when the web app answers GET /healthz with 200, 1 otherwise.

Run inside the image (the Dockerfile's HEALTHCHECK does): `python /opt/sizing/healthcheck.py`.
It reads the port from SIZING_PORT (default 7860, the Settings default) and needs only
the standard library, so the slim image carries no curl.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

# Docker kills a HEALTHCHECK that outlives its --timeout; answering first keeps the reason readable.
PROBE_TIMEOUT_SECONDS = 4.0


def probe(port: str) -> str | None:
    """Return None when /healthz answers 200, else one line saying what went wrong."""
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_SECONDS) as response:
            if response.status == 200:
                return None
            return f"{url} answered HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"{url} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{url} unreachable: {reason}"


def main() -> int:
    problem = probe(os.environ.get("SIZING_PORT", "7860"))
    if problem is None:
        return 0
    print(f"unhealthy: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
