"""Run NVIDIA's cuTile test suite (``test/`` of NVIDIA/cutile-python) unchanged against cutile,
one pytest process per test file, and tabulate the outcomes; or compare two runs.

    python3 tools/nvidia_suite/run.py --tests /work/.mirror/NVIDIA+cutile-python/repo \\
        --mode cpu --backend interp --jobs 2 --out /tmp/nvsuite-interp
    python3 tools/nvidia_suite/run.py --compare /tmp/a/results.json /tmp/b/results.json

``--tests`` is a bare git dir (``test/`` of HEAD is extracted with ``git archive``), a checkout
holding ``test/``, or the ``test/`` folder itself; it is copied into a temporary directory with
a pytest.ini of our own (NVIDIA's, at the repository root, needs pytest-env and pytest-benchmark
options), so NVIDIA's files are never written into this repository.  ``--mode cpu`` maps CUDA
tensors to host ones (``nvsuite.cpu_mode``; the numba backend then runs on the CUDA simulator);
``--mode gpu`` uses real CUDA tensors.  Each file's log and per-test JSON lines go under
``--out``, with ``results.json`` (per-file counts and per-test outcomes) and ``table.txt``.

A skip whose reason starts with ``not applicable:`` is a test of NVIDIA internals (bytecode,
MLIR, tileiras, the C extension; see ``nvsuite/``): applicable tests = collected - those, and
the pass rate is passed / applicable.  See README.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NA_PREFIX = "not applicable:"
_RUNNING: set = set()            # pytest process groups to kill if the driver is stopped
COLUMNS = ("collected", "passed", "failed", "errors", "n/a", "skipped", "timeout")

PYTEST_INI = """\
[pytest]
python_files = test_*.py
python_functions = test_*
markers =
    use_mlir: needs NVIDIA's MLIR extension
