"""Static checks of deploy/: the compose stack and the Kubernetes manifests.

They parse, validate against their published schemas (compose-spec, Kubernetes OpenAPI),
reference only settings the app knows, and agree with each other (service names, ports,
served model name, GPU count vs tensor parallelism). Run: `.venv/bin/pytest tests/test_deploy_manifests.py`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from assistant.settings import Settings
from tools import SizingRequest, calculate_vram

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
SIZING_NAME = re.compile(r"\bSIZING_[A-Z0-9_]+\b")
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?::-(?P<default>[^}]*))?\}")


# ---------------------------------------------------------------- helpers


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of a compose --env-file (comments and blanks skipped)."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    return values


def interpolate(value: Any, variables: dict[str, str]) -> Any:
    """Resolve ${NAME} and ${NAME:-default} the way `docker compose` does for plain strings."""
    if isinstance(value, dict):
        return {key: interpolate(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, variables) for item in value]
    if not isinstance(value, str):
        return value

    def resolve(match: re.Match[str]) -> str:
        found = variables.get(match["name"], "")
        return found if found else (match["default"] or "")

    return INTERPOLATION.sub(resolve, value)


def compose(env_file: str | None = None) -> dict[str, Any]:
    variables = read_env_file(DEPLOY / env_file) if env_file else {}
    document = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return dict(interpolate(document, variables))


def k8s_documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document:
                yield path, document


def k8s_object(kind: str, name: str) -> dict[str, Any]:
    for _, document in k8s_documents():
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise AssertionError(f"no {kind} named {name} in deploy/k8s")


def flag_value(args: list[str], flag: str) -> str:
    assert flag in args, f"{flag} missing from {args}"
    return str(args[args.index(flag) + 1])


def settings_from_env(environment: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Build Settings exactly as the container would: from SIZING_* environment variables only."""
    for name in list(os.environ):
        if name.startswith("SIZING_"):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        if name.startswith("SIZING_"):
            monkeypatch.setenv(name, str(value))
    return Settings()


def pod_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return list(workload["spec"]["template"]["spec"]["containers"])


# ---------------------------------------------------------------- settings names


def deploy_texts() -> Iterator[tuple[str, str]]:
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file():
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    page = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = page.partition("<!-- BEGIN:deploy -->")[2].partition("<!-- END:deploy -->")[0]
    assert section.strip(), "docs/deployment.md lost its deploy section markers"
    yield "docs/deployment.md", section


def test_every_sizing_variable_in_deploy_is_a_settings_field() -> None:
    fields = set(Settings.model_fields)
    seen: dict[str, str] = {}
    for where, text in deploy_texts():
        for name in SIZING_NAME.findall(text):
            seen.setdefault(name, where)
    unknown = {
        name: where for name, where in seen.items() if name.removeprefix("SIZING_").lower() not in fields
    }
    assert not unknown, f"SIZING_* names that assistant/settings.py does not define: {unknown}"
    # The stack configures at least the store and the model; an empty scan would prove nothing.
    assert {"SIZING_CHROMA_URL", "SIZING_LLM_BASE_URL", "SIZING_LLM_MODEL"} <= set(seen)


# ---------------------------------------------------------------- compose


def test_compose_file_matches_the_compose_specification() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_pins_every_pulled_image() -> None:
    for name, service in compose()["services"].items():
        if "build" in service:
            continue
        repository, _, tag = service["image"].rpartition(":")
        assert repository and tag and tag != "latest", f"{name}: image {service['image']!r} is not pinned"


def test_chroma_image_is_the_client_release_line() -> None:
    tag = compose()["services"]["chroma"]["image"].rpartition(":")[2]
    client = version("chromadb")
    assert tag.split(".")[:2] == client.split(".")[:2], (tag, client)
    statefulset = k8s_object("StatefulSet", "sizing-chroma")
    assert pod_containers(statefulset)[0]["image"].endswith(f":{tag}")


