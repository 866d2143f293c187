"""``xce-bus-config``: the authenticated bus's configuration and secrets, generated at
deploy time into one folder (never committed).

    xce-bus-config --out DIR [--rotate ROLE,...|all] [--tls-cert F --tls-key F
        [--tls-ca F] [--tls-verify]] [--listen HOST:PORT] [--store-dir DIR]
        [--roles ROLE,...] [--owner UID:GID]
    xce-bus-config --template --out DIR

It writes (``bus_policy`` says who may do what)::

    DIR/server/nats-server.conf   accounts, one nkey user per role, permissions,
                                  JetStream, TLS when given (public keys only)
    DIR/server/redis-users.acl    one ACL user per role that uses Redis, ``default``
                                  off (password hashes only)
    DIR/<role>/nats.nk            the role's nkey seed (mode 0600)
    DIR/<role>/redis.password     its Redis password (mode 0600)

A seed or password already in ``DIR`` is kept, unless its role is named by
``--rotate``: running it again rewrites the server files (the permissions of this
version) without changing anyone's secrets. ``--template`` writes the configuration
with placeholders in place of keys and hashes, as ``deploy/nats/`` holds it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import nkeys

from xce_kit.auth import inbox_prefix, user_public_key
from xce_kit.bus_policy import ROLE_NAMES, ROLES, Role, redis_rules, role
from xce_kit.options import OneLineParser

#: File names inside the output folder.
SERVER_DIR = "server"
NATS_CONFIG = "nats-server.conf"
REDIS_ACL = "redis-users.acl"
SEED_FILE = "nats.nk"
PASSWORD_FILE = "redis.password"
#: The one account every XCE user is in.
ACCOUNT = "XCE"
#: Bytes of randomness of a Redis password (43 characters once encoded).
PASSWORD_BYTES = 32


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """What the nats-server configuration says besides its users.

    Attributes:
        listen: ``host:port`` the server listens on.
        store_dir: the JetStream store folder (as the server sees it).
        tls_cert, tls_key, tls_ca: the server's TLS files (as the server sees them);
            TLS is on when ``tls_cert`` is given.
        tls_verify: clients must present a certificate signed by ``tls_ca``.
    """

    listen: str = "0.0.0.0:4222"
    store_dir: str = "/data"
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None
    tls_verify: bool = False


def template_key(each: Role) -> str:
    """What a template shows in place of ``each``'s public key."""
    return f"<{each.name} public nkey>"


def _allow(kind: str, subjects: Iterable[str]) -> list[str]:
    """``kind: { allow: [...] }``, a subject a line."""
    pad = " " * 12
    return [
        f"          {kind}: {{ allow: [",
        *(f"{pad}{json.dumps(subject)}," for subject in subjects),
        "          ] }",
    ]


def _nats_user(each: Role, key: str) -> list[str]:
    """The lines of ``each``'s entry (public key ``key``) in the account's users."""
    lines = [f"      # {each.name}: {each.what}", "      {", f"        nkey: {json.dumps(key)}"]
    permissions = each.nats
    if permissions is not None:
        # Its replies and pulled messages come to its own inbox only (xce_kit.auth).
        subscribe = (*permissions.subscribe, inbox_prefix(key) + ".>")
        lines += [
            "        permissions: {",
            *_allow("publish", permissions.publish),
            *_allow("subscribe", subscribe),
        ]
        if permissions.allow_responses:
            lines.append("          allow_responses: true")
        lines.append("        }")
    lines.append("      }")
    return lines


def render_nats_config(
    users: Sequence[tuple[Role, str]], server: ServerOptions, *, template: bool = False
) -> str:
    """The nats-server configuration: ``users`` as ``(role, public nkey)`` in the
    account ``XCE`` with JetStream, no anonymous user, TLS when ``server`` names a
    certificate. A ``template`` says so in its first line (its keys are
    placeholders: ``template_key``)."""
    what = "a TEMPLATE, see deploy/nats/README.md" if template else "written by xce-bus-config"
    lines = [
        f"# The XCE message bus: nats-server configuration ({what}).",
        "# Every client authenticates with an nkey and may publish and subscribe only",
        "# where its role allows (xce_kit.bus_policy, docs/security.md); there is no",
        "# anonymous user. Public keys only: the seeds are in the services' own files.",
        f"listen: {json.dumps(server.listen)}",
        "jetstream {",
        f"  store_dir: {json.dumps(server.store_dir)}",
        "}",
    ]
    if server.tls_cert is not None:
        lines.append("tls {")
        lines.append(f"  cert_file: {json.dumps(server.tls_cert)}")
        lines.append(f"  key_file: {json.dumps(server.tls_key)}")
        if server.tls_ca is not None:
            lines.append(f"  ca_file: {json.dumps(server.tls_ca)}")
        if server.tls_verify:
            lines.append("  verify: true")
        lines.append("}")
    lines += ["accounts {", f"  {ACCOUNT} {{", "    jetstream: enabled", "    users: ["]
    for each, key in users:
        lines += _nats_user(each, key)
    lines += ["    ]", "  }", "}", ""]
    return "\n".join(lines)


