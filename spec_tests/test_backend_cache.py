"""The on-disk kernel cache (cutile/cache.py, cutile/numba_backend/diskcache.py; docs/cache.md):
key stability across processes, atomic writes under concurrent writers, recovery from damaged
entries, LRU eviction, location and off switches, ``python -m cutile.cache``, and the backend's
use of it under the CUDA simulator and (when present) on a GPU.  Every test uses its own cache
directory (``CUTILE_CACHE_DIR``)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import cutile as ct
from cutile import cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_GPU = bool(glob.glob("/dev/nvidia[0-9]*"))


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(d))
    monkeypatch.delenv("CUTILE_CACHE", raising=False)
    monkeypatch.delenv("CUTILE_CACHE_SIZE", raising=False)
    monkeypatch.setattr(cache, "stats", cache.Stats())
    return d


def _run(code: str, where, env_extra: dict | None = None, timeout: int = 240) -> str:
    """Run ``code`` as ``where/script.py`` (kernels need a source file) in a new process."""
    script = where / "script.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ)
    env.update(env_extra or {})
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"subprocess failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _key(i: int) -> str:
    return cache.key("test", i)


# -- keys ------------------------------------------------------------------------------------
_KEYS = """
    import json
    import numpy as np
    import cutile as ct
    from cutile.numba_backend import diskcache
    from cutile.numba_backend.compile import compile_kernel
    from cutile.numba_backend.params import argument_types
    C = ct.Constant

    def twice(x):
        return x + x

    def square(x):
        return x * x

    def make(helper):
        @ct.kernel
        def k(a, b, TILE: C[int]):
            bid = ct.bid(0)
            ct.store(b, (bid,), helper(ct.load(a, (bid,), (TILE,))))
        return k

    def make_edited():                       # the kernel's own source differs
        @ct.kernel
        def k(a, b, TILE: C[int]):
            bid = ct.bid(0)
            ct.store(b, (bid,), twice(ct.load(a, (bid,), (TILE,))) + 1)
        return k

    GPU = {"arch": "sm_90", "driver": [13, 0]}

    def key(k, dtype=np.float32, tile=16, target=GPU, layout="C"):
        args = (np.zeros(64, dtype), np.zeros(64, dtype), tile)
        ir = k.compile(k.specialize(args))
        ck = compile_kernel(ir, 64)
        types = argument_types(ir, len(ck.strides_used), (layout,) * ck.n_arrays)
        return diskcache.variant_key(ck.cache_key, types, target)

    base = make(twice)
    out = {"base": key(base), "base_again": key(make(twice)), "helper": key(make(square)),
           "source": key(make_edited()), "constant": key(base, tile=32),
           "dtype": key(base, dtype=np.float16), "arch": key(base, target={**GPU, "arch": "sm_80"}),
           "layout": key(base, layout="A")}
    diskcache._backend_hash = "0" * 64        # as if the generator's code had changed
    out["backend"] = key(base)
    print(json.dumps(out))
