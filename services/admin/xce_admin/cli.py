"""``xceadmin``: the admin API from the command line (Req 10 AC 9).

```
xceadmin scheduler record start [FILE]     # start recording (FILE: a name in the
                                           # recordings directory)
xceadmin scheduler record stop             # stop; the file appears once exported
xceadmin scheduler record status           # the recorder's state
xceadmin scheduler recordings              # the recordings
xceadmin scheduler status                  # core (last round, jobs, lag) and recorder;
                                           # exit 4 when the core does not schedule
```

The server is ``--url`` (default ``$XCE_ADMIN_URL``, else ``http://127.0.0.1:8080``);
the token is the content of the file ``$XCE_ADMIN_TOKEN_FILE`` names, else
``$XCE_ADMIN_TOKEN``; never an option, which any user of the host could read in the
process list. Every failure is one line on
stderr. Exit status: 0 done; 1 refused by the server (bad name, wrong token, already
recording, …); 2 bad usage; 3 the server cannot be reached or failed; 4 (``scheduler
status``) the core does not schedule: no round within the admin server's
``--max-round-age``, and the line says whether the core service or the rounds are
missing.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8080"

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
EXIT_NOT_SCHEDULING = 4


class CliError(Exception):
    """A failure to report in one line, with its exit status, and what to print on
    stdout all the same (``output``: e.g. the status that shows the failure)."""

    def __init__(self, message: str, code: int, output: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.output = output


def positive_seconds(text: str) -> float:
    """A finite, positive number of seconds (an argparse type).

    Raises:
        argparse.ArgumentTypeError: not a number, or not finite and positive.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive, finite number of seconds")
    return value


#: Why ``--token`` is refused.
TOKEN_REFUSAL = (
    "the token is not taken on the command line (it would show in the process list):"
    " set XCE_ADMIN_TOKEN_FILE to a file holding it, or XCE_ADMIN_TOKEN"
)


def _no_token_option(_text: str) -> str:
    raise argparse.ArgumentTypeError(TOKEN_REFUSAL)


def client_token(environ: Mapping[str, str]) -> str | None:
    """The bearer token the client sends: the content of the file
    ``XCE_ADMIN_TOKEN_FILE`` names (white space around it dropped), else
    ``XCE_ADMIN_TOKEN``, else None.

    Raises:
        CliError: the file cannot be used (missing, not a regular file, empty, too
            large), exit status 2; the message names the variable and the file, never
            the token.
    """
    file = environ.get("XCE_ADMIN_TOKEN_FILE")
    if not file:
        return environ.get("XCE_ADMIN_TOKEN") or None
    # Imported here: the kit brings the NATS client in, which a plain call to the API
    # does not need (about 0.3 s).
    from xce_kit.auth import CredentialsError, read_secret_file

    try:
        data = read_secret_file("XCE_ADMIN_TOKEN_FILE", file)
    except CredentialsError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return data.decode("ascii", "replace").strip()


def build_parser() -> argparse.ArgumentParser:
    """The ``xceadmin`` command line."""
    parser = argparse.ArgumentParser(
        prog="xceadmin", description="Administer the XCE scheduler through its admin API."
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("XCE_ADMIN_URL", DEFAULT_URL),
        help="admin API URL (default $XCE_ADMIN_URL or %(default)s)",
    )
    # Refused with a pointer to the environment, not "unrecognized": the option was
    # taken before, and a token on the command line shows in the process list.
    parser.add_argument("--token", type=_no_token_option, help=argparse.SUPPRESS)
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=90.0,
        help="seconds to wait for an answer (default 90)",
    )
    top = parser.add_subparsers(dest="area", required=True, metavar="scheduler")
    sched = top.add_parser("scheduler", help="the scheduler").add_subparsers(
        dest="what", required=True, metavar="{record,recordings,status}"
    )
    record = sched.add_parser("record", help="recording control").add_subparsers(
        dest="action", required=True, metavar="{start,stop,status}"
    )
    start = record.add_parser("start", help="start recording")
    start.add_argument(
        "file", nargs="?", default=None, type=_text, help="file name (default rec-<time>)"
    )
    record.add_parser("stop", help="stop recording and export the file")
    record.add_parser("status", help="the recorder's state")
    sched.add_parser("recordings", help="list the recordings")
    sched.add_parser("status", help="the core's and the recorder's state")
    return parser