def render_redis_acl(users: Sequence[tuple[Role, str]]) -> str:
    """The Redis ACL file: ``default`` off, then ``users`` as ``(role, SHA-256 of its
    password in hex)``, each with only its keys and commands (``bus_policy``). Password
    hashes only; Redis allows no comments in the file."""
    lines = ["user default off resetkeys resetchannels -@all"]
    for each, digest in users:
        lines.append(" ".join(("user", each.name, "on", f"#{digest}", *redis_rules(each))))
    return "\n".join(lines) + "\n"


# --- secrets --------------------------------------------------------------------------------


def new_seed() -> bytes:
    """A new NATS user nkey seed (``SU...``), from the system's secure random source."""
    seed: bytes = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_USER)
    return seed


def public_key(seed: bytes, where: Path) -> str:
    """The public key of the user seed read from ``where``.

    Raises:
        ValueError: it is not a user seed (naming the file, not the seed).
    """
    try:
        return user_public_key(seed)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc} (--rotate its role to replace it)") from None


def write_secret(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600, atomically (a file beside it, then
    renamed over it), so no reader ever sees half a secret or a looser mode."""
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _secret(path: Path, rotate: bool, make: bytes) -> tuple[bytes, bool]:
    """The secret in ``path``, or ``make`` written there when it is absent or
    ``rotate``; and whether it is new."""
    if not rotate and path.exists():
        return path.read_bytes(), False
    write_secret(path, make)
    return make, True


@dataclass(frozen=True, slots=True)
class Written:
    """What a run wrote: the server files, and the roles whose secrets are new or kept."""

    files: tuple[Path, ...]
    new: tuple[str, ...]
    kept: tuple[str, ...]


def generate(
    out: Path,
    server: ServerOptions,
    roles: Sequence[Role] = ROLES,
    rotate: Iterable[str] = (),
    owner: tuple[int, int] | None = None,
) -> Written:
    """Write the configuration and the secrets of ``roles`` into ``out`` (see the
    module docstring); secrets already there are kept unless their role is in
    ``rotate``.

    Raises:
        ValueError: a seed in ``out`` is not a user seed.
        OSError: a file cannot be written (or, with ``owner``, handed over).
    """
    rotating = set(rotate)
    nats_users: list[tuple[Role, str]] = []
    redis_users: list[tuple[Role, str]] = []
    new: list[str] = []
    kept: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    for each in roles:
        folder = out / each.name
        folder.mkdir(exist_ok=True)
        folder.chmod(0o700)  # a volume's mount point comes as 0755
        renew = each.name in rotating
        seed_path = folder / SEED_FILE
        seed, fresh = _secret(seed_path, renew, new_seed())
        nats_users.append((each, public_key(seed, seed_path)))
        changed = [seed_path]
        if each.redis is not None:
            made = secrets.token_urlsafe(PASSWORD_BYTES).encode()
            password_path = folder / PASSWORD_FILE
            password, made_now = _secret(password_path, renew, made)
            fresh = fresh or made_now
            redis_users.append((each, hashlib.sha256(password.rstrip(b"\r\n")).hexdigest()))
            changed.append(password_path)
        (new if fresh else kept).append(each.name)
        if owner is not None:
            for path in (folder, *changed):
                os.chown(path, *owner)
    server_dir = out / SERVER_DIR
    server_dir.mkdir(exist_ok=True)
    files = (server_dir / NATS_CONFIG, server_dir / REDIS_ACL)
    _write_public(files[0], render_nats_config(nats_users, server))
    _write_public(files[1], render_redis_acl(redis_users))
    return Written(files, tuple(new), tuple(kept))


def _write_public(path: Path, text: str) -> None:
    """Write a file every server may read (mode 0644: public keys and hashes only)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    partial.chmod(0o644)
    os.replace(partial, path)


def write_templates(out: Path) -> tuple[Path, Path]:
    """Write ``nats-server.conf.template`` and ``redis-users.acl.template`` into ``out``:
    the configuration of every role with placeholders in place of keys and hashes
    (what ``deploy/nats/`` holds).

    Returns:
        The two paths.
    """
    out.mkdir(parents=True, exist_ok=True)
    nats_path, acl_path = out / (NATS_CONFIG + ".template"), out / (REDIS_ACL + ".template")
    nats_path.write_text(
        render_nats_config([(r, template_key(r)) for r in ROLES], ServerOptions(), template=True)
    )
    acl_path.write_text(
        render_redis_acl([(r, f"<sha256 of {r.name}'s password>") for r in ROLES if r.redis])
    )
    return nats_path, acl_path


# --- the console script ---------------------------------------------------------------------


def _role_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names == ("all",):
        return ROLE_NAMES
    for name in names:
        try:
            role(name)
        except KeyError as exc:
            raise argparse.ArgumentTypeError(str(exc.args[0])) from None
    if not names:
        raise argparse.ArgumentTypeError(f"no role named; roles: {', '.join(ROLE_NAMES)}")
    return names


def _owner(text: str) -> tuple[int, int]:
    uid, _, gid = text.partition(":")
    try:
        return int(uid), int(gid or uid)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not UID[:GID] (numbers)") from None


def build_parser() -> argparse.ArgumentParser:
    """The ``xce-bus-config`` command line."""
    parser = OneLineParser(
        prog="xce-bus-config",
        description="Write the XCE bus configuration (nats-server accounts, nkey users and "
        "permissions; Redis ACL users) and one secret file per service into a folder.",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--template",
        action="store_true",
        help="write the configuration templates (no keys, no secrets) instead",
    )
    parser.add_argument(
        "--roles",
        type=_role_list,
        default=ROLE_NAMES,
        metavar="ROLE,...",
        help=f"the users to write (default all: {','.join(ROLE_NAMES)})",
    )
    parser.add_argument(
        "--rotate",
        type=_role_list,
        default=(),
        metavar="ROLE,...",
        help="give these roles new secrets ('all': every one); others keep theirs",
    )
    defaults = ServerOptions()
    parser.add_argument(
        "--listen",
        default=defaults.listen,
        metavar="HOST:PORT",
        help=f"where nats-server listens (default {defaults.listen})",
    )
    parser.add_argument(
        "--store-dir",
        default=defaults.store_dir,
        metavar="DIR",
        help=f"nats-server's JetStream store, as it sees it (default {defaults.store_dir})",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="the server's certificate: TLS on")
    parser.add_argument("--tls-key", metavar="FILE", help="the server's private key")
    parser.add_argument("--tls-ca", metavar="FILE", help="CA that signs client certificates")
    parser.add_argument(
        "--tls-verify", action="store_true", help="clients must present a certificate"
    )
    parser.add_argument(
        "--owner",
        type=_owner,
        metavar="UID[:GID]",
        help="hand the services' folders and secrets to this user (run as root)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``xce-bus-config``; exit status 0, 2 on a bad option, 1 when a file cannot
    be read or written (one line naming it; never a secret)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.template:
        for path in write_templates(args.out):
            print(f"wrote {path}")
        return 0
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    if args.tls_cert is None and (args.tls_ca or args.tls_verify):
        parser.error("--tls-ca and --tls-verify need --tls-cert and --tls-key")
    if args.tls_verify and args.tls_ca is None:
        parser.error("--tls-verify needs --tls-ca (the CA client certificates are signed by)")
    if args.rotate == ROLE_NAMES:  # 'all': every role written
        args.rotate = args.roles
    unknown = sorted(set(args.rotate) - set(args.roles))
    if unknown:
        parser.error(f"--rotate {','.join(unknown)}: not among --roles")
    server = ServerOptions(
        args.listen, args.store_dir, args.tls_cert, args.tls_key, args.tls_ca, args.tls_verify
    )
    try:
        written = generate(
            args.out, server, [role(name) for name in args.roles], args.rotate, args.owner
        )
    except (OSError, ValueError) as exc:
        print(f"xce-bus-config: error: {exc}", file=sys.stderr)
        return 1
    for path in written.files:
        print(f"wrote {path}")
    if written.new:
        print(f"new secrets: {', '.join(written.new)} (reload nats-server and Redis)")
    if written.kept:
        print(f"kept: {', '.join(written.kept)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
