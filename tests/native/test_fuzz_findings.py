"""The inputs that crashed (SIGSEGV), hung or ended `tlview ingest` with a traceback, found
by fuzzing the ingest under AddressSanitizer + UndefinedBehaviorSanitizer (fixtures/fuzz/,
its README says what each one did). Each goes through the real `tlview ingest`, with the
compiled core and with the Python parsers (TLVIEW_NATIVE=0): a readable dump is ingested
with the same events both ways; anything else is one line naming the file, the byte and
what was expected, exit 2, and the database exactly as it was.
"""

from __future__ import annotations

import gzip
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from tlview.cli import main
from tlview.ingest import native
from tlview.ingest.pickle_stream import MAX_NESTING, MAX_VALUES_FLOOR, MAX_VALUES_PER_BYTE
from tlview.store import open_database
from tlview.store.digest import source_digest

from tests.conftest import FIXTURES, SEED_002, native_built
from tests.ingest.test_inductor_ir_bad_input import snapshot

FUZZ = FIXTURES / "fuzz"
MODES = ["compiled", "python"]

# Readable dumps: ingested, the compiled core's rows equal the Python parsers'.
READABLE = [
    "xla_parameter_without_shape",  # compiled: out-of-bounds read (-1 through a uint32)
    "xla_output_shape_without_shape",
    "snapshot_memo_rewrite_frozen_chunk.pickle.gz",  # compiled: rejected (memo chunk wiped)
    "snapshot_float_key_9.25e18_float_cast.pickle",  # compiled: float -> int64 out of range
    "snapshot_set_226k_items_quadratic.pickle.gz",  # compiled: 58 s (linear duplicate checks)
    "snapshot_dict_160k_int_keys_quadratic.pickle.gz",  # compiled: 28 s
    "kineto_deviceProperties_not_list.pt.trace.json",  # both: TypeError traceback
    "output_code_rand_strided_one_arg.output_code.py",  # both: IndexError traceback
    "torch_trace_ts_1e99999999999.log.gz",  # both: decimal.Overflow traceback
    # a set where torch writes a list of sizes (found by CI's campaign): TypeError traceback
    "flight_recorder_set_in_sizes/fr_trace_rank_2",
    # found by the Flight Recorder twin's sanitizer campaign (seed 2511); both: tracebacks
    "flight_recorder_duration_1e308_overflow/nccl_trace_rank_2.json",  # OverflowError
    "flight_recorder_surrogate_in_text/nccl_trace_rank_1.json",  # UnicodeEncodeError
    # a frame interned before, as an entry's key: its text named an address (rows differed)
    "flight_recorder_frame_as_key/nccl_trace_rank_3",
]

# Not snapshots torch writes: the byte and the message both parsers give.
DEEP = (f"data nested deeper than {MAX_NESTING} levels: expected the plain data torch "
        "writes (dicts, lists, text and numbers a few levels deep)")
CYCLE = ("that contains itself: expected the plain data torch writes (dicts, lists, text "
         "and numbers, no cycles)")
REJECTED = {
    # compiled: SIGSEGV (unbounded recursion); Python: RecursionError traceback
    "snapshot_self_list_min.pickle": f"byte 40: a list {CYCLE}",
    "snapshot_cyclic_frames_list_fuzz.pickle.gz": f"byte 9,965: a dict {CYCLE}",
    "snapshot_nesting_2000_recursionerror.pickle": f"byte 4,036: {DEEP}",
    # a million levels; compiled: SIGSEGV in to_py, in the values' destructors, in hashable
    "snapshot_deep_nesting_to_py.pickle.gz": f"byte 2,000,036: {DEEP}",
    "snapshot_deep_nesting_dtor.pickle.gz": f"byte 2,000,016: {DEEP}",
    "snapshot_deep_tuple_key_hashable.pickle.gz":
        f"byte 1,000,033: a dict key or set member nested deeper than {MAX_NESTING} levels: "
        "expected the plain data torch writes (dicts, lists, text and numbers as keys)",
    # JSON nested 900,000 deep (seed 2511); both: RecursionError traceback
    "flight_recorder_json_nesting_recursionerror/fr_trace_rank_2.json.gz":
        "data nested too deep for Python's JSON reader; expected the JSON of a Flight "
        "Recorder dump",
}