"""


def test_key_stable_across_processes_and_sensitive_to_every_input(tmp_path):
    """Same kernel -> same key in two processes (different hash seeds); a change to the
    kernel's source, a helper, a constant, a dtype, the layout, the target or the backend's
    own code -> a new key."""
    pytest.importorskip("numba")
    runs = [json.loads(_run(_KEYS, tmp_path, {"PYTHONHASHSEED": seed,
                                               "NUMBA_ENABLE_CUDASIM": "0"}))
            for seed in ("1", "2")]
    assert runs[0] == runs[1]
    keys = runs[0]
    assert keys["base"] == keys["base_again"]
    changed = {n: k for n, k in keys.items() if n != "base_again"}
    assert len(set(changed.values())) == len(changed), keys


def test_key_is_canonical():
    assert cache.key({"a": 1, "b": [2, 3]}) == cache.key({"b": [2, 3], "a": 1})
    assert cache.key("x", 1) != cache.key("x", "1")
    with pytest.raises(ValueError, match="64 lowercase hex"):
        cache.load("../etc/passwd")


# -- store, load, damage ---------------------------------------------------------------------
def test_store_load_roundtrip_and_meta(cdir):
    k = _key(1)
    assert cache.load(k) is None and cache.stats.misses == 1
    assert cache.store(k, b"\x7fELF cubin", {"kernel": "vadd", "target": "sm_90"})
    e = cache.load(k)
    assert e.payload == b"\x7fELF cubin" and e.meta["kernel"] == "vadd"
    assert cache.stats.hits == 1 and cache.stats.stores == 1
    assert os.listdir(cdir / "kernels") == [k + ".bin"]          # no temporary file left


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "other_key",
                                    "bad_header"])
def test_damaged_entry_is_a_miss_and_replaced(cdir, damage):
    """A damaged or mismatched entry is ignored, deleted and stored again; never an error."""
    k, other = _key(1), _key(2)
    cache.store(k, bytes(range(256)) * 8, {"kernel": "k"})
    cache.store(other, b"other payload", {"kernel": "o"})
    path = cdir / "kernels" / (k + ".bin")
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[:-100])
    elif damage == "flip":
        path.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    elif damage == "garbage":
        path.write_bytes(os.urandom(500))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "other_key":
        path.write_bytes((cdir / "kernels" / (other + ".bin")).read_bytes())
    else:
        path.write_bytes(cache.MAGIC + b"{not json\n" + blob)
    assert cache.load(k) is None
    assert cache.stats.corrupt == 1 and not path.exists()
    assert cache.load(other).payload == b"other payload"
    assert cache.store(k, b"fresh", {"kernel": "k"}) and cache.load(k).payload == b"fresh"


_WRITER = """
    import os, sys
    from cutile import cache
    k, tag, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for i in range(n):
        v = (tag * 64 + i % 64) % 256
        assert cache.store(k, bytes([v]) * 300_000, {"kernel": f"w{tag}", "v": v})