def _call(
    args: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None = None
) -> Any:
    """One request; the decoded JSON answer.

    Raises:
        CliError: the server cannot be reached, refuses (4xx) or fails (5xx).
    """
    url = args.url.rstrip("/") + path
    token = client_token(os.environ)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.request(method, url, json=body, headers=headers, timeout=args.timeout)
    except httpx.InvalidURL as exc:
        raise CliError(f"bad --url {args.url!r}: {exc}", EXIT_USAGE) from None
    except httpx.UnsupportedProtocol:
        raise CliError(f"bad --url {args.url!r}: use http:// or https://", EXIT_USAGE) from None
    except httpx.TimeoutException:
        raise CliError(
            f"the admin server at {args.url} did not answer within {args.timeout:g} s",
            EXIT_UNAVAILABLE,
        ) from None
    except httpx.HTTPError as exc:
        raise CliError(
            f"cannot reach the admin server at {args.url} ({exc or type(exc).__name__})",
            EXIT_UNAVAILABLE,
        ) from None
    detail = _detail(response)
    if response.status_code == 401:
        hint = "" if token else " (set XCE_ADMIN_TOKEN_FILE or XCE_ADMIN_TOKEN)"
        raise CliError(f"unauthorized: {detail}{hint}", EXIT_REFUSED)
    if 400 <= response.status_code < 500:
        raise CliError(detail, EXIT_REFUSED)
    if response.status_code >= 300:
        raise CliError(f"server error {response.status_code}: {detail}", EXIT_UNAVAILABLE)
    try:
        return response.json()
    except ValueError:
        raise CliError(f"the server at {args.url} did not answer JSON", EXIT_UNAVAILABLE) from None


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list) and detail:  # FastAPI's validation errors
        first = detail[0]
        if isinstance(first, dict):
            where = ".".join(str(p) for p in first.get("loc", ()))
            return f"{where}: {first.get('msg', 'invalid')}"
    return f"HTTP {response.status_code} {response.reason_phrase}".strip()


def _recorder_line(rec: dict[str, Any]) -> str:
    state = rec.get("state", "?")
    if state in ("recording", "stopping"):
        line = (
            f"recorder: {state} {rec.get('name')} since {rec.get('started')}, events "
            f"{rec.get('start_seq')}..{rec.get('seq')}, {rec.get('lines')} lines, "
            f"{rec.get('snapshots')} snapshots"
        )
    elif state == "exporting":
        line = f"recorder: exporting {rec.get('name')} ({rec.get('lines')} lines)"
    else:
        last = rec.get("last_file")
        line = "recorder: idle" + (f", last recording {last}" if last else "")
    if rec.get("last_error"):
        line += f"; last error: {rec['last_error']}"
    if not rec.get("recorder_up"):
        line += " (the recorder service is not running)"
    return line


def _core_line(core: dict[str, Any] | None) -> str:
    if core is None:
        return "core: never seen"
    beat = core["heartbeat_age_seconds"]
    alive = "no heartbeat" if beat is None else f"heartbeat {beat:.1f} s ago"
    if core.get("holder"):  # core services with standbys: who leads
        alive += f"; leader {core['holder']} (term {core['term']})"
    if core["last_round_ts"] is None:
        return f"core: event seq {core['seq']}, no round yet; {alive}"
    return (
        f"core: event seq {core['seq']}, last round at ts {core['last_round_ts']} "
        f"({core['round_seconds'] * 1000:.1f} ms, {core['age_seconds']:.1f} s ago); "
        f"jobs pending {core['pending']}, running {core['running']}, suspended "
        f"{core['suspended']}; lag {core['lag_seconds']:.3f} s, {core['events_waiting']} "
        f"events waiting; {alive}"
    )


def _text(value: str) -> str:
    """An argparse type: text that can be sent as UTF-8 (a name given in bytes that
    are not UTF-8 reaches Python as lone surrogates, which JSON cannot carry).

    Raises:
        argparse.ArgumentTypeError: saying so, in one line.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise argparse.ArgumentTypeError(f"{shown!r} is not valid UTF-8 text") from None
    return value


def run(args: argparse.Namespace) -> str:
    """Do the command; the text to print.

    Raises:
        CliError: as ``_call``.
    """
    if args.what == "record":
        if args.action == "start":
            rec = _call(args, "POST", "/scheduler/record/start", {"name": args.file})
            return (
                f"recording {rec['name']} from event seq {rec['start_seq']} "
                f"(stop with: xceadmin scheduler record stop)"
            )
        if args.action == "stop":
            rec = _call(args, "POST", "/scheduler/record/stop")
            return f"stopping; the recording will be {rec['name']} in the recordings directory"
        return _recorder_line(_call(args, "GET", "/scheduler/record/status"))
    if args.what == "recordings":
        listed = _call(args, "GET", "/scheduler/recordings")["recordings"]
        if not listed:
            return "no recordings"
        return "\n".join(f"{r['name']}\t{r['size_bytes']}\t{r['modified']}" for r in listed)
    status = _call(args, "GET", "/scheduler/status")
    text = _core_line(status.get("core")) + "\n" + _recorder_line(status["recorder"])
    if status["core_state"] != "scheduling":
        raise CliError(str(status["problem"]), EXIT_NOT_SCHEDULING, output=text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``xceadmin``; the exit status (see the module docstring)."""
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if any(arg == "--token" or arg.startswith("--token=") for arg in given):
        # Wherever it stands (argparse would echo it as an unrecognized argument
        # after the subcommand): refused, its value never repeated.
        parser.error("argument --token: " + TOKEN_REFUSAL)
    args = parser.parse_args(given)
    try:
        print(run(args))
    except CliError as exc:
        if exc.output is not None:
            print(exc.output)
        print(f"xceadmin: error: {exc}", file=sys.stderr)
        return exc.code
    except (KeyError, TypeError, AttributeError):
        print(f"xceadmin: error: unexpected answer from {args.url}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
