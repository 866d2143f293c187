"""``xce-bus-config`` (``xce_kit.bus_config``): the configuration it writes, the
secrets it keeps or rotates, its templates in ``deploy/nats/`` (a test fails on
drift), and the policy's coverage of every stream the services declare."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from xce_driver.live.controller_bus import ctl_stream_configs
from xce_kit import bus_config
from xce_kit.bus_config import (
    NATS_CONFIG,
    PASSWORD_FILE,
    REDIS_ACL,
    SEED_FILE,
    SERVER_DIR,
    ServerOptions,
    generate,
    main,
    public_key,
)
from xce_kit.bus_policy import CORE_LEASE_STREAM, ROLE_NAMES, ROLES
from xce_kit.streams import record_stream_config, stream_configs

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "nats"
NATS_SERVER = shutil.which(
    "nats-server",
    path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin"]),
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_committed_templates_are_what_the_generator_writes(tmp_path: Path) -> None:
    for path in bus_config.write_templates(tmp_path):
        committed = DEPLOY / path.name
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run xce-bus-config --template --out deploy/nats"
        )
    assert not re.search(r"\bS[A-Z2-7]{57}\b", (DEPLOY / "nats-server.conf.template").read_text())


def test_each_role_gets_a_private_seed_and_the_server_its_public_key(tmp_path: Path) -> None:
    written = generate(tmp_path, ServerOptions())
    assert written.new == ROLE_NAMES and written.kept == ()
    config = (tmp_path / SERVER_DIR / NATS_CONFIG).read_text()
    acl = (tmp_path / SERVER_DIR / REDIS_ACL).read_text().splitlines()
    assert acl[0] == "user default off resetkeys resetchannels -@all"
    for role in ROLES:
        folder = tmp_path / role.name
        assert _mode(folder) == 0o700
        seed = folder / SEED_FILE
        assert _mode(seed) == 0o600
        key = public_key(seed.read_bytes(), seed)
        assert f'nkey: "{key}"' in config
        assert seed.read_text().strip() not in config
        if role.nats is not None:
            assert f'"_INBOX.{key}.>",' in config
        password = folder / PASSWORD_FILE
        if role.redis is None:
            assert not password.exists()
            continue
        assert _mode(password) == 0o600
        digest = hashlib.sha256(password.read_bytes()).hexdigest()
        [line] = [line for line in acl if line.startswith(f"user {role.name} ")]
        assert line.startswith(f"user {role.name} on #{digest} ")
        assert password.read_text() not in "\n".join(acl)
    assert _mode(tmp_path / SERVER_DIR / NATS_CONFIG) == 0o644


def test_a_second_run_keeps_every_secret_and_rotate_renews_only_the_named(tmp_path: Path) -> None:
    generate(tmp_path, ServerOptions())
    before = {p: p.read_bytes() for p in tmp_path.glob("*/*") if p.parent.name != SERVER_DIR}
    config = (tmp_path / SERVER_DIR / NATS_CONFIG).read_text()
    again = generate(tmp_path, ServerOptions())
    assert again.new == () and again.kept == ROLE_NAMES
    assert (tmp_path / SERVER_DIR / NATS_CONFIG).read_text() == config
    rotated = generate(tmp_path, ServerOptions(), rotate=["core"])
    assert rotated.new == ("core",)
    for path, data in before.items():
        changed = path.read_bytes() != data
        assert changed == (path.parent.name == "core"), path


def test_tls_files_go_into_the_server_s_configuration(tmp_path: Path) -> None:
    options = ServerOptions(
        tls_cert="/tls/server.pem", tls_key="/tls/key.pem", tls_ca="/tls/ca.pem", tls_verify=True
    )
    generate(tmp_path, options)
    config = (tmp_path / SERVER_DIR / NATS_CONFIG).read_text()
    block = config[config.index("tls {") : config.index("accounts {")]
    assert block.splitlines() == [
        "tls {",
        '  cert_file: "/tls/server.pem"',
        '  key_file: "/tls/key.pem"',
        '  ca_file: "/tls/ca.pem"',
        "  verify: true",
        "}",
    ]


@pytest.mark.skipif(NATS_SERVER is None, reason="nats-server is not installed")
def test_nats_server_accepts_the_generated_configuration(tmp_path: Path) -> None:
    generate(tmp_path, ServerOptions(store_dir=str(tmp_path / "store")))
    checked = subprocess.run(
        [str(NATS_SERVER), "-t", "-c", str(tmp_path / SERVER_DIR / NATS_CONFIG)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr + checked.stdout


def test_every_stream_the_services_declare_is_in_the_policy() -> None:
    template = (DEPLOY / "nats-server.conf.template").read_text()
    declared = [c.name for c in (*stream_configs(), *ctl_stream_configs(), record_stream_config())]
    for name in (*declared, CORE_LEASE_STREAM):
        assert f'"$JS.API.STREAM.INFO.{name}",' in template, name
    # Nobody but ops may change a stream that exists, purge it or delete it.
    assert not re.search(r"STREAM\.(UPDATE|PURGE|DELETE)", template)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-verify"], "--tls-ca and --tls-verify need --tls-cert"),
        (["--roles", "core,nobody"], "no role 'nobody'; roles: core, bridge"),
        (["--roles", "core", "--rotate", "bridge"], "--rotate bridge: not among --roles"),
        (["--owner", "xce"], "'xce' is not UID[:GID]"),
    ],
    ids=[
        "a certificate without a key",
        "verify without TLS",
        "an unknown role",
        "rotating a role not written",
        "an owner by name",
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--out", str(tmp_path), *argv])
    assert stopped.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("xce-bus-config: error: ") and message in line


def test_a_seed_file_that_is_no_seed_is_named_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / SEED_FILE).write_text("not a seed\n")
    assert main(["--out", str(tmp_path), "--roles", "core"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert (
        line
        == f"xce-bus-config: error: {tmp_path}/core/{SEED_FILE}: not an nkey seed (--rotate its role to replace it)"
    )
    assert main(["--out", str(tmp_path), "--roles", "core", "--rotate", "core"]) == 0
