"""Credentials of the live services, from files named in the environment.

A secret is never an argument (it would show in a process list and a shell history)
and never part of an error: errors name the variable and the file, not what it holds.

NATS (applied by ``xce_kit.connection.connect_nats`` to every service's connection):

- ``XCE_NATS_NKEY_SEED_FILE``: a file holding the user's nkey seed (``SU...``), as
  ``xce-bus-config`` writes it; or
- ``XCE_NATS_CREDS``: a ``.creds`` file (a user JWT and its seed, as ``nsc`` writes);
- ``XCE_NATS_TLS_CA``: the CA bundle the server's certificate is checked against
  (any TLS variable turns TLS on);
- ``XCE_NATS_TLS_CERT``, ``XCE_NATS_TLS_KEY``: the client's certificate and key
  (both or neither).

A client that authenticates with a key uses the inbox prefix ``inbox_prefix(its public
key)``: its replies and pulled messages come on subjects only it may subscribe to.

Redis (applied by ``xce_kit.redis_client.redis_from_url``): ``XCE_REDIS_USERNAME``
(the ACL user; absent: Redis's ``default`` user) and ``XCE_REDIS_PASSWORD_FILE`` (a
file holding its password).
"""

from __future__ import annotations

import logging
import os
import ssl
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

import nkeys

log = logging.getLogger("xce_kit.auth")

SEED_FILE_VAR = "XCE_NATS_NKEY_SEED_FILE"
CREDS_VAR = "XCE_NATS_CREDS"
TLS_CA_VAR = "XCE_NATS_TLS_CA"
TLS_CERT_VAR = "XCE_NATS_TLS_CERT"
TLS_KEY_VAR = "XCE_NATS_TLS_KEY"
REDIS_USERNAME_VAR = "XCE_REDIS_USERNAME"
REDIS_PASSWORD_FILE_VAR = "XCE_REDIS_PASSWORD_FILE"

#: The first tokens of every client's inbox; ``inbox_prefix`` adds the user's key.
INBOX_ROOT = "_INBOX"
#: The marker line before the seed in a ``.creds`` file.
_CREDS_SEED_MARK = b"BEGIN USER NKEY SEED"
#: A file larger than this is not a seed, a ``.creds`` file or a password, bytes.
_MAX_SECRET_FILE = 64 * 1024


class CredentialsError(OSError):
    """A credential named in the environment cannot be used: one line naming the
    variable and the file, never their content."""


def inbox_prefix(public_key: str) -> str:
    """The inbox prefix of the NATS user whose public nkey is ``public_key``:
    ``_INBOX.<public key>``. Its replies and pulled messages arrive below it, and the
    server lets only that user subscribe there (``xce_kit.bus_policy``)."""
    return f"{INBOX_ROOT}.{public_key}"


def read_secret_file(var: str, path: str) -> bytes:
    """The content of the file ``path`` that variable ``var`` names (a seed, a
    ``.creds`` file, a password, a token); never shown in an error. Warns when others
    than its owner may read it.

    Raises:
        CredentialsError: it is missing, not a regular file, unreadable, empty or too
            large (naming ``var`` and ``path``, never the content).
    """
    where = f"{var}={path}"
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise CredentialsError(f"{where}: not a regular file")
        if info.st_size > _MAX_SECRET_FILE:
            raise CredentialsError(f"{where}: {info.st_size} bytes, too large for a credential")
        with open(path, "rb") as handle:
            data = handle.read()
    except CredentialsError:
        raise
    except OSError as exc:
        raise CredentialsError(f"{where}: {exc.strerror or exc}") from None
    if not data.strip():
        raise CredentialsError(f"{where}: the file is empty")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("%s: others than its owner may read it (mode %o)", where, info.st_mode & 0o777)
    return data


def user_public_key(seed: bytes) -> str:
    """The public key (``U...``) of a NATS user's nkey seed (``SU...``).

    Raises:
        ValueError: it is not a user's seed (the message does not hold it).
    """
    try:
        pair = nkeys.from_seed(bytearray(seed.strip()))
        public: bytes = pair.public_key
        pair.wipe()
    except (nkeys.NkeysError, ValueError, TypeError):
        raise ValueError("not an nkey seed") from None
    if not public.startswith(b"U"):
        raise ValueError("not a user's seed (its key is no U key)")
    return public.decode()


def _user_public_key(var: str, path: str, seed: bytes) -> str:
    """``user_public_key`` of the seed read from ``path``.

    Raises:
        CredentialsError: it is not a user seed (naming the file, not the seed).
    """
    try:
        return user_public_key(seed)
    except ValueError as exc:
        raise CredentialsError(f"{var}={path}: {exc}") from None


def _creds_seed(path: str, data: bytes) -> bytes:
    """The user seed of a ``.creds`` file's content.

    Raises:
        CredentialsError: there is no ``BEGIN USER NKEY SEED`` section.
    """
    lines = iter(data.splitlines())
    for line in lines:
        if _CREDS_SEED_MARK in line:
            for seed in lines:
                if seed.strip():
                    return seed.strip()
    raise CredentialsError(f"{CREDS_VAR}={path}: no user nkey seed in it (not a .creds file)")


