"""Configuration files a simulation reads, and the text they are made of.

``--policy-config FILE``: the job-priority configuration of a simulation, a JSON or
TOML file (issue 17). Today it holds the fair-share configuration of the
``fairshare`` picker under the key ``fairshare`` (``xce_schemas.FairShareConfig``:
formula, decay, shares by project and user, LSF factors, Slurm weights), validated
by the same schema as the core's ``CONFIG_PUSH``. Example (TOML)::

    [fairshare]
    formula = "slurm"          # or "lsf"
    half_life_s = 86400
    weight_age = 100

    [fairshare.projects]
    physics = 3
    biology = 1

    [fairshare.users]
    alice = 2

A file ending in ``.toml`` is read as TOML, any other as JSON. ``read_text`` reads
every configuration file (the ``--queues`` file too).
"""

from __future__ import annotations

import json
import tomllib
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError
from xce_schemas import FairShareConfig
from xce_schemas.base import WireModel
from xce_schemas.errors import describe


class PolicyConfigError(ValueError):
    """A policy-configuration file that cannot be used; the message names the file
    and, for a value the schema refuses, the field."""


class PolicyConfig(WireModel):
    """The document of a ``--policy-config`` file.

    Attributes:
        fairshare: the ``fairshare`` picker's configuration.
    """

    fairshare: FairShareConfig | None = None


def read_text(path: str | Path, error: type[ValueError]) -> str:
    """A configuration file's text, which must be UTF-8.

    Raises:
        error: not UTF-8 (``FILE: not UTF-8 text (byte 0xff at offset 0)``).
        OSError: the file cannot be read (``filename`` is its path).
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def _once(where: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once.

    Raises:
        PolicyConfigError: naming the key given twice.
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise PolicyConfigError(f"{where}: key {key!r} is given twice")
        out[key] = value
    return out


def read_policy_config(path: str | Path) -> PolicyConfig:
    """Read and validate a policy-configuration file.

    Raises:
        PolicyConfigError: not UTF-8, not JSON (or TOML), not an object, or a value
            the schema refuses (``FILE: fairshare.users.alice: ...``).
        OSError: the file cannot be read (``filename`` is its path).
    """
    where = str(path)
    text = read_text(path, PolicyConfigError)
    if where.endswith(".toml"):
        try:
            document: object = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyConfigError(f"{where}: not TOML: {exc}") from None
    else:
        try:
            document = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise PolicyConfigError(f"{where}: not JSON: {exc}") from None
        # (orjson keeps the last of a key given twice; TOML refuses it: so does this)
        json.loads(text, object_pairs_hook=partial(_once, where))
    if not isinstance(document, dict):
        raise PolicyConfigError(f"{where}: not an object (a JSON object or TOML tables)")
    try:
        return PolicyConfig.model_validate(document)
    except ValidationError as exc:
        raise PolicyConfigError(f"{where}: {describe(exc)}") from None
