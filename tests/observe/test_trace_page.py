"""`tutti trace html`: the page of the crafted job (tests/observe/data/job) in headless
Chromium, its screenshot against data/trace_page.png, and no network request from it.

A screenshot that differs writes the actual picture and a diff (differing pixels in red)
to TUTTI_TEST_OUTPUT and says where. After a deliberate change of the page,
TUTTI_UPDATE_REFERENCE=1 rewrites the reference (look at it before committing it).
Chromium comes with scripts/dev.sh; without it this test fails rather than skips."""
import json
import os
import re
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "data", "job")
REFERENCE = os.path.join(HERE, "data", "trace_page.png")
TUTTI = os.environ.get("TUTTI_BIN", "tutti")
OUTPUT = os.environ.get("TUTTI_TEST_OUTPUT", os.path.join(os.getcwd(), "observe-output"))
WINDOW = (1200, 600)
CHANNEL_TOLERANCE = 48     # a pixel differs when a channel moves by more (font hinting, anti-aliasing)
PIXELS_ALLOWED = 0.01      # the share of pixels that may differ


def read_png(path):
    """An 8-bit RGB or RGBA PNG as an array of rows x columns x 3."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"{path}: unsupported PNG {header}"
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, stride + 1)
    pixels = np.zeros((height, stride), dtype=np.int32)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + previous) & 0xFF
        else:  # Sub, Average and Paeth depend on the pixel to the left: one at a time
            row = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                left = row[x - channels] if x >= channels else 0
                up = previous[x]
                up_left = previous[x - channels] if x >= channels else 0
                if kind == 1:
                    predicted = left
                elif kind == 3:
                    predicted = (left + up) // 2
                else:
                    p = left + up - up_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                    predicted = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                row[x] = (line[x] + predicted) & 0xFF
        pixels[y] = row
        previous = row
    return pixels.reshape(height, width, channels)[:, :, :3].astype(np.uint8)


def write_png(path, pixels):
    height, width, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].astype(np.uint8).tobytes() for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is missing: it is in scripts/dev.sh's packages; run scripts/dev.sh (or apt-get install "
                "chromium) to test the page of tutti trace html")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("page")
    job = folder / "job"
    shutil.copytree(JOB, job)
    for args in (("merge", str(job)), ("html", str(job / "timeline.json"))):
        result = subprocess.run([TUTTI, "trace", *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
    return job / "timeline.html"


def screenshot(page, folder):
    """The page at a fixed size, once its script has drawn; and the URLs it asked for."""
    picture, net_log = folder / "screenshot.png", folder / "net-log.json"
    # The browser's own background requests are turned off where a switch allows; an
    # unreachable proxy makes sure nothing leaves even so.
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", "--font-render-hinting=none", f"--user-data-dir={folder / 'profile'}",
               "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-default-apps", "--proxy-server=127.0.0.1:9", f"--log-net-log={net_log}",
               f"--screenshot={picture}", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=3000",
               f"file://{page}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=45)
    assert picture.exists(), f"chromium wrote no screenshot (exit {result.returncode}):\n{result.stderr[-2000:]}"
    return picture, net_log


def test_the_page_needs_nothing_outside_itself(page):
    text = page.read_text()
    data = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', text, re.S)
    assert data, "the page lost its embedded data"
    json.loads(data.group(1))
    outside_data = text[:data.start()] + text[data.end():]
    for reference in (r"\b(?:https?|wss?|ftp)://", r"\bsrc\s*=", r"\bhref\s*=", r"@import", r"\burl\(", r"\bfetch\(",
                      r"XMLHttpRequest", r"WebSocket", r"\bimport\("):
        found = re.search(reference, outside_data)
        assert not found, f"the page refers outside itself: ...{outside_data[max(0, found.start() - 60):found.end() + 60]}..."


def test_the_screenshot_matches_the_reference(page, tmp_path):
    picture, net_log = screenshot(page, tmp_path)
    # Requests the page made carry its file:// site; the browser's own carry none.
    log = json.loads(net_log.read_text())
    asked = {e["params"].get("url") for e in log["events"]
             if "file://" in str(e.get("params", {}).get("network_isolation_key", ""))}
    assert not asked - {None}, f"the page made network requests: {sorted(asked - {None})}"

    actual = read_png(picture)
    if os.environ.get("TUTTI_UPDATE_REFERENCE"):
        write_png(REFERENCE, actual)
    expected = read_png(REFERENCE)
    assert actual.shape == expected.shape, f"the screenshot is {actual.shape}, the reference {expected.shape}"
    differs = (np.abs(actual.astype(np.int32) - expected.astype(np.int32)) > CHANNEL_TOLERANCE).any(axis=2)
    share = differs.mean()
    if share >= PIXELS_ALLOWED:
        os.makedirs(OUTPUT, exist_ok=True)
        actual_path, diff_path = os.path.join(OUTPUT, "trace_page.actual.png"), os.path.join(OUTPUT, "trace_page.diff.png")
        write_png(actual_path, actual)
        diff = (expected // 3 + 170).astype(np.uint8)
        diff[differs] = (255, 0, 0)
        write_png(diff_path, diff)
        pytest.fail(f"{share:.2%} of the pixels differ from {REFERENCE} (allowed: {PIXELS_ALLOWED:.0%}); the "
                    f"screenshot is {actual_path}, the differences in red {diff_path}")
    # Not blank: the bars are drawn (all_reduce's blue of the legend and the rows).
    blue = (np.abs(actual.astype(np.int32) - (0x1F, 0x77, 0xB4)) < 8).all(axis=2).mean()
    assert blue > 0.01, "the page shows no all_reduce bar: did its script fail?"
