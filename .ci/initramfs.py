#!/usr/bin/env python3
"""Packs a directory into a gzip-compressed cpio archive in the "newc" format, the format the
kernel unpacks as its initramfs: every file, directory and symlink under DIR, owned by root,
with its mode, and mtime 0 (the same tree gives the same bytes).

    .ci/initramfs.py DIR OUT.cpio.gz
"""
import gzip
import os
import stat
import sys


def entries(root):
    yield ".", os.lstat(root)
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(top, name)
            yield os.path.relpath(path, root), os.lstat(path)


def header(ino, mode, nlink, size, name):
    """A newc header: inode, mode, uid, gid, nlink, mtime, size, four device numbers, the
    name's size with its NUL, check; then the name, padded to 4 bytes."""
    fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name) + 1, 0]
    head = b"070701" + b"".join(b"%08X" % f for f in fields) + name.encode() + b"\0"
    return head + pad(len(head))


def pad(n):
    return b"\0" * (-n % 4)


def main(root, out):
    archive = bytearray()
    for ino, (name, st) in enumerate(entries(root), start=1):
        path = os.path.join(root, name)
        if stat.S_ISLNK(st.st_mode):
            data = os.readlink(path).encode()
        elif stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                data = f.read()
        else:
            data = b""
        nlink = 2 if stat.S_ISDIR(st.st_mode) else 1
        archive += header(ino, st.st_mode, nlink, len(data), name) + data + pad(len(data))
    archive += header(0, 0, 1, 0, "TRAILER!!!")
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write(archive)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
