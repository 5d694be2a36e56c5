#!/usr/bin/env python3
"""Checks that a browser's screenshot of coldtrace's picture is not blank.

Usage: .ci/png_check.py SCREENSHOT.png [COLOUR=MIN_PIXELS ...]

Decodes the PNG with the standard library only (zlib, struct): 8-bit RGB or RGBA, the five
row filters. Prints what it measured, then fails (exit 1) unless the picture has several
distinct colours, a share of non-white pixels that a drawn page has (not 0, not a flood), and
at least MIN_PIXELS pixels near each COLOUR given (hex RRGGBB, within 24 per channel).
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        sys.exit(f"{path}: only 8-bit RGB/RGBA, not interlaced (got depth {depth}, type {colour})")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        previous = line
    pixels = [
        tuple(row[x * channels:x * channels + 3]) for row in rows for x in range(width)
    ]
    return width, height, pixels


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path, wanted = sys.argv[1], sys.argv[2:]
    width, height, pixels = decode(path)
    total = len(pixels)
    non_white = sum(1 for p in pixels if p != (255, 255, 255))
    distinct = len(set(pixels))
    coarse = len({(r >> 4, g >> 4, b >> 4) for r, g, b in pixels})
    print(f"{path}: {width}x{height}, non-white {non_white / total:.1%} of pixels, "
          f"{distinct} distinct colours ({coarse} at 4 bits a channel)")
    failures = []
    if not 0.02 <= non_white / total <= 0.6:
        failures.append(f"non-white share {non_white / total:.1%} is not within 2%-60%")
    if coarse < 12:
        failures.append(f"only {coarse} distinct colours at 4 bits a channel (want 12 or more)")
    for item in wanted:
        hex_colour, minimum = item.split("=")
        target = tuple(int(hex_colour[i:i + 2], 16) for i in (0, 2, 4))
        near = sum(1 for p in pixels if all(abs(a - b) <= 24 for a, b in zip(p, target)))
        print(f"  #{hex_colour}: {near} pixels (want {minimum} or more)")
        if near < int(minimum):
            failures.append(f"#{hex_colour}: {near} pixels, fewer than {minimum}")
    for failure in failures:
        print(f"FAIL: {failure}")
    sys.exit(1 if failures else 0)


main()