# Inputs of formats with no compiled twin: only the Kineto, Inductor IR, XLA buffer
# assignment, allocator snapshot and Flight Recorder readers ask for the compiled
# core (ingest/native.py's module()), so for these TLVIEW_NATIVE changes nothing and a
# "compiled" ingest would be the Python one again. Each is ingested once, by the Python
# parsers, and that run checks that no reader asked for the core (_asks_for_core).
NO_TWIN = {
    "output_code_rand_strided_one_arg.output_code.py",
    "torch_trace_ts_1e99999999999.log.gz",
}


def _asks_for_core(mp: pytest.MonkeyPatch) -> list[int]:
    """A list that gets an item each time a reader asks for the compiled core."""
    asked: list[int] = []
    real = native.module

    def module() -> Any:
        asked.append(1)
        return real()

    mp.setattr(native, "module", module)
    return asked


def _same_error(err: str, want: str, mode: str) -> None:
    """One line: the Python parser's word for word; the compiled one's at the same place
    (the file and the byte or line before the message), its wording free."""
    if mode == "python":
        assert err == want
    else:
        n = 3 if ": byte " in want else 2  # "tlview", the file[:line], [the byte]
        assert err.count("\n") == 1 and err.split(": ")[:n] == want.split(": ")[:n], (err, want)


def _use(mode: str, mp: pytest.MonkeyPatch) -> None:
    if mode == "compiled" and not native_built():
        pytest.skip("the compiled ingest core is not built")
    mp.setenv("TLVIEW_NATIVE", "1" if mode == "compiled" else "0")


@pytest.fixture(scope="module")
def one_seed(alone: Any) -> Path:
    """Seed 002 alone in a database (made once per test process), which tests copy."""
    return alone(SEED_002)[0]


def _ingest(db: Path, path: Path) -> tuple[int, float]:
    t = time.perf_counter()
    code = main(["ingest", "--db", str(db), "-j", "1", str(path)])
    return code, time.perf_counter() - t


def _both(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], twin: bool = True
          ) -> dict[str, tuple[int, str, float]]:
    """Each parser's (exit code, stderr, seconds) ingesting ``path`` into a new database
    (tmp_path / "<mode>.duckdb"); the Python parsers' alone where the format has no
    compiled twin (``twin`` false: see NO_TWIN)."""
    out = {}
    for mode in MODES if twin else ["python"]:
        with pytest.MonkeyPatch.context() as mp:
            _use(mode, mp)
            asked = _asks_for_core(mp)
            code, seconds = _ingest(tmp_path / f"{mode}.duckdb", path)
        assert twin or not asked, "a reader of this format asks for the compiled core"
        out[mode] = (code, capsys.readouterr().err, seconds)
    return out


def _ingests_alike(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                   twin: bool = True) -> list[Path]:
    """``path`` ingests with both parsers (the Python ones alone where ``twin`` is false),
    the same rows, in seconds; the databases."""
    runs = _both(path, tmp_path, capsys, twin)
    digests = []
    for mode, (code, err, seconds) in runs.items():
        assert code == 0 and "Traceback" not in err, err
        # the quadratic duplicate checks took 28-58 s and the FX scan over 60 s
        assert seconds < 20, (mode, seconds)
        with open_database(tmp_path / f"{mode}.duckdb", read_only=True) as d:
            digests.append(source_digest(d, 1))
    assert all(d == digests[0] for d in digests)
    return [tmp_path / f"{mode}.duckdb" for mode in runs]


