"""docker-compose.yml, checked statically (there is no Docker engine here): every XCE
service runs a console script of this package whose command line parses, its NATS and
Redis addresses are the stack's, Prometheus scrapes the ports the services serve
/metrics on, and the Grafana dashboard plots only metrics the services export."""

from __future__ import annotations

import importlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from xce_admin.app import AdminMetrics
from xce_driver.live.metrics import BridgeMetrics, CoreMetrics
from xce_recorder.metrics import RecorderMetrics

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
#: The services built from this repository (the others are stock images).
OURS = sorted(name for name, service in SERVICES.items() if service.get("build") == ".")


def option(command: list[str], name: str) -> str | None:
    """The value after ``name`` in ``command``, or None."""
    return command[command.index(name) + 1] if name in command else None


def test_the_stack_has_every_part() -> None:
    assert set(SERVICES) == {
        "nats",
        "redis",
        "core",
        "bridge",
        "recorder",
        "admin",
        "emulator",
        "prometheus",
        "grafana",
    }
    assert OURS == ["admin", "bridge", "core", "emulator", "recorder"]
    assert "-js" in SERVICES["nats"]["command"]  # JetStream on


@pytest.mark.parametrize("name", OURS)
def test_each_command_is_a_console_script_whose_options_parse(name: str) -> None:
    script, *argv = SERVICES[name]["command"]
    assert script in SCRIPTS, f"{name}: {script!r} is not a console script of the package"
    module_name, _, _ = SCRIPTS[script].partition(":")
    module = importlib.import_module(module_name)
    parser = module.build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exc:  # argparse's way of refusing
        pytest.fail(f"{name}: {script} {' '.join(argv)} does not parse (exit {exc.code})")


@pytest.mark.parametrize("name", OURS)
def test_bus_and_store_addresses_are_the_stacks(name: str) -> None:
    command = SERVICES[name]["command"]
    nats_url = option(command, "--nats")
    assert nats_url is not None, f"{name} does not say where NATS is"
    assert urlsplit(nats_url).netloc == "nats:4222"
    redis_url = option(command, "--redis")
    if redis_url is not None:
        assert urlsplit(redis_url).netloc == "redis:6379"
    assert {"nats"} <= set(SERVICES[name]["depends_on"])


def test_prometheus_scrapes_the_ports_the_services_serve_metrics_on() -> None:
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    served = set()
    for name in OURS:
        command = SERVICES[name]["command"]
        port = option(command, "--metrics-port") or (name == "admin" and option(command, "--port"))
        if port:
            served.add(f"{name}:{port}")
    assert targets == served == {"core:9101", "bridge:9102", "recorder:9103", "admin:8080"}
    mount = SERVICES["prometheus"]["volumes"][0]
    assert mount.startswith("./deploy/prometheus/prometheus.yml:")


def test_the_recorder_and_the_admin_api_share_the_recordings_volume() -> None:
    for name in ("recorder", "admin"):
        assert option(SERVICES[name]["command"], "--recordings-dir") == "/recordings"
        assert "recordings:/recordings" in SERVICES[name]["volumes"]
    assert "XCE_ADMIN_TOKEN" in SERVICES["admin"]["environment"]


def exported_series() -> set[str]:
    """Every sample name the four services' metric registries export."""
    names = set()
    for metrics in (CoreMetrics(), BridgeMetrics(), RecorderMetrics(), AdminMetrics()):
        for family in metrics.registry.collect():
            names.add(family.name)
            names.update(sample.name for sample in family.samples)
            if family.type == "histogram":
                names.update(f"{family.name}_{suffix}" for suffix in ("bucket", "sum", "count"))
            if family.type == "counter":
                names.add(f"{family.name}_total")
    return names


def test_the_dashboard_plots_only_exported_metrics_from_the_provisioned_prometheus() -> None:
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards/xce-scheduler.json").read_text())
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bxce_[a-z_]+", target["expr"])
    }
    missing = sorted(used - exported_series())
    assert not missing, f"the dashboard plots metrics no service exports: {missing}"
    datasource = yaml.safe_load(
        (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text()
    )["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    assert "9090:9090" in SERVICES["prometheus"]["ports"]
    uids = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p["targets"]}
    assert uids == {datasource["uid"]}


def test_the_image_holds_every_package_folder() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["where"]
    for folder in folders:
        top = folder.split("/")[0]
        assert f"COPY {top} ./{top}" in dockerfile, f"the image lacks {folder}"


def test_the_image_holds_what_the_build_needs() -> None:
    # The in-tree build backend and setup.py: without them ``pip install .`` fails.
    dockerfile = (ROOT / "Dockerfile").read_text()
    backend_path = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"][
        "backend-path"
    ]
    for folder in backend_path:
        assert f"COPY {folder} ./{folder}" in dockerfile, f"the image lacks {folder}"
    assert "setup.py" in dockerfile.split("COPY pyproject.toml", 1)[1].splitlines()[0]
