"""One self-contained HTML page of results: tables, then figures.

The page needs nothing but itself: the style is inline, every image is a ``data:``
URI (base64), there is no script, no font, no link to anything (its icon is an
empty ``data:`` URI, so that a browser does not ask the server for
``/favicon.ico``). It opens from a mail attachment or an air-gapped cluster the same.
All text is escaped (``html.escape``), and the page holds no date or path, so the
same input gives the same bytes.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Sequence
from pathlib import Path

#: MIME type of an embedded image, by file suffix.
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}

_STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; }
table { border-collapse: collapse; margin: 1em 0 2em; }
.wide { overflow-x: auto; }
caption { font-weight: bold; text-align: left; padding-bottom: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-family: monospace; color: #555; }
"""

_LEADING_NUMBER = re.compile(r"[-+]?[0-9]")

#: A table: its caption, its header, its rows.
Table = tuple[str, Sequence[str], Sequence[Sequence[object]]]


def cell_text(value: object) -> str:
    """How a cell shows ``value``: None as ``n/a``, a whole number with thousands
    separators, a float to 2 decimals from 100 up and to 4 significant digits below
    (as ``compare`` prints them), anything else as ``str``."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    return f"{value:,.2f}" if abs(value) >= 100 else f"{value:.4g}"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def numeric_columns(width: int, rows: Sequence[Sequence[object]]) -> list[bool]:
    """Which of ``width`` columns to right-align: those whose every cell is a number,
    empty, ``n/a``, or a text that starts with a number (a figure with its unit or
    ratio: ``"5,658 / 0 s"``, ``"29.5%"``, ``"1,730.93 (1.12)"``, a size class
    ``"3-4"``)."""
    numeric = [True] * width
    for row in rows:
        for index, value in enumerate(row[:width]):
            if value is None or _is_number(value) or value in ("", "n/a"):
                continue
            if not (isinstance(value, str) and _LEADING_NUMBER.match(value)):
                numeric[index] = False
    return numeric


def _table(caption: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    # A wide table scrolls in its own box rather than running off the page.
    out = ['<div class="wide">', "<table>", f"<caption>{html.escape(caption)}</caption>"]
    numeric = numeric_columns(max([len(header), *map(len, rows)]), rows)
    out += ["<thead><tr>"]
    # A header stands over its column as the column's cells do.
    out += [
        f'<th class="num">{html.escape(str(name))}</th>'
        if numeric[index]
        else f"<th>{html.escape(str(name))}</th>"
        for index, name in enumerate(header)
    ]
    out += ["</tr></thead>", "<tbody>"]
    for row in rows:
        cells = "".join(
            f'<td class="num">{html.escape(cell_text(value))}</td>'
            if numeric[index]
            else f"<td>{html.escape(cell_text(value))}</td>"
            for index, value in enumerate(row)
        )
        out.append(f"<tr>{cells}</tr>")
    out += ["</tbody>", "</table>", "</div>"]
    return out


def _image(path: Path) -> list[str]:
    kind = IMAGE_TYPES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(IMAGE_TYPES)
        raise ValueError(f"{path}: cannot embed a {path.suffix or 'suffix-less'} file ({known})")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    stem = html.escape(path.stem)
    return [
        "<figure>",
        f'<img src="data:{kind};base64,{data}" alt="{stem}">',
        f"<figcaption>{stem}</figcaption>",
        "</figure>",
    ]


def render_html(
    title: str, tables: Sequence[Table], images: Sequence[Path], notes: Sequence[str] = ()
) -> str:
    """The page ``write_html`` writes, as text.

    Raises:
        OSError: an image cannot be read.
        ValueError: an image is not PNG, SVG or JPEG (by its suffix).
    """
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    out += [f"<p>{html.escape(note)}</p>" for note in notes]
    for caption, header, rows in tables:
        out += _table(caption, header, rows)
    for path in images:
        out += _image(path)
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def write_html(
    path: Path,
    title: str,
    tables: Sequence[Table],
    images: Sequence[Path],
    notes: Sequence[str] = (),
) -> None:
    """Write one self-contained HTML page (see the module docstring).

    Args:
        path: the file to write (UTF-8).
        title: the page's title and heading.
        tables: each table's caption, header and rows, in order; numbers (not
            booleans) are right-aligned, and so is a column of texts that all start
            with one; None shows as ``n/a``, numbers as ``cell_text`` says.
        images: PNG (or SVG, JPEG) files embedded in order, each captioned with its
            file stem.
        notes: paragraphs under the title (approximations, what was left out).

    Raises:
        OSError: an image cannot be read, or ``path`` cannot be written.
        ValueError: an image of another kind.
    """
    text = render_html(title, tables, images, notes)
    Path(path).write_text(text, encoding="utf-8")