@pytest.mark.parametrize("name", READABLE)
def test_readable_dump_ingests_alike(name, tmp_path, capsys):
    _ingests_alike(FUZZ / name, tmp_path, capsys, twin=name not in NO_TWIN)


@pytest.mark.parametrize("name,mode", [(n, m) for n in sorted(REJECTED) for m in MODES
                                       if m == "python" or n not in NO_TWIN])
def test_bad_snapshot_is_one_line(name, mode, one_seed, tmp_path, capsys, monkeypatch):
    _use(mode, monkeypatch)
    asked = _asks_for_core(monkeypatch)
    db = tmp_path / "db.duckdb"
    shutil.copy(one_seed, db)
    before = snapshot(db)
    path = FUZZ / name
    code, _ = _ingest(db, path)
    err = capsys.readouterr().err
    assert code == 2
    _same_error(err, f"tlview: {path}: {REJECTED[name]}\n", mode)
    assert snapshot(db) == before
    assert name not in NO_TWIN or not asked  # one run is the whole check (NO_TWIN)


def _bomb(at: int) -> str:
    """The refusal of a memo-read bomb at byte ``at`` (the bound's rule, pickle_stream)."""
    limit = MAX_VALUES_FLOOR + MAX_VALUES_PER_BYTE * at
    return (f"byte {at:,}: memo reads repeat containers into more than {limit:,} values by "
            f"this byte ({MAX_VALUES_FLOOR:,} plus {MAX_VALUES_PER_BYTE} per byte read): "
            "expected the plain data torch writes (dicts, lists, text and numbers, each "
            "written out where it is used)")


class TestMemoBombs:
    """A real snapshot given a list that repeats one list through pickle's memo
    (fixtures/gen/make_memo_bombs.py): a few KB that every reader of the values wrote out
    to 2**42 values (at the top) or 2**18 per trace entry that reads it (both parsers ran
    past any time limit, the Python one past 40 s on the smaller). Each is refused where
    the values handed over pass the bound, one line and exit 2, the database as it was."""

    def _refused(self, name: str, mode: str, one_seed: Path, tmp_path: Path,
                 capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch) -> str:
        _use(mode, mp)
        db = tmp_path / "db.duckdb"
        shutil.copy(one_seed, db)
        before = snapshot(db)
        code, seconds = _ingest(db, FUZZ / name)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert seconds < 20
        assert snapshot(db) == before
        return err

    @pytest.mark.parametrize("mode", MODES)
    def test_at_the_top(self, mode, one_seed, tmp_path, capsys, monkeypatch):
        path = FUZZ / "snapshot_memo_bomb_top.pickle.gz"
        stop = len(gzip.decompress(path.read_bytes())) - 1  # the top object: at STOP
        err = self._refused(path.name, mode, one_seed, tmp_path, capsys, monkeypatch)
        _same_error(err, f"tlview: {path}: {_bomb(stop)}\n", mode)

    def test_read_by_entries(self, one_seed, tmp_path, capsys, monkeypatch):
        """Each entry under the bound, their sum past it: refused inside the trace, at the
        same byte by both parsers (the compiled one counts the entries it reads on its
        fast path as the Python reader counts them)."""
        import pickletools

        name = "snapshot_memo_bomb_entries.pickle.gz"
        data = gzip.decompress((FUZZ / name).read_bytes())
        errs = {mode: self._refused(name, mode, one_seed, tmp_path, capsys, monkeypatch)
                for mode in MODES}
        at = int(errs["python"].split(": byte ")[1].split(":")[0].replace(",", ""))
        _same_error(errs["python"], f"tlview: {FUZZ / name}: {_bomb(at)}\n", "python")
        _same_error(errs["compiled"], errs["python"], "compiled")
        ops = [(op.name, pos) for op, _, pos in pickletools.genops(data)]
        # an opcode that hands an entry over (the next one's dict, or the batch's end),
        # inside the trace: not at STOP, where the top object (its copy) is handed over
        assert at in {pos for op, pos in ops if op in ("EMPTY_DICT", "APPENDS")}
        assert ops[-1][0] == "STOP" and at < ops[-1][1]