@pytest.mark.parametrize("env_file", [None, "vllm.env", "ollama.env"])
def test_compose_app_environment_builds_valid_settings(
    env_file: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = compose(env_file)
    settings = settings_from_env(stack["services"]["app"]["environment"], monkeypatch)
    chroma = urlsplit(settings.chroma_url or "")
    assert chroma.hostname == "chroma" and chroma.port == 8000
    assert "chroma-data:/data" in stack["services"]["chroma"]["volumes"]
    assert settings.llm_configured is (env_file is not None)


def test_vllm_profile_serves_the_model_the_app_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = compose("vllm.env")
    vllm = stack["services"]["vllm"]
    settings = settings_from_env(stack["services"]["app"]["environment"], monkeypatch)
    endpoint = urlsplit(settings.llm_base_url or "")
    assert vllm["profiles"] == ["vllm"]
    assert endpoint.hostname == "vllm"
    assert endpoint.port == int(flag_value(vllm["command"], "--port"))
    assert endpoint.path == "/v1"
    assert settings.llm_model == flag_value(vllm["command"], "--served-model-name")
    # The agent calls tools: vLLM rejects tool_choice=auto without these two.
    assert "--enable-auto-tool-choice" in vllm["command"]
    assert flag_value(vllm["command"], "--tool-call-parser") == "hermes"
    for flag in ("--max-model-len", "--gpu-memory-utilization", "--tensor-parallel-size"):
        float(flag_value(vllm["command"], flag))
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert int(flag_value(vllm["command"], "--tensor-parallel-size")) == devices[0]["count"]


def test_ollama_profile_pulls_the_model_the_app_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = compose("ollama.env")
    settings = settings_from_env(stack["services"]["app"]["environment"], monkeypatch)
    pull = stack["services"]["ollama-pull"]
    assert stack["services"]["ollama"]["profiles"] == pull["profiles"] == ["ollama"]
    assert pull["entrypoint"][-1] == settings.llm_model
    assert urlsplit(pull["environment"]["OLLAMA_HOST"]).port == urlsplit(settings.llm_base_url or "").port
    assert urlsplit(settings.llm_base_url or "").hostname == "ollama"


def test_compose_app_waits_for_the_store_but_not_for_the_model() -> None:
    services = compose()["services"]
    assert services["app"]["depends_on"] == {
        "chroma": {"condition": "service_healthy"},
        "postgres": {"condition": "service_healthy"},
        "ingest": {"condition": "service_completed_successfully"},
    }
    assert services["ingest"]["command"] == ["sizing", "ingest"]
    assert (
        services["ingest"]["environment"]["SIZING_CHROMA_URL"]
        == services["app"]["environment"]["SIZING_CHROMA_URL"]
    )


def test_compose_and_kubernetes_serve_the_same_vllm_arguments() -> None:
    compose_args = compose()["services"]["vllm"]["command"]
    k8s_args = pod_containers(k8s_object("Deployment", "sizing-vllm"))[0]["args"]
    assert compose_args == k8s_args
    assert (
        compose()["services"]["vllm"]["image"]
        == pod_containers(k8s_object("Deployment", "sizing-vllm"))[0]["image"]
    )


# ---------------------------------------------------------------- kubernetes


def test_kubernetes_manifests_match_the_api_schemas() -> None:
    import kubernetes_validate

    checked = 0
    for path, document in k8s_documents():
        try:
            kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {document['kind']}/{document['metadata']['name']}: {exc.message}")
        checked += 1
    assert checked >= 10


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    files = {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_renders_the_stack() -> None:
    result = subprocess.run(["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc)
    for kind in ("ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Service", "StatefulSet"):
        assert kind in kinds


def test_every_service_selects_a_workload_and_its_named_port() -> None:
    workloads = [doc for _, doc in k8s_documents() if doc["kind"] in ("Deployment", "StatefulSet")]
    for _, service in k8s_documents():
        if service["kind"] != "Service":
            continue
        selector = service["spec"]["selector"]
        matches = [
            workload
            for workload in workloads
            if selector.items() <= workload["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(matches) == 1, f"Service {service['metadata']['name']} selects {len(matches)} workloads"
        port_names = {port["name"] for container in pod_containers(matches[0]) for port in container["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names


def test_configmap_builds_valid_settings_pointing_at_the_services(monkeypatch: pytest.MonkeyPatch) -> None:
    data = k8s_object("ConfigMap", "sizing-settings")["data"]
    settings = settings_from_env(data, monkeypatch)
    chroma = urlsplit(settings.chroma_url or "")
    chroma_service = k8s_object("Service", "sizing-chroma")
    assert chroma.hostname == chroma_service["metadata"]["name"]
    assert chroma.port == chroma_service["spec"]["ports"][0]["port"]
    llm = urlsplit(settings.llm_base_url or "")
    vllm_service = k8s_object("Service", "sizing-vllm")
    assert llm.hostname == vllm_service["metadata"]["name"]
    assert llm.port == vllm_service["spec"]["ports"][0]["port"]
    vllm_args = pod_containers(k8s_object("Deployment", "sizing-vllm"))[0]["args"]
    assert settings.llm_model == flag_value(vllm_args, "--served-model-name")


def test_app_probes_healthz_on_the_port_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = k8s_object("Deployment", "sizing-app")
    settings = settings_from_env(k8s_object("ConfigMap", "sizing-settings")["data"], monkeypatch)
    app = pod_containers(deployment)[0]
    ports = {port["name"]: port["containerPort"] for port in app["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert app[probe]["httpGet"]["path"] == "/healthz"
        assert ports[app[probe]["httpGet"]["port"]] == settings.port
    assert app["resources"]["requests"]["cpu"], "the HPA's utilization target needs a CPU request"
    assert deployment["spec"]["replicas"] >= 2
    init = deployment["spec"]["template"]["spec"]["initContainers"][0]
    assert init["command"] == ["sizing", "ingest"] and init["image"] == app["image"]


def test_app_runs_as_the_image_user() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    user = re.findall(r"^USER\s+(\d+)", dockerfile, flags=re.MULTILINE)[-1]
    security = k8s_object("Deployment", "sizing-app")["spec"]["template"]["spec"]["securityContext"]
    assert security["runAsNonRoot"] is True
    assert str(security["runAsUser"]) == user


def test_autoscaler_targets_the_app_and_scales_down_slowly() -> None:
    hpa = k8s_object("HorizontalPodAutoscaler", "sizing-app")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "sizing-app")
    assert hpa["spec"]["minReplicas"] >= 2
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 300


def test_gradio_sessions_stick_to_one_pod() -> None:
    service = k8s_object("Service", "sizing-app")
    assert service["spec"]["sessionAffinity"] == "ClientIP"
    ingress = k8s_object("Ingress", "sizing-app")
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]


def test_vllm_gpu_count_equals_tensor_parallel_size() -> None:
    vllm = pod_containers(k8s_object("Deployment", "sizing-vllm"))[0]
    gpus = int(vllm["resources"]["limits"]["nvidia.com/gpu"])
    assert gpus == int(vllm["resources"]["requests"]["nvidia.com/gpu"])
    assert int(flag_value(vllm["args"], "--tensor-parallel-size")) == gpus
    assert "--enable-auto-tool-choice" in vllm["args"]


def test_chroma_keeps_its_data_on_a_claim() -> None:
    statefulset = k8s_object("StatefulSet", "sizing-chroma")
    claim = statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    mounts = pod_containers(statefulset)[0]["volumeMounts"]
    assert {"name": claim, "mountPath": "/data"} in mounts
    assert statefulset["spec"]["replicas"] == 1


def test_llm_secret_is_shared_by_app_and_vllm() -> None:
    def secret_refs(workload: dict[str, Any]) -> dict[str, tuple[str, str]]:
        refs = {}
        for container in pod_containers(workload):
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    refs[variable["name"]] = (ref["name"], ref["key"])
        return refs

    app = secret_refs(k8s_object("Deployment", "sizing-app"))
    vllm = secret_refs(k8s_object("Deployment", "sizing-vllm"))
    assert app["SIZING_LLM_API_KEY"] == vllm["VLLM_API_KEY"]


# ---------------------------------------------------------------- the model's card, by our own calculator

# NVIDIA GPU Feature Discovery's `nvidia.com/gpu.product` values -> the calculator's card ids.
GPU_PRODUCT_CARDS = {"NVIDIA-L40S": "l40s", "NVIDIA-L4": "l4", "NVIDIA-H100-80GB-HBM3": "h100-80gb"}


def sized_request(args: list[str], card: str, context: int, users: int) -> SizingRequest:
    repository = flag_value(args, "--model").rpartition("/")[2]
    name, _, quantization = repository.rpartition("-")
    return SizingRequest(
        model=name if quantization.lower() == "awq" else repository,
        precision="awq" if quantization.lower() == "awq" else "bf16",
        context=context,
        users=users,
        engine="vllm",
        gpu=f"{card}:{flag_value(args, '--tensor-parallel-size')}",
        gpu_memory_utilization=float(flag_value(args, "--gpu-memory-utilization")),
    )


def test_vllm_flags_fit_the_card_they_were_sized_for() -> None:
    vllm = k8s_object("Deployment", "sizing-vllm")
    args = pod_containers(vllm)[0]["args"]
    card = GPU_PRODUCT_CARDS[vllm["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]]
    max_num_seqs = int(flag_value(args, "--max-num-seqs"))
    # Every admitted conversation can hold a typical 8k-token sizing chat at once...
    busy = calculate_vram(sized_request(args, card, context=8192, users=max_num_seqs))
    assert busy.options[0].fits, busy.recommendation
    assert busy.options[0].max_concurrent_sequences >= max_num_seqs
    # ...and one conversation can grow to the whole --max-model-len.
    longest = calculate_vram(
        sized_request(args, card, context=int(flag_value(args, "--max-model-len")), users=1)
    )
    assert longest.options[0].fits, longest.recommendation


def test_ollama_model_fits_a_24_gb_card_with_its_parallel_conversations() -> None:
    stack = compose("ollama.env")
    environment = stack["services"]["ollama"]["environment"]
    request = SizingRequest(
        model=stack["services"]["ollama-pull"]["entrypoint"][-1],
        precision="q4_k_m",  # what an Ollama tag without a suffix pulls
        context=int(environment["OLLAMA_CONTEXT_LENGTH"]),
        users=int(environment["OLLAMA_NUM_PARALLEL"]),
        engine="ollama",
        gpu="l4",
    )
    assert calculate_vram(request).options[0].fits