"""


def test_concurrent_writers_never_expose_a_partial_entry(cdir, tmp_path):
    """Two processes rewrite one key 60 times each while this one reads it: every read is a
    whole entry of one writer (payload and header agree), none is damaged."""
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_WRITER))
    k = _key(7)
    env = dict(os.environ, PYTHONPATH=ROOT, CUTILE_CACHE_DIR=str(cdir))
    procs = [subprocess.Popen([sys.executable, str(script), k, str(t), "60"], env=env,
                              stderr=subprocess.PIPE) for t in (1, 2)]
    seen, deadline = set(), time.time() + 120
    while any(p.poll() is None for p in procs) and time.time() < deadline:
        e = cache.load(k)
        if e is not None:
            assert len(e.payload) == 300_000 and set(e.payload) == {e.meta["v"]}
            seen.add(e.meta["kernel"])
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    assert cache.stats.corrupt == 0
    e = cache.load(k)
    assert e is not None and set(e.payload) == {e.meta["v"]}
    assert os.listdir(cdir / "kernels") == [k + ".bin"]
    assert seen                                     # the reader did race the writers


# -- eviction, location, switches ------------------------------------------------------------
def test_lru_eviction_keeps_recently_used(cdir, monkeypatch):
    now = time.time()
    for i in range(5):
        cache.store(_key(i), bytes(1000), {"kernel": f"k{i}"})
        p = cdir / "kernels" / (_key(i) + ".bin")
        os.utime(p, (now - 100 + i, now - 100 + i))   # k0 oldest ... k4 newest
    assert cache.load(_key(0)) is not None            # a hit makes k0 the most recent
    size = (cdir / "kernels" / (_key(0) + ".bin")).stat().st_size
    monkeypatch.setenv("CUTILE_CACHE_SIZE", str(3 * size + 50))   # headers vary by a byte
    stale = cdir / "kernels" / ".tmp-dead.bin"
    stale.write_bytes(b"x")
    os.utime(stale, (now - 2 * cache.STALE_TMP_S, now - 2 * cache.STALE_TMP_S))
    cache.store(_key(9), bytes(1000), {"kernel": "k9"})
    left = {i.meta["kernel"] for i in cache.entries()}
    assert left == {"k0", "k4", "k9"} and cache.stats.evicted == 3
    assert not stale.exists()


def test_size_cap_parsing(monkeypatch):
    from cutile import config
    for v, n in (("1000", 1000), ("512M", 512 << 20), ("2GiB", 2 << 30), ("1.5k", 1536)):
        monkeypatch.setenv("CUTILE_CACHE_SIZE", v)
        assert config.cache_size() == n
    monkeypatch.setenv("CUTILE_CACHE_SIZE", "lots")
    with pytest.raises(ValueError, match="CUTILE_CACHE_SIZE"):
        config.cache_size()


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG applies on Linux/BSD")
def test_location_xdg_and_override(monkeypatch, tmp_path):
    from cutile import config
    monkeypatch.delenv("CUTILE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == str(tmp_path / "xdg" / "cutile" / "kernels")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert config.cache_dir() == os.path.expanduser("~/.cache/cutile")
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(tmp_path / "mine"))
    assert config.cache_dir() == str(tmp_path / "mine")


@pytest.mark.parametrize("env", [{"CUTILE_CACHE": "0"}, {"CUTILE_CACHE_DIR": "off"}])
def test_switched_off(cdir, monkeypatch, env):
    cache.store(_key(1), b"before", {})
    for n, v in env.items():
        monkeypatch.setenv(n, v)
    assert cache.load(_key(1)) is None
    assert not cache.store(_key(2), b"x", {})
    monkeypatch.delenv("CUTILE_CACHE", raising=False)
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(cdir))
    assert [i.key for i in cache.entries()] == [_key(1)]


def test_unwritable_directory_warns_once_and_is_not_fatal(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(blocker))
    monkeypatch.setattr(cache, "_warned", False)
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        assert not cache.store(_key(1), b"x", {})
    assert cache.load(_key(1)) is None


def test_cli_info_and_clear(cdir):
    cache.store(_key(1), bytes(2048), {"kernel": "vadd", "target": "sm_90"})
    cache.store(_key(2), bytes(4096), {"kernel": "matmul", "target": "sm_90"})
    (cdir / "kernels" / ".tmp-x.bin").write_bytes(b"partial")
    code = ("import sys, runpy; sys.argv = ['cutile.cache', sys.argv[1]]; "
            "runpy.run_module('cutile.cache', run_name='__main__'); "
            "assert 'numba' not in sys.modules")
    env = dict(os.environ, PYTHONPATH=ROOT, CUTILE_CACHE_DIR=str(cdir))

    def cli(cmd):
        r = subprocess.run([sys.executable, "-c", code, cmd], env=env, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    out = cli("info")
    assert str(cdir / "kernels") in out and "2 entries" in out
    assert "vadd" in out and "matmul" in out and "sm_90" in out
    assert "cleared" in cli("clear") and not os.listdir(cdir / "kernels")
    assert "0 entries" in cli("info")
    r = subprocess.run([sys.executable, "-m", "cutile.cache", "bogus"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "invalid choice" in r.stderr


# -- the backend -----------------------------------------------------------------------------
def test_storable_refuses_kernels_needing_numba_setup():
    pytest.importorskip("numba")
    from cutile.numba_backend.diskcache import storable

    class Lib:
        _setup_functions, _teardown_functions = [], []

    class K:
        _codelibrary, cooperative, debug, shared_memory_carveout = Lib(), False, False, None

    assert storable(K())
    for attr, v in (("cooperative", True), ("debug", True), ("shared_memory_carveout", 50)):
        k = K()
        setattr(k, attr, v)
        assert not storable(k)
    k = K()
    k._codelibrary = type("L", (), {"_setup_functions": [print], "_teardown_functions": []})()
    assert not storable(k)


_LAUNCH = """
    import json, numpy as np
    import cutile as ct
    from cutile import cache
    from cutile.executors import backend
    C = ct.Constant

    @ct.kernel
    def vadd(a, b, c, TILE: C[int]):
        bid = ct.bid(0)
        ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))

    a = np.arange(64, dtype=np.float32); b = 2 * a; c = np.zeros_like(a)
    with backend("numba"):
        ct.launch(None, (4,), vadd, (a, b, c, 16))
    assert np.array_equal(c, 3 * a), c
    from cutile.numba_backend.compile import _cache
    ck = next(iter(next(iter(_cache.values())).values()))
    print(json.dumps({"hits": cache.stats.hits, "stores": cache.stats.stores,
                      "corrupt": cache.stats.corrupt,
                      "misses": cache.stats.misses, "errors": cache.stats.errors,
                      "key": ck.cache_key, "numba_compiled": len(ck.dispatcher.overloads)
                      if hasattr(ck.dispatcher, "overloads") else None, "path": ck.path}))