def test_long_chain_of_mutations(tmp_path, capsys):
    """Scheduler IR where each buffer mutates the one before (1,500 nodes): the last one,
    a graph output, closes at the end and each before it closes in turn. The Python
    parser's recursive close raised RecursionError (the compiled one recursed as deep)."""
    node = SEED_002.read_text().split("op0.group.device = cuda:0\n")[0]
    head, outputs = node.split("op0.outputs = [\n")
    head = head.split("op0.met_dependencies")[0] + "op0.met_dependencies = []\n"
    buf = "\n".join(ln for ln in outputs.splitlines() if ".users" not in ln and ln != "]")
    nodes = []
    n = 1500
    for i in range(n):
        user = "OUTPUT" if i == n - 1 else f"SchedulerNode(name='op{i + 1}')"
        text = (f"{head}op0.outputs = [\n{buf}\n"
                + ("    buf0.mutations = ['PREVIOUS']\n" if i else "")
                + f"    buf0.users = [NodeUser(node={user}, can_inplace=False, is_weak=False)]"
                "\n]\nop0.group.device = cuda:0\n")
        nodes.append(text.replace("op0", f"op{i}").replace("buf0", f"buf{i}")
                     .replace("PREVIOUS", f"buf{i - 1}"))
    path = tmp_path / "chain_ir_post_fusion.txt"
    path.write_text("".join(nodes))
    for db in _ingests_alike(path, tmp_path, capsys):
        with open_database(db, read_only=True) as d:
            # every buffer lives to the end: the output holds the one it mutates, and so on
            assert d.con.execute("SELECT count(*), min(last_step) FROM buffers").fetchone() \
                == (n, n - 1)


def _deep_key() -> tuple:
    k: tuple = ()
    for _ in range(60):  # 120 levels: frozensets count as levels too
        k = (frozenset([k]),)
    return k


def _self_frame() -> dict:
    frame: dict = {"filename": "a.py", "line": 1, "name": "f"}
    frame["caller"] = frame
    return frame


# Snapshots Python's pickler writes from values no allocator makes: each is refused at the
# opcode where the value is handed over, the same way by both parsers.
# name: (the snapshot's other top-level keys, the message after the byte)
MADE = {
    "key_nested_through_frozensets": (
        {"x": {_deep_key(): 1}}, "a dict key or set member nested deeper than "
        f"{MAX_NESTING} levels: expected the plain data torch writes (dicts, lists, text "
        "and numbers as keys)"),
    "key_of_10001_values": (
        {"x": {tuple(range(10_001)): 1}}, "a dict key or set member of more than 10,000 "
        "values: expected the plain data torch writes (dicts, lists, text and numbers as "
        "keys)"),
    "frame_that_holds_itself": (
        {"device_traces": [[{"action": "alloc", "addr": 0, "size": 512,
                             "frames": [_self_frame()]}] * 2]}, f"a dict {CYCLE}"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(MADE))
def test_made_snapshot_is_refused(name, mode, one_seed, tmp_path, capsys, monkeypatch):
    import pickle
    import pickletools

    _use(mode, monkeypatch)
    value, message = MADE[name]
    data = pickle.dumps({"segments": [], "device_traces": [], **value}, protocol=4)
    path = tmp_path / f"{name}.pickle"
    path.write_bytes(data)
    db = tmp_path / "db.duckdb"
    shutil.copy(one_seed, db)
    before = snapshot(db)
    code, _ = _ingest(db, path)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"tlview: {path}: byte ") and err.count("\n") == 1, err
    if mode == "python":  # the specification's words; the twin's may differ
        assert err.endswith(f": {message}\n"), err
    at = int(err.split(": byte ")[1].split(":")[0].replace(",", ""))
    assert at in {pos for _, _, pos in pickletools.genops(data)}  # an opcode's
    assert snapshot(db) == before


