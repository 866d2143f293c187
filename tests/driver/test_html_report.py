"""Tests of the HTML page (``experiments.html_report``): escaped, deterministic,
self-contained; and ``simulate --html`` opened in a real headless Chromium (Debian's
``/usr/bin/chromium`` through playwright's Python API; playwright never downloads a
browser of its own here), where every image must load and nothing but the file
itself may be fetched.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from xce_driver.cli import main
from xce_driver.experiments.html_report import render_html, write_html

CHROMIUM = Path("/usr/bin/chromium")
#: Chromium's switches: headless, and nothing that reaches for the network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SMALL = ["--jobs", "300", "--hosts", "32"]
#: A 1×1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360f8cfc0f01f0005000201a2e0b1f10000000049454e44ae426082"
)


def test_text_is_escaped_and_numbers_right_aligned(tmp_path):
    image = tmp_path / "a<b>.png"
    image.write_bytes(PIXEL)
    text = render_html(
        "<script>alert(1)</script> & co",
        [("cap <i>", ["name", "n"], [["<b>x</b>", 1234], ["y", 0.5], ["z", None]])],
        [image],
        notes=['a "note" <here>'],
    )
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in text
    assert "<td>&lt;b&gt;x&lt;/b&gt;</td>" in text
    assert '<td class="num">1,234</td>' in text and '<td class="num">0.5</td>' in text
    assert '<td class="num">n/a</td>' in text
    assert "<caption>cap &lt;i&gt;</caption>" in text
    assert "<p>a &quot;note&quot; &lt;here&gt;</p>" in text
    assert "<figcaption>a&lt;b&gt;</figcaption>" in text


def test_a_column_of_figures_with_units_is_right_aligned():
    text = render_html("t", [("c", ["size", "what"], [["3-4", "5,658 s"], ["1", "easy"]])], [])
    assert '<td class="num">3-4</td>' in text and "<td>easy</td>" in text
    assert "<td>5,658 s</td>" in text  # its column holds a word too
    # A header stands over its column as the column's cells do.
    assert '<th class="num">size</th>' in text and "<th>what</th>" in text


def test_page_is_self_contained_and_deterministic(tmp_path):
    image = tmp_path / "fig.png"
    image.write_bytes(PIXEL)
    pages = [tmp_path / "a.html", tmp_path / "b.html"]
    for page in pages:
        write_html(page, "t", [("c", ["x"], [[1]])], [image])
    assert pages[0].read_bytes() == pages[1].read_bytes()
    text = pages[0].read_text(encoding="utf-8")
    assert '<img src="data:image/png;base64,' in text
    # Nothing to fetch: every src and href is a data: URI, and there is no script.
    assert re.findall(r'(?:src|href)="(?!data:)', text) == []
    assert "<script" not in text and "@import" not in text and "url(" not in text


def test_an_image_of_another_kind_is_refused(tmp_path):
    other = tmp_path / "fig.gif"
    other.write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match=re.escape("cannot embed a .gif file")):
        render_html("t", [], [other])


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through playwright; skips without either."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright (Python) is not installed"
    )
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_simulate_html_opens_in_chromium_with_every_figure(browser, tmp_path, capsys):
    page_path = tmp_path / "run.html"
    figures = tmp_path / "figures"
    argv = ["simulate", *SMALL, "--quiet", "--html", str(page_path), "--plot", str(figures)]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""
    pngs = sorted(figures.glob("*.png"))
    assert len(pngs) == 4
    # A copy in a folder of its own: the page must not lean on the figures beside it.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(page_path, alone / "run.html")
    url = (alone / "run.html").as_uri()

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url, wait_until="load")
    images = page.evaluate(
        "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt])"
    )
    shot = page.screenshot(full_page=True)
    title = page.title()
    page.close()

    assert len(images) == len(pngs)
    assert all(complete and width > 0 for complete, width, _ in images), images
    assert sorted(alt for _, _, alt in images) == sorted(p.stem for p in pngs)
    # data: URIs are decoded in the page, not fetched; anything else is a request out.
    assert [r for r in requests if not r.startswith("data:")] == [url]
    assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 50_000
    assert title.startswith("xce-sched simulate: ")
