"""The on-disk cache of compiled kernels, so that a new process skips compilation; and its CLI,
``python -m cutile.cache info|clear``.

An entry is one file ``<dir>/kernels/<key>.bin``: a magic line, one JSON header line (the key,
the payload's length and SHA-256, and what the writer wants shown: kernel name, compute
capability, ...) and the payload (a cubin).  The key is a SHA-256 the caller computes over
everything that determines the payload (``key``).  A writer writes a temporary file in the same
directory and renames it over the entry (atomic on POSIX and Windows), so readers see a whole
entry or none, and concurrent writers of one key leave one whole entry.  A reader that finds a
damaged, truncated or mismatched entry deletes it and reports a miss, never an error.  An
entry's modification time is its last use (a hit touches it); a store that takes the directory
past the size cap (``CUTILE_CACHE_SIZE``) evicts the least recently used entries.

This module is backend-neutral and never imports numba (``cutile/numba_backend/diskcache.py``
decides what to store).  Knobs: ``cutile/config.py``; docs: ``docs/cache.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

from . import config

MAGIC = b"cutile-kernel-cache 1\n"
SUFFIX = ".bin"
TMP_PREFIX = ".tmp-"
STALE_TMP_S = 3600          # a temporary file this old belongs to a writer that died


@dataclass
class Stats:
    """What this process's cache did (tests and benchmarks read it)."""

    hits: int = 0
    misses: int = 0
    stores: int = 0
    corrupt: int = 0
    evicted: int = 0
    errors: list = field(default_factory=list)     # the latest few, newest last

    def note(self, msg: str) -> None:
        """Remember why something was not cached (the last 20 reasons)."""
        self.errors.append(msg)
        del self.errors[:-20]


stats = Stats()
_warned = False


@dataclass
class Entry:
    key: str
    meta: dict
    payload: bytes
    path: str


def key(*parts) -> str:
    """SHA-256 (hex) of JSON-serialisable ``parts``, canonically encoded."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def directory() -> str:
    """The folder holding the entries (``config.cache_dir()/kernels``)."""
    return os.path.join(config.cache_dir(), "kernels")


def _path(k: str) -> str:
    if len(k) != 64 or any(c not in "0123456789abcdef" for c in k):
        raise ValueError(f"cache key must be 64 lowercase hex digits, got {k!r}")
    return os.path.join(directory(), k + SUFFIX)


def _encode(k: str, payload: bytes, meta: dict) -> bytes:
    head = dict(meta, key=k, size=len(payload), sha256=hashlib.sha256(payload).hexdigest(),
                created=time.time())
    return MAGIC + json.dumps(head, sort_keys=True).encode() + b"\n" + payload


def _decode(blob: bytes, k: str | None) -> tuple[dict, bytes] | None:
    """(header, payload) of an entry file's bytes; None when it is not a whole entry for k."""
    if not blob.startswith(MAGIC):
        return None
    nl = blob.find(b"\n", len(MAGIC))
    if nl < 0:
        return None
    try:
        head = json.loads(blob[len(MAGIC):nl])
    except ValueError:
        return None
    payload = blob[nl + 1:]
    if not isinstance(head, dict) or (k is not None and head.get("key") != k):
        return None
    if head.get("size") != len(payload) or \
            head.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return head, payload


def load(k: str) -> Entry | None:
    """The entry stored under key ``k``, or None (missing, disabled, or damaged: deleted)."""
    if not config.cache_enabled():
        return None
    path = _path(k)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        stats.misses += 1
        return None
    got = _decode(blob, k)
    if got is None:
        stats.corrupt += 1
        stats.misses += 1
        discard(k)
        return None
    try:
        os.utime(path)                            # last use, for LRU eviction
    except OSError:
        pass                                      # a read-only cache still serves hits
    stats.hits += 1
    return Entry(k, got[0], got[1], path)


def store(k: str, payload: bytes, meta: dict | None = None) -> bool:
    """Store ``payload`` under ``k`` atomically, then evict past the size cap.  False when the
    cache is off or the directory is not writable (warned once per process)."""
    if not config.cache_enabled():
        return False
    path = _path(k)
    d = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=TMP_PREFIX, suffix=SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(_encode(k, bytes(payload), dict(meta or {})))
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        _warn_once(f"cutile: cannot write the kernel cache in {d} ({e}); compiled kernels are "
                   "not kept between processes (set CUTILE_CACHE_DIR, or CUTILE_CACHE=0)")
        stats.note(f"store {k[:16]}: {e}")
        return False
    finally:
        if tmp is not None:
            _unlink(tmp)
    stats.stores += 1
    evict(config.cache_size())
    return True