def test_tuple_of_four_is_read(tmp_path, capsys):
    """A tuple of four or more (MARK ... TUPLE): the Python reader appended it to the list
    its MARK had just closed (``stack.append(tuple(pop_mark()))`` looks up ``stack``
    first), so the value vanished and the next opcode failed; the compiled reader read
    it. Both now keep it, as the pickle says."""
    import pickle

    path = tmp_path / "tuple4.pickle"
    entry = {"action": "alloc", "addr": 0, "size": 512}
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[entry]],
                                   "x": {(1, 2, 3, "four"): (5, 6, 7, 8)}}, protocol=4))
    for db in _ingests_alike(path, tmp_path, capsys):
        with open_database(db, read_only=True) as d:
            notes = [r[0] for r in d.con.execute("SELECT attrs FROM timeline_notes").fetchall()]
        assert any('"x":{"[1,2,3,\\"four\\"]":[5,6,7,8]}' in n for n in notes), notes


def test_ints_past_64_bits(tmp_path, capsys):
    """Ints of more than 64 bits in a segment and the top object reach Python from the
    compiled core through int.from_bytes (public API: it called _PyLong_FromByteArray)."""
    import pickle

    entry = {"action": "alloc", "addr": 0, "size": 512}
    segment = {"address": 0, "total_size": 1 << 21, "device": 0, "blocks": [],
               "z": [2**70, -2**100, -1, 2**64 - 1]}
    path = tmp_path / "big.pickle"
    path.write_bytes(pickle.dumps({"segments": [segment], "device_traces": [[entry]],
                                   "x": 2**70, "y": -2**100}, protocol=4))
    for db in _ingests_alike(path, tmp_path, capsys):
        with open_database(db, read_only=True) as d:
            (note,) = [r[0] for r in d.con.execute("SELECT attrs FROM timeline_notes")
                       .fetchall()]
        assert f'"top_level_keys":{{"x":{2**70},"y":{-2**100}}}' in note


# Found by the campaign (python -m bench.fuzz --parse, scripts/sanitize.sh), each rebuilt
# here from the real fixture and the mutation that broke it.

def test_fx_graph_with_a_long_word(tmp_path, capsys):
    """A TORCH_LOGS log with a 700,000-character word inside an FX graph (a huge_line
    mutation): _DECL.finditer retried the name at every position of the word, quadratic
    (over 60 s); the scan now starts names at word starts only (_DECLS), both parsers
    read the log alike."""
    lines = (FIXTURES / "torch" / "conv_net.short.log").read_text().split("\n")
    lines.insert(38, "x" * 700_000)
    path = tmp_path / "long_word.log"
    path.write_text("\n".join(lines))
    _ingests_alike(path, tmp_path, capsys, twin=False)  # a TORCH_LOGS log: no twin


def test_kineto_event_nested_too_deeply(tmp_path, capsys):
    """An event nested 20,000 levels deep: the Python parser (json's RecursionError) names
    the line where the event begins, the compiled one named the line of the nesting."""
    text = gzip.decompress((FIXTURES / "profile/single/compiled_step.pt.trace.json.gz")
                           .read_bytes()).decode()
    at = text.index('"ph":', text.index('"traceEvents"')) + len('"ph":')
    path = tmp_path / "deep.pt.trace.json"
    path.write_text(text[:at] + '{"a":' * 20_000 + "1" + "}" * 20_000 + text[at:])
    event_line = text.count("\n", 0, text.rindex("{", 0, at)) + 1
    runs = _both(path, tmp_path, capsys)
    for mode, (_, err, _) in runs.items():
        _same_error(err, f"tlview: {path}:{event_line}: nested too deeply: expected an event "
                    "object\n", mode)
    assert {code for code, _, _ in runs.values()} == {2}
