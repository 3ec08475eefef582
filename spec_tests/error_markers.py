"""Errors that must point at the user's line: a test file marks the offending line of a kernel
with ``# E:<marker>`` and asserts the error names that file and line.

One definition shared by the error-reporting tests (test_errors, test_static, the Python-subset
files), so the check of "file, line and caret" means the same everywhere."""

from __future__ import annotations

import os
import re

import pytest

import cutile as ct


def for_file(path: str, strict: bool = False):
    """``(line_of, expect_error)`` for the test file at ``path``.

    ``line_of(marker)``: the line carrying ``# E:<marker>``.  ``expect_error(kernel, args, cls,
    fragment, marker, grid=(1,))``: launching raises ``cls`` matching ``fragment``, whose location
    (or one of its callers') is the marked line and whose text names the file.  ``strict`` also
    requires ``line N`` and a caret in the text and no chained internal exception."""
    with open(path) as f:
        src = f.read().splitlines()
    name = os.path.basename(path)

    def line_of(marker: str) -> int:
        pat = re.compile(rf"# E:{re.escape(marker)}(\s|$)")
        for i, line in enumerate(src, start=1):
            if pat.search(line):
                return i
        raise AssertionError(f"marker {marker} not found in {name}")

    def expect_error(kernel, args, cls, fragment, marker, grid=(1,)):
        with pytest.raises(cls, match=fragment) as info:
            ct.launch(None, grid, kernel, args)
        e = info.value
        assert e.loc is not None, "error carries no location"
        want, frames, loc = line_of(marker), [], e.loc
        while loc is not None:
            frames.append(loc.line)
            loc = loc.caller
        assert want in frames, f"error points at lines {frames}, expected {want}"
        text = str(e)
        assert name in text
        if strict:
            assert f"line {want}" in text
            assert "^" in text                   # caret under the expression
            assert e.__cause__ is None           # no internal traceback chained to user mistakes
        return e

    return line_of, expect_error