"""


def test_simulator_launch_computes_key_and_stores_nothing(cdir, tmp_path):
    """Under the CUDA simulator a launch derives the kernel's cache key (the same in two
    processes) but stores nothing: the simulator runs Python and compiles no cubin (the GPU
    test below covers storing and loading)."""
    pytest.importorskip("numba")
    env = {"NUMBA_ENABLE_CUDASIM": "1", "CUTILE_CACHE_DIR": str(cdir)}
    runs = [json.loads(_run(_LAUNCH, tmp_path, env)) for _ in range(2)]
    assert runs[0]["key"] == runs[1]["key"]
    assert all(r["stores"] == 0 and r["hits"] == 0 and not r["errors"] for r in runs)
    assert cache.entries() == []


@pytest.mark.skipif(not HAVE_GPU, reason="needs a CUDA GPU: the CUDA simulator compiles no "
                                         "cubin to store or load")
@pytest.mark.parametrize("direct", ["1", "0"])
def test_gpu_second_process_loads_the_cubin_without_compiling(cdir, tmp_path, direct):
    """First process: compile (by the direct path, or by Numba with CUTILE_NUMBA_DIRECT=0),
    launch, store; second process: load the cubin, launch, and nothing compiled; a third,
    after the cubin was replaced by garbage (with a valid checksum), recompiles and stores
    again; every result exact."""
    env = {"NUMBA_ENABLE_CUDASIM": "0", "CUTILE_CACHE_DIR": str(cdir),
           "CUTILE_NUMBA_DIRECT": direct}
    compiled_by = "direct" if direct == "1" else "numba: off"
    cold = json.loads(_run(_LAUNCH, tmp_path, env))
    assert cold["stores"] == 1 and cold["hits"] == 0 and not cold["errors"], cold
    assert cold["path"].startswith(compiled_by), cold
    assert len(cache.entries()) == 1
    warm = json.loads(_run(_LAUNCH, tmp_path, env))
    assert warm["hits"] == 1 and warm["stores"] == 0 and not warm["errors"], warm
    assert warm["numba_compiled"] == 0 and warm["key"] == cold["key"]
    assert warm["path"] == "loaded from the disk cache", warm
    # a well-formed entry whose cubin the driver rejects: discarded, recompiled, stored again
    [entry] = cache.entries()
    cache.store(entry.key, b"not a cubin", entry.meta)
    again = json.loads(_run(_LAUNCH, tmp_path, env))
    assert again["hits"] == 0 and again["stores"] == 1 and again["corrupt"] == 1, again
    assert again["path"].startswith(compiled_by), again
    assert again["numba_compiled"] == (0 if direct == "1" else 1)
    assert len(cache.load(entry.key).payload) > 1000


def test_first_call_benchmark_mechanics_under_the_simulator(monkeypatch):
    """benchmarks/first_call.py (run by benchmarks/gpu.py): two fresh processes per workload
    sharing one new cache directory, the required output line, and a timed-out child
    reported rather than fatal.  Under the simulator cold and warm are the same (no cubin)."""
    pytest.importorskip("numba")
    import io
    import re
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    from first_call import first_calls
    buf = io.StringIO()
    [(w, cold, warm, line)] = first_calls(["vadd"], tiny=True, timeout=240, out=buf)
    assert re.search(r"vector add 2\^11 f32: first call cold \d+\.\d s, warm \d+\.\d s",
                     buf.getvalue()), buf.getvalue()
    assert cold["ok"] and warm["ok"] and cold["arrays"] == "numpy"
    assert line in buf.getvalue() and line.startswith("vector add")
    buf = io.StringIO()
    first_calls(["vadd"], tiny=True, timeout=0.05, out=buf)
    assert "first call cold FAILED (timed out after 0 s), warm FAILED" in buf.getvalue()


class _FakeLib:
    _setup_functions: list = []
    _teardown_functions: list = []

    def __init__(self, cubin):
        self.cubin = cubin
        self._entry_name = "_ZN6cutile4vaddE"

    def get_cubin(self):
        return type("ObjectCode", (), {"code": self.cubin})()


class _FakeKernel:
    """What diskcache.save reads of a Numba kernel."""

    cooperative = debug = False
    shared_memory_carveout = None

    def __init__(self, argtypes, cubin=b"\x7fELF fake cubin"):
        self._codelibrary = _FakeLib(cubin)
        self.entry_name = "not used when the library names its entry"
        self.argument_types = argtypes
        self.regs_per_thread = 40


@ct.kernel
def scale(a, b, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(b, (bid,), ct.load(a, (bid,), (TILE,)) * 3)


def test_variant_miss_compiles_and_marks_for_storing_hit_skips_numba(cdir, monkeypatch):
    """compile.Compiled.variant on a GPU (device queries and the cubin load faked): a miss
    compiles through Numba and remembers where to store; after diskcache.save a new process's
    variant comes from the cache (Numba compiles nothing) and is launched on the checked
    packing; a stored cubin that does not load is discarded and recompiled."""
    pytest.importorskip("numba")
    import numpy as np

    from cutile.numba_backend import diskcache
    from cutile.numba_backend.compile import Compiled, compile_kernel

    target = {"arch": "sm_90", "driver": [13, 0]}
    monkeypatch.setattr(diskcache, "current_target", lambda: target)
    monkeypatch.setenv("CUTILE_NUMBA_DIRECT", "0")      # this test is about Numba's path
    args = (np.zeros(64, np.float32), np.zeros(64, np.float32), 16)
    ck = compile_kernel(scale.compile(scale.specialize(args)), 32)
    compiled = []

    class Dispatcher:
        def compile(self, argtypes):
            compiled.append(argtypes)
            return _FakeKernel(argtypes)

    ck.dispatcher = Dispatcher()
    v = Compiled.variant(ck)
    assert len(compiled) == 1 and v.kernel is not None and v.fast is None
    key, tgt = v.disk
    assert tgt == target and key == diskcache.variant_key(ck.cache_key, v.argtypes, target)
    assert cache.load(key) is None
    assert diskcache.save(key, ck, v.kernel, tgt)
    e = cache.load(key)
    assert e.payload == b"\x7fELF fake cubin" and e.meta["entry"] == "_ZN6cutile4vaddE"
    assert e.meta["kernel"] == "scale" and e.meta["target"] == "sm_90"

    # a cubin that does not load (here: no GPU) is discarded and the variant recompiled
    ck.variants.clear()
    v2 = ck.variant()
    assert len(compiled) == 2 and v2.kernel is not None
    assert (cache.stats.hits, cache.stats.corrupt) == (1, 1) and cache.stats.errors
    assert cache.load(key) is None

    # a loaded cubin: no Numba compilation, launched on the stored (checked) packing
    diskcache.save(key, ck, v.kernel, tgt)
    handle = type("Kernel", (), {"attributes": type("A", (), {"num_regs": 40})()})()
    monkeypatch.setattr(diskcache, "load", lambda k: ("objcode", handle) if cache.load(k)
                        else None)
    ck.variants.clear()
    v3 = ck.variant()
    assert len(compiled) == 2 and v3.kernel is None and v3.fast is True
    assert v3.handle() is handle and v3.registers() == 40 and v3.disk is None


def test_save_skips_kernels_without_cubin_bytes(cdir):
    pytest.importorskip("numba")
    from cutile.numba_backend import diskcache
    ck = type("Ck", (), {"name": "k", "T": 32, "smem_bytes": 0})()
    k = _FakeKernel((), cubin=None)
    assert not diskcache.save(cache.key("x"), ck, k, {"arch": "sm_90"})
    assert "no cubin bytes" in cache.stats.errors[-1] and cache.entries() == []


def test_cli_reports_a_malformed_setting(cdir):
    env = dict(os.environ, PYTHONPATH=ROOT, CUTILE_CACHE_DIR=str(cdir), CUTILE_CACHE_SIZE="lots")
    r = subprocess.run([sys.executable, "-m", "cutile.cache", "info"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "CUTILE_CACHE_SIZE" in r.stderr and not r.stdout