"""


# -- getting the tests --------------------------------------------------------------------------
def extract_tests(src: str, dest: str) -> str:
    """Copy NVIDIA's ``test/`` from ``src`` into ``dest/test``; return that path."""
    src = os.path.abspath(src)
    out = os.path.join(dest, "test")
    if os.path.isfile(os.path.join(src, "HEAD")) and os.path.isdir(os.path.join(src, "objects")):
        archive = subprocess.run(["git", f"--git-dir={src}", "archive", "HEAD", "test"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    elif os.path.isfile(os.path.join(src, "test", "conftest.py")):
        shutil.copytree(os.path.join(src, "test"), out)
    elif os.path.isfile(os.path.join(src, "conftest.py")):
        shutil.copytree(src, out)
    else:
        sys.exit(f"--tests {src}: not a bare git dir, a checkout with test/, or a test/ folder")
    with open(os.path.join(dest, "pytest.ini"), "w") as f:
        f.write(PYTEST_INI)
    return out


def select_files(test_dir: str, only: list[str], skip: list[str]) -> list[str]:
    files = sorted(f for f in os.listdir(test_dir) if f.startswith("test_") and f.endswith(".py"))
    if only:
        files = [f for f in files if any(fnmatch.fnmatch(f, g) for g in only)]
    return [f for f in files if not any(fnmatch.fnmatch(f, g) for g in skip)]


# -- running one file ---------------------------------------------------------------------------
def _limit_memory(gib: float):
    """A ``preexec_fn`` capping the pytest process's address space: in CPU mode a test that
    allocates tens of GiB (``test_list.py::*int64_index*``: 4 x 4 GiB) then fails with an
    allocation error instead of exhausting a shared machine."""
    if not gib:
        return None

    def apply():
        import resource
        limit = int(gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def run_file(name: str, test_dir: str, out: str, env: dict, timeout: float,
             pytest_args: list[str], max_mem_gib: float = 0, shard: tuple = (0, 1)) -> dict:
    stem = name.removesuffix(".py") + (f".s{shard[0]}" if shard[1] > 1 else "")
    log = os.path.join(out, "logs", stem + ".log")
    jsonl = os.path.join(out, "jsonl", stem + ".jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    env = dict(env, NVSUITE_RESULTS=jsonl)
    if shard[1] > 1:
        env["NVSUITE_SHARD"] = f"{shard[0]}/{shard[1]}"
    cmd = [sys.executable, "-m", "pytest", "-c", os.path.join(os.path.dirname(test_dir),
           "pytest.ini"), "-p", "nvsuite.plugin", "-p", "no:cacheprovider", "-q", "-rfE",
           "--tb=short", *pytest_args, name]
    t0 = time.time()
    timed_out = False
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=test_dir, env=env, stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_limit_memory(max_mem_gib))
        _RUNNING.add(proc)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
            logf.write(f"\n[nvsuite] killed after {timeout:.0f} s\n")
        finally:
            _RUNNING.discard(proc)
    return summarize(name, jsonl, rc, timed_out, time.time() - t0, test_dir)


def combine_shards(parts: list[dict]) -> dict:
    """One file's result from its shards' (counts add up; wall time is the longest shard's)."""
    if len(parts) == 1:
        return parts[0]
    tests = {n: t for p in parts for n, t in p["tests"].items()}   # a module-level skip or
    counts = {c: 0 for c in COLUMNS}                                # error shows in every shard
    for t in tests.values():
        counts[t["kind"]] += 1
    counts["timeout"] = sum(p["counts"]["timeout"] for p in parts)
    counts["collected"] = len(tests) + counts["timeout"]
    return {"file": parts[0]["file"], "rc": max(p["rc"] for p in parts),
            "timed_out": any(p["timed_out"] for p in parts),
            "seconds": max(p["seconds"] for p in parts), "counts": counts, "tests": tests}


def _classify(outcome: str, message: str) -> str:
    if outcome in ("passed", "xpassed"):
        return "passed"
    if outcome == "failed":
        return "failed"
    if outcome == "error":
        return "errors"
    if outcome == "skipped" and message.startswith(NA_PREFIX):
        return "n/a"
    return "skipped"                                    # other skips, xfailed


def summarize(name: str, jsonl: str, rc: int, timed_out: bool, seconds: float,
              test_dir: str = "") -> dict:
    collected = 0
    tests: dict[str, dict] = {}
    if os.path.exists(jsonl):
        with open(jsonl) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue                            # a line cut by the kill
                if rec["event"] == "collected":
                    collected = rec["count"]
                    continue
                msg = rec.get("message") or ""
                if test_dir:                            # the temporary path differs per run
                    msg = msg.replace(test_dir + os.sep, "")
                kind = _classify(rec["outcome"], msg)
                prev = tests.get(rec["nodeid"])
                # keep the first non-pass record (a call failure beats a teardown error)
                if prev is None or prev["kind"] == "passed":
                    tests[rec["nodeid"]] = {"kind": kind, "outcome": rec["outcome"],
                                            "phase": rec.get("phase"),
                                            "message": msg[:500]}
    counts = {c: 0 for c in COLUMNS}
    for t in tests.values():
        counts[t["kind"]] += 1
    counts["collected"] = max(collected, len(tests))
    if timed_out:
        counts["timeout"] = counts["collected"] - len(tests)
    elif rc != 5 and not os.path.exists(jsonl) or (rc not in (0, 1, 5)
                                                      and counts["collected"] == len(tests) == 0):
        counts["errors"] += 1                           # pytest itself failed (rc 2/3/4, crash)
        tests[f"{name}::<pytest rc {rc}>"] = {"kind": "errors", "outcome": "error",
                                              "phase": "session", "message": f"pytest rc {rc}"}
    elif rc < 0 or rc > 5:                              # crashed mid-run (signal)
        counts["timeout"] = counts["collected"] - len(tests)
    return {"file": name, "rc": rc, "timed_out": timed_out, "seconds": round(seconds, 1),
            "counts": counts, "tests": tests}


# -- reporting ----------------------------------------------------------------------------------
def rate(c: dict) -> str:
    applicable = c["collected"] - c["n/a"]
    return f"{100.0 * c['passed'] / applicable:5.1f}%" if applicable else "    -"


def table(results: list[dict]) -> str:
    width = max([len("file")] + [len(r["file"]) for r in results]) + 1
    head = f"{'file':<{width}}" + "".join(f"{c:>10}" for c in COLUMNS) + f"{'pass/appl':>10}" \
        + f"{'secs':>8}"
    lines = [head, "-" * len(head)]
    total = {c: 0 for c in COLUMNS}
    for r in sorted(results, key=lambda r: r["file"]):
        c = r["counts"]
        for k in COLUMNS:
            total[k] += c[k]
        mark = " T" if r["timed_out"] else ""
        lines.append(f"{r['file']:<{width}}" + "".join(f"{c[k]:>10}" for k in COLUMNS)
                     + f"{rate(c):>10}" + f"{r['seconds']:>8.0f}{mark}")
    lines.append("-" * len(head))
    lines.append(f"{'TOTAL':<{width}}" + "".join(f"{total[k]:>10}" for k in COLUMNS)
                 + f"{rate(total):>10}" + f"{sum(r['seconds'] for r in results):>8.0f}")
    applicable = total["collected"] - total["n/a"]
    lines.append(f"applicable = collected - n/a = {applicable}; passed {total['passed']} "
                 f"({rate(total).strip()}); 'skipped' are other skips (hardware, versions, "
                 "xfail); T = file killed by --timeout")
    return "\n".join(lines)


def _kill_all() -> None:
    for proc in list(_RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def _on_sigterm(*_):
    raise KeyboardInterrupt


def write_results(out: str, results: list[dict], meta: dict) -> None:
    text = table(results)
    print(text)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta,
                   "files": {r["file"]: {k: r[k] for k in ("rc", "timed_out", "seconds",
                                                           "counts")} for r in results},
                   "tests": {n: t for r in results for n, t in r["tests"].items()}},
                  f, indent=1)
    print(f"results: {out}/results.json, table: {out}/table.txt")


def merge(out: str, paths: list[str]) -> None:
    """One results.json and table from several runs' (e.g. one device call per part of the
    suite); a file present in several keeps the last one's outcome."""
    files: dict[str, dict] = {}
    metas = []
    for path in paths:
        data = json.load(open(path))
        metas.append(data["meta"])
        per_file: dict[str, dict] = {}
        for n, t in data["tests"].items():
            per_file.setdefault(n.split("::")[0].rsplit("/", 1)[-1], {})[n] = t
        for name, info in data["files"].items():
            files[name] = dict(info, file=name, tests=per_file.get(name, {}))
    os.makedirs(out, exist_ok=True)
    write_results(out, list(files.values()), {"merged": metas})


def compare(a_path: str, b_path: str) -> None:
    """Tests that pass in A and do not pass in B, with B's first failure line."""
    a = json.load(open(a_path))["tests"]
    b = json.load(open(b_path))["tests"]
    worse = [(n, b.get(n)) for n, t in sorted(a.items())
             if t["kind"] == "passed" and (b.get(n) is None or b[n]["kind"] != "passed")]
    better = [n for n, t in b.items() if t["kind"] == "passed"
              and (a.get(n) is None or a[n]["kind"] != "passed")]
    for n, t in worse:
        what = "missing" if t is None else f"{t['kind']}: {t['message'].splitlines()[0][:200]}" \
            if t["message"] else t["kind"]
        print(f"{n}\n    {what}")
    print(f"\n{len(worse)} pass in {a_path} but not in {b_path}; {len(better)} the other way")


# -- main ---------------------------------------------------------------------------------------
def _globs(values: list[str] | None) -> list[str]:
    return [g for v in (values or []) for g in v.split(",") if g]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", help="bare git dir, checkout with test/, or the test/ folder")
    p.add_argument("--mode", choices=("gpu", "cpu"), default="gpu")
    p.add_argument("--backend", choices=("interp", "numba"), default="interp")
    p.add_argument("--jobs", type=int, default=1, help="test files run at a time")
    p.add_argument("--timeout", type=float, default=600, help="seconds per file")
    p.add_argument("--shards", type=int, default=1, metavar="K",
                   help="run each big file as K pytest processes (every K-th test each)")
    p.add_argument("--shard-min-kb", type=float, default=16,
                   help="files at least this big (KiB) are sharded (default 16)")
    p.add_argument("--only", action="append", help="file globs to run (comma-separated)")
    p.add_argument("--skip", action="append", help="file globs to leave out")
    p.add_argument("--out", default=None, help="output folder (default: a temporary one)")
    p.add_argument("--max-mem", type=float, default=None, metavar="GIB",
                   help="address-space cap per pytest process (default: 6 in CPU mode, none "
                        "on the GPU, where CUDA maps far more address space than it uses)")
    p.add_argument("--pytest-args", default="", help="extra pytest arguments, one string")
    p.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                   help="list the tests that pass in A and not in B")
    p.add_argument("--merge", nargs="+", metavar="RESULTS.json",
                   help="combine several runs' results.json into --out")
    args = p.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    if args.merge:
        merge(os.path.abspath(args.out or "."), args.merge)
        return 0
    if not args.tests:
        p.error("--tests is required (or --compare)")

    out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="nvsuite-out-"))
    for sub in ("logs", "jsonl"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    work = tempfile.mkdtemp(prefix="nvsuite-tests-")
    signal.signal(signal.SIGTERM, _on_sigterm)
    pool = None
    try:
        test_dir = extract_tests(args.tests, work)
        files = select_files(test_dir, _globs(args.only), _globs(args.skip))
        if not files:
            sys.exit("no test files selected")
        env = dict(os.environ, NVSUITE_MODE=args.mode, CUTILE_BACKEND=args.backend)
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "site"), HERE, ROOT] + [
            x for x in env.get("PYTHONPATH", "").split(os.pathsep) if x])
        if args.mode == "cpu" and args.backend == "numba":
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        pytest_args = args.pytest_args.split()
        # the biggest files first, so that they do not finish last alone
        order = sorted(files, key=lambda f: -os.path.getsize(os.path.join(test_dir, f)))
        print(f"{len(files)} files, mode={args.mode}, backend={args.backend}, jobs={args.jobs}, "
              f"timeout={args.timeout:.0f}s, out={out}", flush=True)
        results = []
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs))
        max_mem = args.max_mem if args.max_mem is not None else (6 if args.mode == "cpu" else 0)
        tasks = [(f, (i, k)) for f in order
                 for k in [args.shards if os.path.getsize(os.path.join(test_dir, f))
                           >= args.shard_min_kb * 1024 else 1] for i in range(k)]
        futs = [pool.submit(run_file, f, test_dir, out, env, args.timeout, pytest_args, max_mem,
                            shard) for f, shard in tasks]
        parts: dict[str, list] = {}
        for fut in concurrent.futures.as_completed(futs):
            part = fut.result()
            done = parts.setdefault(part["file"], [])
            done.append(part)
            if len(done) < sum(1 for f, _ in tasks if f == part["file"]):
                continue
            r = combine_shards(done)
            results.append(r)
            c = r["counts"]
            print(f"  {r['file']}: {c['passed']}/{c['collected']} passed, {c['failed']} "
                  f"failed, {c['errors']} errors, {c['n/a']} n/a"
                  f"{', TIMED OUT' if r['timed_out'] else ''} ({r['seconds']:.0f} s)",
                  flush=True)
        pool.shutdown()
    except KeyboardInterrupt:                   # Ctrl-C, or SIGTERM (a device call's limit)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        _kill_all()
        print("interrupted: writing the files finished so far", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    meta = {"mode": args.mode, "backend": args.backend, "tests": args.tests,
            "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    write_results(out, results, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