@dataclass(frozen=True, slots=True)
class NatsCredentials:
    """How a service authenticates to NATS (see the module docstring).

    Attributes:
        seed_file: the nkey seed file, or None.
        creds_file: the ``.creds`` file, or None (at most one of the two).
        public_key: the user's public nkey, read from either (None: no key).
        tls_ca, tls_cert, tls_key: the TLS files (None: not given).
    """

    seed_file: str | None = None
    creds_file: str | None = None
    public_key: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def tls(self) -> bool:
        """Whether the connection uses TLS (any TLS file given)."""
        return any((self.tls_ca, self.tls_cert, self.tls_key))

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context: the server checked against ``tls_ca`` (else the
        system's CAs), the client's certificate and key presented when given.

        Raises:
            CredentialsError: a file cannot be loaded (naming its variable).
        """
        try:
            context = ssl.create_default_context(cafile=self.tls_ca)
        except (OSError, ssl.SSLError) as exc:
            raise CredentialsError(f"{TLS_CA_VAR}={self.tls_ca}: not a CA bundle ({exc})") from None
        if self.tls_cert is not None and self.tls_key is not None:
            try:
                context.load_cert_chain(self.tls_cert, self.tls_key)
            except (OSError, ssl.SSLError) as exc:
                raise CredentialsError(
                    f"{TLS_CERT_VAR}={self.tls_cert}, {TLS_KEY_VAR}={self.tls_key}: not a "
                    f"certificate and its key ({exc})"
                ) from None
        return context

    def connect_options(self) -> dict[str, object]:
        """Keyword arguments of ``nats.connect`` that apply these credentials
        (``nkeys_seed`` or ``user_credentials``, ``inbox_prefix``, ``tls``).

        Raises:
            CredentialsError: a TLS file cannot be loaded.
        """
        options: dict[str, object] = {}
        if self.seed_file is not None:
            options["nkeys_seed"] = self.seed_file
        if self.creds_file is not None:
            options["user_credentials"] = self.creds_file
        if self.public_key is not None:
            options["inbox_prefix"] = inbox_prefix(self.public_key)
        if self.tls:
            options["tls"] = self.ssl_context()
        return options


def _path(environ: Mapping[str, str], var: str) -> str | None:
    value = environ.get(var, "").strip()
    return value or None


def nats_credentials(environ: Mapping[str, str] | None = None) -> NatsCredentials:
    """The NATS credentials ``environ`` (default ``os.environ``) names, checked: each
    file readable, a seed a user's.

    Raises:
        CredentialsError: both a seed file and a ``.creds`` file, a certificate without
            its key (or the reverse), or a file that cannot be used.
    """
    env = os.environ if environ is None else environ
    seed_file, creds_file = _path(env, SEED_FILE_VAR), _path(env, CREDS_VAR)
    if seed_file is not None and creds_file is not None:
        raise CredentialsError(f"set {SEED_FILE_VAR} or {CREDS_VAR}, not both")
    public_key = None
    if seed_file is not None:
        public_key = _user_public_key(
            SEED_FILE_VAR, seed_file, read_secret_file(SEED_FILE_VAR, seed_file)
        )
    elif creds_file is not None:
        seed = _creds_seed(creds_file, read_secret_file(CREDS_VAR, creds_file))
        public_key = _user_public_key(CREDS_VAR, creds_file, seed)
    tls_ca, tls_cert, tls_key = (_path(env, v) for v in (TLS_CA_VAR, TLS_CERT_VAR, TLS_KEY_VAR))
    if (tls_cert is None) != (tls_key is None):
        given, missing = (TLS_CERT_VAR, TLS_KEY_VAR)
        if tls_cert is None:
            given, missing = missing, given
        raise CredentialsError(
            f"{given} is set but {missing} is not (a client certificate needs both)"
        )
    for var, value in ((TLS_CA_VAR, tls_ca), (TLS_CERT_VAR, tls_cert), (TLS_KEY_VAR, tls_key)):
        if value is not None and not os.access(value, os.R_OK):
            raise CredentialsError(f"{var}={value}: not a readable file")
    return NatsCredentials(seed_file, creds_file, public_key, tls_ca, tls_cert, tls_key)


@dataclass(frozen=True, slots=True)
class RedisCredentials:
    """How a service authenticates to Redis.

    Attributes:
        username: the ACL user (None: Redis's ``default`` user).
        password: its password (None: none); never shown by ``repr``.
    """

    username: str | None = None
    password: str | None = field(default=None, repr=False)


def redis_credentials(environ: Mapping[str, str] | None = None) -> RedisCredentials:
    """The Redis credentials ``environ`` (default ``os.environ``) names.

    Raises:
        CredentialsError: a user without a password file, or a password file that
            cannot be read or is not UTF-8 text.
    """
    env = os.environ if environ is None else environ
    username = env.get(REDIS_USERNAME_VAR, "").strip() or None
    password_file = _path(env, REDIS_PASSWORD_FILE_VAR)
    if password_file is None:
        if username is not None:
            raise CredentialsError(
                f"{REDIS_USERNAME_VAR} is set but {REDIS_PASSWORD_FILE_VAR} is not "
                "(an ACL user needs its password file)"
            )
        return RedisCredentials()
    raw = read_secret_file(REDIS_PASSWORD_FILE_VAR, password_file)
    try:
        # One line: the trailing line break an editor adds is not part of it.
        password = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise CredentialsError(
            f"{REDIS_PASSWORD_FILE_VAR}={password_file}: not UTF-8 text"
        ) from None
    if "\n" in password or "\r" in password:
        raise CredentialsError(f"{REDIS_PASSWORD_FILE_VAR}={password_file}: more than one line")
    return RedisCredentials(username, password)
