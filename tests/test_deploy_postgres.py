"""The desk database in deploy/: compose and Kubernetes give the app a PostgreSQL it can reach."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from assistant.desk.store import normalise_url

K8S = Path(__file__).resolve().parents[1] / "deploy" / "k8s"
COMPOSE = Path(__file__).resolve().parents[1] / "deploy" / "compose.yaml"


def k8s(kind: str, name: str) -> dict[str, Any]:
    for path in K8S.glob("*.yaml"):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document and document.get("kind") == kind and document["metadata"]["name"] == name:
                return dict(document)
    raise AssertionError(f"no {kind}/{name} in deploy/k8s")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item for item in container.get("env", [])}


def test_compose_app_reaches_the_postgres_service_with_its_credentials() -> None:
    services = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]
    postgres = services["postgres"]["environment"]
    url = urlsplit(normalise_url(services["app"]["environment"]["SIZING_DATABASE_URL"]))
    assert url.scheme == "postgresql+psycopg" and url.hostname == "postgres" and url.port == 5432
    assert url.username == postgres["POSTGRES_USER"] and url.path == f"/{postgres['POSTGRES_DB']}"
    assert url.password == postgres["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:-sizing}"
    assert services["postgres"]["image"].split(":")[1][0].isdigit()  # pinned
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]


def test_kubernetes_app_reaches_the_postgres_service_through_the_shared_secret() -> None:
    app = k8s("Deployment", "sizing-app")["spec"]["template"]["spec"]["containers"][0]
    database = k8s("StatefulSet", "sizing-postgres")["spec"]["template"]["spec"]["containers"][0]
    service = k8s("Service", "sizing-postgres")
    app_env, db_env = env_of(app), env_of(database)
    url = urlsplit(app_env["SIZING_DATABASE_URL"]["value"])
    assert url.hostname == service["metadata"]["name"] and url.port == service["spec"]["ports"][0]["port"]
    assert (
        url.username == db_env["POSTGRES_USER"]["value"] and url.path == f"/{db_env['POSTGRES_DB']['value']}"
    )
    # $(POSTGRES_PASSWORD) is expanded by Kubernetes from the env var defined before it.
    assert url.password == "$(POSTGRES_PASSWORD)"
    names = list(app_env)
    assert names.index("POSTGRES_PASSWORD") < names.index("SIZING_DATABASE_URL")
    assert (
        app_env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
        == db_env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
    )


def test_only_app_pods_reach_postgres() -> None:
    policy = k8s("NetworkPolicy", "sizing-postgres-from-app")["spec"]
    assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "sizing-postgres"
    [rule] = policy["ingress"]
    assert rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "sizing-app"
    assert rule["ports"] == [{"port": 5432}]
