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
from xce_kit.auth import REDIS_PASSWORD_FILE_VAR, REDIS_USERNAME_VAR, SEED_FILE_VAR
from xce_kit.bus_config import NATS_CONFIG, PASSWORD_FILE, REDIS_ACL, SEED_FILE, SERVER_DIR
from xce_kit.bus_policy import ROLE_NAMES, role
from xce_recorder.metrics import RecorderMetrics

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
#: The services built from this repository (the others are stock images).
OURS = sorted(name for name, service in SERVICES.items() if service.get("build") == ".")
#: Ours that use the bus (all but the one-shot that writes its configuration).
ON_BUS = [name for name in OURS if name != "bus-config"]


def option(command: list[str], name: str) -> str | None:
    """The value after ``name`` in ``command``, or None."""
    return command[command.index(name) + 1] if name in command else None


def test_the_stack_has_every_part() -> None:
    assert set(SERVICES) == {
        "bus-config",
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
    assert OURS == ["admin", "bridge", "bus-config", "core", "emulator", "recorder"]
    # JetStream on: the generated configuration has it (the template shows the block).
    assert SERVICES["nats"]["command"] == ["-c", f"/etc/xce-bus/{NATS_CONFIG}"]
    assert "\njetstream {\n" in (ROOT / "deploy/nats" / f"{NATS_CONFIG}.template").read_text()


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


@pytest.mark.parametrize("name", ON_BUS)
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


@pytest.mark.parametrize("name", OURS)
def test_metrics_prometheus_scrapes_are_served_beyond_the_container(name: str) -> None:
    """A service's /metrics binds loopback unless told (``--metrics-addr``); in its
    container that is out of Prometheus's reach."""
    script, *argv = SERVICES[name]["command"]
    if option(argv, "--metrics-port") is None:
        return
    module = importlib.import_module(SCRIPTS[script].partition(":")[0])
    assert module.build_parser().parse_args(argv).metrics_addr == "0.0.0.0", name
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
    assert "127.0.0.1:9090:9090" in SERVICES["prometheus"]["ports"]
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


# --- the authenticated bus ---------------------------------------------------------------


def secrets_volume(name: str) -> tuple[str, str]:
    """``(volume, role)`` of the secrets folder service ``name`` mounts at ``/run/xce``."""
    [mount] = [m for m in SERVICES[name].get("volumes", []) if ":/run/xce" in m]
    volume, _, options = mount.partition(":/run/xce")
    assert options == ":ro", f"{name} mounts its secrets writable"
    return volume, volume.removeprefix("bus-")


def test_no_port_is_published_beyond_this_host() -> None:
    for name, service in SERVICES.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


@pytest.mark.parametrize("name", ON_BUS)
def test_each_service_authenticates_with_its_own_secrets_only(name: str) -> None:
    volume, user = secrets_volume(name)
    assert user in ROLE_NAMES and user != "ops", f"{name} runs as {user!r}"
    environment = SERVICES[name]["environment"]
    assert environment[SEED_FILE_VAR] == f"/run/xce/{SEED_FILE}"
    if option(SERVICES[name]["command"], "--redis") is not None:
        assert role(user).redis is not None
        assert environment[REDIS_USERNAME_VAR] == user
        assert environment[REDIS_PASSWORD_FILE_VAR] == f"/run/xce/{PASSWORD_FILE}"
    mounting = [other for other in OURS if volume in str(SERVICES[other].get("volumes", []))]
    assert mounting == sorted(["bus-config", name]), f"{volume} is mounted by {mounting}"


def test_the_one_shot_writes_every_secret_volume_before_the_servers_start() -> None:
    bus = SERVICES["bus-config"]
    _script, *argv = bus["command"]
    args = importlib.import_module("xce_kit.bus_config").build_parser().parse_args(argv)
    written = {m.split(":")[0]: m.split(":")[1] for m in bus["volumes"]}
    assert written == {f"bus-{r}": f"{args.out}/{r}" for r in (SERVER_DIR, *ROLE_NAMES)}
    # Each service's folder is handed to the user the image runs the services as.
    uid = re.search(r"useradd [^\n]*--uid (\d+)", (ROOT / "Dockerfile").read_text())
    assert uid is not None and args.owner == (int(uid.group(1)), int(uid.group(1)))
    for server, file in (("nats", NATS_CONFIG), ("redis", REDIS_ACL)):
        assert f"bus-{SERVER_DIR}:/etc/xce-bus:ro" in SERVICES[server]["volumes"]
        assert f"/etc/xce-bus/{file}" in SERVICES[server]["command"]
        depends = SERVICES[server]["depends_on"]["bus-config"]
        assert depends == {"condition": "service_completed_successfully"}
    assert option(SERVICES["redis"]["command"], "--aclfile") == f"/etc/xce-bus/{REDIS_ACL}"