def discard(k: str) -> None:
    """Delete the entry of ``k`` if there is one."""
    _unlink(_path(k))


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:                               # gone already (another process), or locked
        return False


def _warn_once(msg: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


@dataclass
class Info:
    """One entry as listed by ``entries`` (the header only is read)."""

    key: str
    path: str
    size: int
    last_used: float
    meta: dict


def _scan() -> tuple[list[os.DirEntry], list[os.DirEntry]]:
    """(entry files, temporary files) of the cache directory."""
    try:
        it = list(os.scandir(directory()))
    except OSError:
        return [], []
    files = [e for e in it if e.is_file() and e.name.endswith(SUFFIX)]
    return ([e for e in files if not e.name.startswith(TMP_PREFIX)],
            [e for e in files if e.name.startswith(TMP_PREFIX)])


def _header(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            line = f.readline()
            if line != MAGIC:
                return None
            return json.loads(f.readline())
    except (OSError, ValueError):
        return None


def entries() -> list[Info]:
    """Every entry, most recently used first (damaged ones with an empty ``meta``)."""
    out = []
    for e in _scan()[0]:
        try:
            st = e.stat()
        except OSError:
            continue
        head = _header(e.path) or {}
        out.append(Info(e.name[:-len(SUFFIX)], e.path, st.st_size, st.st_mtime, head))
    out.sort(key=lambda i: i.last_used, reverse=True)
    return out


def evict(cap: int) -> int:
    """Delete least recently used entries until the total size is at most ``cap`` bytes (and
    temporary files older than an hour); the number of entries deleted."""
    files, tmps = _scan()
    now = time.time()
    for t in tmps:
        try:
            if now - t.stat().st_mtime > STALE_TMP_S:
                _unlink(t.path)
        except OSError:
            pass
    sized = []
    for e in files:
        try:
            st = e.stat()
        except OSError:
            continue
        sized.append((st.st_mtime, st.st_size, e.path))
    total = sum(s for _, s, _ in sized)
    n = 0
    for _, size, path in sorted(sized):
        if total <= cap:
            break
        if _unlink(path):
            n += 1
        total -= size
    stats.evicted += n
    return n


def clear() -> tuple[int, int]:
    """Delete every entry and temporary file: (files deleted, bytes freed)."""
    files, tmps = _scan()
    n = freed = 0
    for e in files + tmps:
        try:
            size = e.stat().st_size
        except OSError:
            continue
        if _unlink(e.path):
            n += 1
            freed += size
    return n, freed


# -- python -m cutile.cache ----------------------------------------------------------------
def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _info(out) -> None:
    cap = _human(config.cache_size())
    items = entries()
    total = sum(i.size for i in items)
    state = "on" if config.cache_enabled() else "off (CUTILE_CACHE=0 or CUTILE_CACHE_DIR=off)"
    print(f"cutile kernel cache: {directory()}", file=out)
    print(f"  state: {state}; size cap {cap} (CUTILE_CACHE_SIZE)", file=out)
    print(f"  {len(items)} entries, {_human(total)}", file=out)
    if items:
        print(f"  {'last used (UTC)':19}  {'size':>10}  {'kernel':24} {'target':8} key",
              file=out)
    for i in items:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(i.last_used))
        name = str(i.meta.get("kernel", "(damaged)"))[:24]
        target = str(i.meta.get("target", "-"))[:8]
        print(f"  {when:19}  {_human(i.size):>10}  {name:24} {target:8} {i.key[:16]}",
              file=out)


def main(argv=None) -> int:
    """``python -m cutile.cache info|clear``."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m cutile.cache",
                                 description="Inspect or empty cutile's on-disk kernel cache.")
    ap.add_argument("command", choices=("info", "clear"),
                    help="info: location, size and entries; clear: delete every entry")
    args = ap.parse_args(argv)
    try:
        if args.command == "info":
            _info(sys.stdout)
        else:
            n, freed = clear()
            print(f"cleared {directory()}: {n} files, {_human(freed)}")
    except ValueError as e:                      # a malformed CUTILE_CACHE_* setting
        print(f"python -m cutile.cache: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
