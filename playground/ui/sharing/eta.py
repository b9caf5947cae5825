"""How long runs take on this machine: ONE estimate of seconds per token, from the finished runs of
the last KEPT_SECONDS (any session's), for every wait the page announces. Compare's and Race's
expected duration before they start and their "run 3 of 10, about 40 s left" lines read it; a queue
that tells a visitor how long the model will stay busy (issue 45) should read it too
(`seconds_per_token`, `remaining_seconds`) rather than keep a second one.

A run is known by its method and its models (the family's specs): sd on the embedded family has
its own figure, apart from sd on a byte draft. A method with no recent run on the family is taken
at ar's figure there (speculative methods on a CPU run near ar's speed, some slower), and with no
run of the family at all, at the target's measured one-token step T(1) (forward_costs) if a run
measured it lately. Runs are read under the load of now: a busy machine's estimate from runs that
ended beside other programs wanting half the cores or more, a quiet one's from runs that ended
quieter, or the others' scaled by how much slower busy runs go here (`_under_load_now`).
Estimates are labelled with what they came from.
"""

import math
import os
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass

import torch

from ...decoding.speed import forward_costs
from ...decoding.speed.other_programs import OtherDemand
from ...models.loading import LoadedModel

KEPT_SECONDS = 1800.0  # a run older than this says little about the machine now
KEPT_RUNS = 16  # per (method, family)
MIN_TOKENS = 8  # a shorter run (a warm-up) is mostly its prompt's prefill: its pace is not a run's

_lock = threading.Lock()
# Each run kept below ends with the cores the other programs wanted as it ended (None: unknown)
_recent: dict[tuple, deque] = {}  # (method, family) -> (monotonic time, seconds per token, its T(1) or None, load)
_steps: dict[str, deque] = {}  # target spec -> (monotonic time, T(1) as a run timed it, load)
STEPS_NOW = 3  # the last runs' T(1)s: the machine's speed now, against that of the runs an estimate reads
# T(1) within this factor of the runs' is the machine as it was: a page drawing the runs moves it. At 1.3 a
# quiet page's line read "x0.8: faster now", then "x1.3: slower now, T(1) 79 against 59 ms" (its runs'
# T(1)s 43-79 ms); beside two burners the runs' T(1)s read 2-9x a quiet one's.
SAME_SPEED = 1.6
_bare_steps: dict[str, deque] = {}  # target spec -> (monotonic time, a bare step's seconds), the last BARE_KEPT
# A bare step reads the median of the last few timed within BARE_STEP_FRESH: beside two burners one
# read 672 ms, and the next, as the job started, a quarter of it; the line before the click told
# about 4 min 10 s, the job "about 1 min to 2 min" (it took 2 min 12 s), the jump unexplained.
BARE_KEPT = 3
_bare_claims: dict[str, float] = {}  # target spec -> when a line last claimed a bare step's timing
_bare_contended: dict[str, bool] = {}  # target spec -> whether others wanted most cores at its last bare step
BARE_STEP_FRESH = 60.0  # a bare step timed as a job started speaks for the machine this long
BARE_STEP_AGAIN = 15.0  # the line under a button, told again as settings change, times one this often at most
BARE_STEP_PASSES = 5
BARE_STEP_SECONDS = 0.5  # or the passes that fit in this (beside two burners one took 0.2-0.8 s)
# But never fewer: beside two burners one or two passes fit, and a line read T(1) 284, 663, 998 and
# 1832 ms in turn, the last "about 21 min" for a sweep that had just taken 2 min 28 s (seven passes'
# median: 154-209 ms, against `ar` runs' 156-184 ms).
BARE_STEP_LEAST_PASSES = 3
# A bare step this many times the runs' T(1) reads a slower machine: on a quiet one it has no cache
# to read, yet its noise put it 1.3-1.5x over (a quiet sweep was told 45 s in place of 31 s);
# beside two burners it read 3.6-13.5x.
BARE_SLOWER = 2.0
KEPT_WRITTEN = 256
MIN_LENGTHS = 5  # recent runs asking as many before their median length is told (a few say little)
_written: deque = deque(maxlen=KEPT_WRITTEN)  # (monotonic time, same_run(...), tokens asked, tokens written)
_first_steps: deque = deque(maxlen=KEPT_RUNS)  # (monotonic time, CPU seconds of a run's first step: its prompt's)
_loads: deque = deque(maxlen=KEPT_RUNS)  # (monotonic time, the cores other programs wanted as a run ended)
# target spec -> (monotonic time, a job's run's seconds not paced per token, its T(1) or None, load)
_besides_decoding: dict[str, deque] = {}
# Runs under another load than now's (busy: other programs want half the cores or more) are scaled by
# how much slower busy runs went than quiet ones here, or, with none measured, by this where other
# programs want every core: beside two burners on two cores `ar` ran 2.4-3.7 tokens/s against 11-19
# quiet, and fsd sweeps took 2 min 56 s - 3 min 25 s against 35-43 s, while a bare step read only
# 1.2-3.4x a quiet one (walk 29: a sweep told "about 29 s, up to 1 min 20 s" took 3 min 17 s).
BUSY_RUNS_SLOWER = 4.5
# Begins the line under Compare's and Race's button: it is told again as the settings change and as
# a job ends, so after one it can differ from the "expected as it started" of the job just shown.
AS_SET_NOW = "As set now: "
BUSIER = 1.5  # a load this many times another (and past most of the cores): the machine is busier or quieter


def family_of(models: dict) -> tuple:
    """The family a run ran on, as its role -> spec pairs (a LoadedModel or a spec string each)."""
    return tuple(sorted((role, getattr(model, "spec", model)) for role, model in models.items()))


def record(run, took: float | None = None) -> None:
    """Count a finished run's seconds per token: its decoder's time after its first step over the
    tokens it wrote after it (the turns other visitors took between its rounds are not its time;
    the first step holds the prompt's prefill and, on a model's first run, its one-time setup: 5 s
    of T(1) passes and int8 twins against 0.05 s a round on the embedded family). A job's run
    gives the seconds it `took` from the job's last run end: what of them is not paced per token
    (its first step, timing `ar`'s step, the job's own work) is counted too, once a run."""
    with _lock:
        config = run.config
        key = same_run(run.method, run.models, run.prompt, config.max_new_tokens, config.temperature, config.seed)
        _written.append((time.monotonic(), key, config.max_new_tokens, run.stats.tokens))
        if run.stats.first_step_cpu:
            _first_steps.append((time.monotonic(), run.stats.first_step_cpu))
        # No short watch here: it held each run's last view 0.3 s (and the estimates' lock with it).
        if (load := others_load(moment=False)) is not None:
            _loads.append((time.monotonic(), load))
        else:
            load = _taken_beside(run.stats.account)
        step = run.stats.account.own_step()
        if step:
            _steps.setdefault(_target_spec(run.models), deque(maxlen=KEPT_RUNS)).append((time.monotonic(), step, load))
        after_first = run.stats.tokens - (len(run.steps[0].tokens) if run.steps else 0)
        seconds = run.stats.decoder_seconds - (run.stats.step_clock[0] if run.stats.step_clock else 0.0)
        if after_first >= MIN_TOKENS and seconds > 0:
            _recent.setdefault((run.method, family_of(run.models)), deque(maxlen=KEPT_RUNS)).append(
                (time.monotonic(), seconds / after_first, step, load))
        if took is not None:
            _besides_decoding.setdefault(_target_spec(run.models), deque(maxlen=KEPT_RUNS)).append(
                (time.monotonic(), max(took - max(seconds, 0.0), 0.0), step, load))


def _taken_beside(account) -> float | None:
    """The cores the other programs took during a run, where no watch was old enough to read what they
    wanted as it ended (a page's first run): less than they wanted (two burners took 1.1 of two cores
    beside a run), but on the same side of half the cores."""
    return None if account.besides is None else sum(share for _, share in account.besides)


def seconds_besides_decoding(target) -> float:
    """The median seconds a job's recent runs on `target` (a spec) took besides their paced
    tokens, 0 where none: paced on their tokens alone, a quiet sweep was told 22-24 s and took
    30-37 s (16 runs, each with its prompt's pass and its timing of `ar`'s step). Read in their
    runs' T(1)s and put at the T(1) now where both are known: a busy sweep's 0.87 s a run told a
    quiet one, just after, 36 s for 21.8 s."""
    since = time.monotonic() - KEPT_SECONDS
    with _lock:
        kept = [entry[1:] for entry in _besides_decoding.get(target, ()) if entry[0] >= since]
    recent, factor, _ = _under_load_now(kept)
    if not recent:
        return 0.0
    if factor != 1.0:
        return statistics.median(seconds for seconds, _, _ in recent) * factor
    now = _step_now(target, 0.0)[0]
    if now and all(step for _, step, _ in recent):
        return statistics.median(seconds / step for seconds, step, _ in recent) * now
    return statistics.median(seconds for seconds, _, _ in recent)


def _target_spec(models: dict):
    target = models.get("target")
    return getattr(target, "spec", target)


def clear() -> None:
    with _lock:
        _recent.clear()
        _steps.clear()
        _written.clear()
        _first_steps.clear()
        _loads.clear()
        _bare_steps.clear()
        _bare_claims.clear()
        _bare_contended.clear()
        _besides_decoding.clear()


def time_bare_step(target: LoadedModel) -> None:
    """On the model thread, as a job starts or its estimate is told with no run going: time the
    target's one-token forward with no cache, the median of BARE_STEP_PASSES passes or of those that
    fit in BARE_STEP_SECONDS. Paced on quiet runs, a sweep was told "about 29 s" beside two burners
    started since, and took 3 min 12 s: no run had timed the busy machine yet, and the load average
    had not risen. Not the least of them: beside two burners one pass in five gets the cores alone
    (the least read 81-104 ms, the median 114-189 ms; quiet, the median read 43-63 ms). One pass
    first, untimed: after an idle minute the first runs slow (91 ms beside 39-46 ms)."""
    token = torch.zeros((1, 1), dtype=torch.long, device=target.device)
    seconds = []
    with torch.inference_mode():
        target.model(input_ids=token, use_cache=False)
        began = time.perf_counter()
        while len(seconds) < BARE_STEP_LEAST_PASSES or (
                len(seconds) < BARE_STEP_PASSES and time.perf_counter() - began < BARE_STEP_SECONDS):
            started = time.perf_counter()
            target.model(input_ids=token, use_cache=False)
            seconds.append(time.perf_counter() - started)
    busy = contended()
    with _lock:
        kept = _bare_steps.setdefault(target.spec, deque(maxlen=BARE_KEPT))
        kept.append((time.monotonic(), statistics.median(seconds)))
        _bare_contended[target.spec] = busy


def bare_step_fresh(target: LoadedModel) -> bool:
    """Whether a job starting now may take the bare steps the line under its button read: the last
    timed in the last BARE_STEP_FRESH seconds, with other programs wanting the cores as they do now.
    Beside two burners such a line read 199 ms and the job's own a few seconds later 1.8 s: their
    median of two, 1007 ms, told 10 min 30 s for a sweep that took 3 min 25 s; a job started 20 s
    after its line timed its own and told another range than the line had shown. One timed before
    two burners started told 22 s for 3 min 17 s: then the job times its own."""
    busy = contended()
    with _lock:
        kept = _bare_steps.get(target.spec)
        fresh = bool(kept) and time.monotonic() - kept[-1][0] < BARE_STEP_FRESH
        return fresh and _bare_contended.get(target.spec) == busy


def claim_bare_step(target: LoadedModel) -> bool:
    """Whether the line under Compare's or Race's button should time a bare step now (none lately),
    claimed for the caller: Compare's and Race's lines, told at once, each timed one."""
    with _lock:
        now, last = time.monotonic(), max(_bare_steps.get(target.spec, [(-math.inf,)])[-1][0],
                                          _bare_claims.get(target.spec, -math.inf))
        if now - last < BARE_STEP_AGAIN:
            return False
        _bare_claims[target.spec] = now
        return True


def _step_now(target, then: float) -> tuple[float | None, str]:
    """(T(1) now, where it was read): the median of the last STEPS_NOW runs' (under the load of now,
    where any ran under it: `_under_load_now`), or that of the bare
    steps timed in the last BARE_STEP_FRESH seconds (`time_bare_step`) where it is BARE_SLOWER
    times both theirs and `then`'s or more; or the last bare step alone where the machine is much
    quieter than as the runs ended and it is under 1/SAME_SPEED of both (after two burners were
    killed, a line read "quieter now" beside the busy runs' "about 2 min 40 s" for a 25 s sweep)."""
    since, fresh = time.monotonic() - KEPT_SECONDS, time.monotonic() - BARE_STEP_FRESH
    with _lock:
        kept = [entry[1:] for entry in _steps.get(target, ()) if entry[0] >= since]
        bares = [step for at, step in _bare_steps.get(target, ()) if at >= fresh]
    runs = [step for step, _ in _under_load_now(kept, scaled=False)[0]][-STEPS_NOW:]
    now = statistics.median(runs) if runs else None
    bare = statistics.median(bares) if bares else None
    if bare is not None and bare > BARE_SLOWER * max(now or 0.0, then):
        return bare, "timed just now" if len(bares) == 1 else f"the median of {len(bares)} timed in the last minute"
    if bares and SAME_SPEED * bares[-1] < min(now or math.inf, then or math.inf) and _quieter():
        return bares[-1], "timed just now"
    return now, "in the last runs"


def _quieter() -> bool:
    """Whether the machine is much quieter now than as the recent runs ended (`load_change`)."""
    change = load_change()
    return change is not None and change[0] == "quieter"


def _median(method: str, family: tuple) -> tuple[float, list, float, str] | None:
    """The median seconds per token of recent runs of `method` on `family` (`_paced`)."""
    return _paced(lambda key: key == (method, family))


def _on_target(target: list) -> tuple[float, list, float, str] | None:
    """The median of every method's recent runs on this target (any draft) (`_paced`)."""
    return _paced(lambda key: set(target) <= set(key[1]))


def _paced(wanted) -> tuple[float, list, float, str] | None:
    """(median seconds per token, their T(1)s, factor, words) of the recent runs whose (method,
    family) is `wanted`: of those under the load of now where any, else of all, to be scaled by
    `factor` as `words` say (`_under_load_now`)."""
    since = time.monotonic() - KEPT_SECONDS
    with _lock:
        kept = [entry[1:] for key, entries in _recent.items() if wanted(key) for entry in entries if entry[0] >= since]
    recent, factor, words = _under_load_now(kept)
    if not recent:
        return None
    return statistics.median(pace for pace, _, _ in recent), [step for _, step, _ in recent], factor, words


def _busy(load: float | None) -> bool | None:
    """Whether other programs wanted half the machine's cores or more (None where unknown)."""
    return None if load is None else load >= 0.5 * (os.cpu_count() or 1)


def _under_load_now(entries: list[tuple], scaled: bool = True) -> tuple[list[tuple], float, str]:
    """(entries, factor, words): those of `entries` (each ending with the cores the other programs
    wanted as its run ended) whose runs ran under the load of now, busy or quiet (`_busy`); with
    none such, all of them, at `factor` as `words` say (`busy_slowdown`; 1 and "" where not
    `scaled`). After two burners were killed, a sweep paced on the median of the quiet runs before
    them and the busy runs beside them was told about 50 s and took 39.8 s."""
    wanted = others_load() if entries else None
    busy = _busy(wanted)
    same = [entry for entry in entries if busy is None or _busy(entry[-1]) in (busy, None)]
    if same or busy is None or not scaled:
        return same or entries, 1.0, ""
    cores = os.cpu_count() or 1
    if busy:
        slower, measured = busy_slowdown(wanted)
        return entries, slower, (f", x{slower:.1f}: other programs want {wanted:.1f} of its {cores} cores now, "
                                 f"those runs ran beside less, and {measured}")
    then = statistics.median(entry[-1] for entry in entries)
    slower, measured = busy_slowdown(then)
    return entries, 1 / slower, (f", x{1 / slower:.1f}: other programs want {wanted:.1f} of its {cores} cores now, "
                                 f"against {then:.1f} as those runs ended, and {measured}")


def busy_slowdown(wanted: float) -> tuple[float, str]:
    """(factor, words): how much slower runs went here beside other programs wanting half the cores
    or more than beside fewer: the median, over the methods and families that ran both ways, of
    their busy runs' median pace over their quiet runs'; where none did, BUSY_RUNS_SLOWER at
    every core wanted, less in proportion below."""
    with _lock:
        kept = [list(entries) for entries in _recent.values()]
    ratios = []
    for entries in kept:
        busy = [pace for _, pace, _, load in entries if _busy(load)]
        quiet = [pace for _, pace, _, load in entries if _busy(load) is False]
        if busy and quiet:
            ratios.append(statistics.median(busy) / statistics.median(quiet))
    if ratios:
        factor = statistics.median(ratios)
        return factor, f"runs here went {factor:.1f}x slower beside such programs than beside fewer"
    share = min(1.0, wanted / (os.cpu_count() or 1))
    factor = 1 + (BUSY_RUNS_SLOWER - 1) * share
    return factor, (f"none here ran both ways yet: taken as {factor:.1f}x (runs on 2 cores went about "
                    f"{BUSY_RUNS_SLOWER:g}x slower beside two programs wanting a core each)")


def machine_now(target, steps: list) -> tuple[float, str]:
    """(factor, words): how much slower the machine runs `target` now than in the runs whose T(1)s
    are `steps`, read from the T(1) now (`_step_now`); (1, "") within SAME_SPEED or
    where unknown. Estimates paced on quiet runs were 9x short beside two CPU burners: the pace of
    a method's runs is kept, the machine's speed is taken as it is now."""
    then = [step for step in steps if step]
    if not then:
        return 1.0, ""
    then = statistics.median(then)
    now, where = _step_now(target, then)
    if now is None:
        return 1.0, ""
    factor = now / then
    if 1 / SAME_SPEED < factor < SAME_SPEED or _load_changed_since(factor) or (factor > 1 and not contended()):
        return 1.0, ""
    change = "slower" if factor > 1 else "faster"
    return factor, (f", x{factor:.1f}: the machine runs {change} now, T(1) {now * 1000:.0f} ms {where} "
                    f"against {then * 1000:.0f} ms in those")


def same_run(method: str, models: dict, prompt: str, asked: int, temperature: float, seed: int) -> tuple:
    """What a run's length depends on: its method, family, prompt, max new tokens and, when it
    samples, its temperature and seed (a greedy run writes the same text whatever its seed)."""
    return method, family_of(models), prompt, asked, (temperature, seed) if temperature else "greedy"


def expected_tokens(method: str, models: dict, prompt: str, asked: int, temperature: float, seed: int) -> int:
    """The tokens a run should write: as many as the same run wrote lately (it stopped at an
    end-of-text token where it did); else the median of what at least MIN_LENGTHS recent runs
    asking as many wrote (many answers end before their max; a run asking fewer says nothing of
    where an answer ends past them); else all it asks: a wait told long beats one told short."""
    since, key = time.monotonic() - KEPT_SECONDS, same_run(method, models, prompt, asked, temperature, seed)
    with _lock:
        recent = [(run, most, written) for at, run, most, written in _written if at >= since]
    same = [written for run, _, written in recent if run == key and written]
    if same:
        return same[-1]
    lengths = [written for _, most, written in recent if most == asked]
    return max(1, round(statistics.median(lengths))) if len(lengths) >= MIN_LENGTHS else asked


def first_step_cpu() -> float | None:
    """The median CPU seconds of the last STEPS_NOW runs' first steps (the prompt's pass, the first
    round), or None: the last runs', as a busy machine's cost more (a second visitor told 2.2 s waited 4-6 s)."""
    since = time.monotonic() - KEPT_SECONDS
    with _lock:
        recent = [seconds for at, seconds in _first_steps if at >= since][-STEPS_NOW:]
    return statistics.median(recent) if recent else None


class _OthersNow:
    """The cores the other programs wanted lately (other_programs.OtherDemand): since the youngest
    watch at least LEAST seconds old, of those started as it is read, every AGAIN seconds at most
    (Compare's and Race's lines are told every 15 s while shown), none older than OVER. It replaced
    the load average less this app's own CPU, which after a busy sweep read "busier now (load besides
    this app 3.4 against 2.2)" with nothing new started. Not the oldest watch of the half minute: two
    burners started 3 s before a sweep read 0.2 of a core over it, and its start dismissed a bare step
    4x the runs' as noise (told about 1 min, it took 2 min 20 s)."""

    OVER = 30.0
    AGAIN = 5.0
    LEAST = 4.0  # a watch younger than this says too little to read
    # With none old enough, it reads a short one: 34 s after two burners were killed, the first line
    # read nothing and kept a busy run's "x16.2: slower now, about 9 min" for a sweep that took 32 s.
    # A moment says only that the machine is quiet: one caught a browser starting, its many threads
    # waiting at once, and read "busier now (1.9 of its 2 cores)" with no burner.
    SAMPLE = 0.3

    def __init__(self):
        self.watches: deque = deque()
        self._lock = threading.Lock()

    def read(self, moment: bool = True) -> float | None:
        """None where the kernel keeps no schedstat, or where a short watch saw half the cores wanted
        (or, not `moment`, where none is old enough: no short watch is taken)."""
        with self._lock:
            now = time.perf_counter()
            while self.watches and now - self.watches[0].at > self.OVER:
                self.watches.popleft()
            ready = [watch for watch in self.watches if now - watch.at >= self.LEAST]
            if not self.watches or now - self.watches[-1].at >= self.AGAIN:
                self.watches.append(OtherDemand())
        if ready:
            return ready[-1].cores()
        if not moment:
            return None
        sample = OtherDemand()
        time.sleep(self.SAMPLE)
        wanted = sample.cores()
        return wanted if wanted is not None and wanted < 0.5 * (os.cpu_count() or 1) else None


_others_now = _OthersNow()
_watching = threading.Event()  # set once a thread keeps watching
_between_watches = threading.Event()  # never set: waited on, as tests' stand-ins for time.sleep leave it alone


def others_load(moment: bool = True) -> float | None:
    """The cores the other programs wanted lately (None where unknown: no schedstat, or no watch old
    enough); `moment`: else a short watch of its own, which takes SAMPLE seconds. From the first
    reading on, a watch is started every AGAIN seconds whether or not anyone reads: read only as the
    pages asked, a sweep's line told 35 s after its last run found none younger than OVER, read a
    moment (busy: unknown) and paced on quiet runs (x2.3) where the job's start, 4 s on, read 2.0
    cores wanted and the busy pace (x4.5); the sweep took 3 min 59 s for the line's 2 min."""
    if not _watching.is_set():
        _watching.set()
        threading.Thread(target=_keep_watching, name="other-programs-watch", daemon=True).start()
    return _others_now.read(moment)


def _keep_watching() -> None:
    while True:
        _others_now.read(moment=False)
        _between_watches.wait(_others_now.AGAIN)


def contended() -> bool:
    """Whether other programs want half the machine's cores or more now (or that is unknown): a
    slower machine with nothing beside the app is noise. A quiet sweep's own start read "x2.1: the
    machine runs slower now, T(1) 116 ms timed just now against 54 ms"; two burners want 2 cores."""
    wanted = others_load()
    return wanted is None or wanted >= 0.5 * (os.cpu_count() or 1)


def seen_contended() -> bool:
    """Whether other programs are seen to want half the machine's cores or more now (not where that
    is unknown: a moment's watch that caught the page's own browser drawing a tab told a quiet sweep
    "beside other programs wanting most of the cores")."""
    wanted = others_load()
    return wanted is not None and wanted >= 0.5 * (os.cpu_count() or 1)


def _load_changed_since(factor: float) -> bool:
    """The last runs' T(1)s ran `factor` times slower than the paced runs', but the machine has
    changed the other way since they ended (quieter after slower ones, busier after faster ones): a
    line said "x1.6: the machine runs slower now" beside "the machine is quieter now"."""
    change = load_change()
    return change is not None and (change[0] == "quieter") == (factor > 1)


def load_change() -> tuple[str, float, float, int] | None:
    """("busier" or "quieter", the cores the other programs want now, the median they wanted as the
    recent runs ended, the machine's cores) where it is much busier or much quieter now than then; else None."""
    since, now, cores = time.monotonic() - KEPT_SECONDS, others_load(), os.cpu_count() or 1
    with _lock:
        then = [load for at, load in _loads if at >= since]
    if now is None or not then:
        return None
    then = statistics.median(then)
    if now >= 0.75 * cores and now >= BUSIER * max(then, 0.5):
        return "busier", now, then, cores
    if then >= 0.75 * cores and then >= BUSIER * max(now, 0.5):
        return "quieter", now, then, cores
    return None


def length_spread(asked: int) -> tuple[float, float]:
    """How much shorter and longer than their median recent runs asking `asked` tokens ran: (p25 /
    median, p75 / median) of what they wrote, once MIN_LENGTHS are known; (1, 1) before. A wait is
    told as the range these put around its estimate."""
    since = time.monotonic() - KEPT_SECONDS
    with _lock:
        lengths = sorted(written for at, _, most, written in _written if at >= since and most == asked and written)
    if len(lengths) < MIN_LENGTHS:
        return 1.0, 1.0
    middle = statistics.median(lengths)
    return lengths[len(lengths) // 4] / middle, lengths[3 * len(lengths) // 4] / middle


@dataclass(frozen=True)
class Rate:
    """Seconds per token, and where the figure came from (shown beside every estimate)."""

    seconds: float
    basis: str


def seconds_per_token(method: str, models: dict) -> Rate | None:
    """This machine's seconds per token for `method` on `models` (role -> LoadedModel or spec):
    its recent runs' median; else ar's on the same target; else any method's on that target; else
    the target's measured T(1); else None (nothing ran here lately)."""
    family = family_of(models)
    target = [(role, spec) for role, spec in family if role == "target"]
    unknown = method if method == "ar" else f"{method} or ar"
    for found, basis in ((_median(method, family), f"{method} {{:.3f}} s/token (recent runs"),
                         (_median("ar", tuple(target)), f"{method} taken as ar's {{:.3f}} s/token (no recent {method} "
                                                         "run"),
                         (_on_target(target), f"{method} taken as other methods' {{:.3f}} s/token on this target (no "
                                              f"recent {unknown} run")):
        if found is not None:
            pace, steps, factor, words = found
            if factor == 1.0:
                factor, words = machine_now(_target_spec(models), steps)
            return Rate(pace * factor, basis.format(pace) + words + ")")
    model = models.get("target")
    step = forward_costs.typical(model.model, 1) if isinstance(model, LoadedModel) else None
    if step is not None:
        return Rate(step, f"{method} taken as one target step, {step:.3f} s/token (no recent run)")
    return None


def remaining_seconds(run) -> float | None:
    """A run in progress: its own pace so far times the tokens it may still write (an upper
    estimate: it may stop at an end-of-text token first)."""
    stats = run.stats
    if not stats.tokens or not stats.decoder_seconds:
        return None
    return max(0, run.config.max_new_tokens - stats.tokens) * stats.decoder_seconds / stats.tokens


def job_time_left(estimates: list[float] | None, durations: list[float], warm_ups: int,
                  sides: list[int] | None = None, shares: list[float] | None = None) -> float | None:
    """Seconds a job's runs after the `len(durations)` done should take. `sides[i]`: which of the
    job's settings run i runs; `shares[i]`: the part of its max new tokens done run i wrote.
    - A setting with full runs done: each of its runs left takes their median (its repeats write
      the same text; a sweep's settings run at their own speeds: paced on all alike, after a slow
      one the time left rose 57 s -> 90 s).
    - Any other: its estimate (at its max new tokens) times the job's pace per token so far (its
      full runs' seconds against their estimates for the tokens they wrote: paced per run, one run
      ending early at an end-of-text token told a sweep 50 s left, then 3 min 40 s), read on the
      first setting's runs (Compare's `ar`, whose pace is the machine's) once it has any: a slow
      tau paced the taus not run yet as slow too, and the time left rose 46 s -> 55 s, then fell.
    The first `warm_ups` runs, a few tokens each, are mostly a run's fixed costs and pace nothing:
    paced on them, a sweep's three warm-ups told 8 min 10 s left for runs that took 40 s."""
    done = len(durations)
    if estimates is None or done >= len(estimates):
        return None
    sides, shares = sides or [0] * len(estimates), shares or [1.0] * done
    paced = _paced_runs(durations, warm_ups, sides)
    spent, expected = sum(durations[i] for i in paced), sum(estimates[i] * shares[i] for i in paced)
    pace = spent / expected if spent and expected else 1.0
    return _left(estimates, durations, warm_ups, sides, statistics.median, pace)


def job_time_left_range(estimates: list[float] | None, durations: list[float], warm_ups: int,
                        sides: list[int] | None = None,
                        shares: list[float] | None = None) -> tuple[float, float] | None:
    """The least and most the runs left may take where the job's runs spread (a busy machine's
    paced 2.7-9x apart from run to run, and one figure went 2 min 50 s, 6 min 50 s, 6 min 40 s,
    4 min): each setting's runs left at its fastest and slowest run done, the others at the
    fastest and slowest pace of the job's full runs (`job_time_left`'s terms). None before two full runs."""
    done = len(durations)
    if estimates is None or done >= len(estimates) or done - warm_ups < 2:
        return None
    sides, shares = sides or [0] * len(estimates), shares or [1.0] * done
    paces = [durations[i] / (estimates[i] * shares[i]) for i in _paced_runs(durations, warm_ups, sides)
             if estimates[i] * shares[i] > 0]
    if not paces:
        return None
    return (_left(estimates, durations, warm_ups, sides, min, min(paces)),
            _left(estimates, durations, warm_ups, sides, max, max(paces)))


def _paced_runs(durations: list[float], warm_ups: int, sides: list[int]) -> list[int]:
    """The full runs the job's pace is read on: the first setting's (Compare's `ar`) once it has any."""
    full = range(warm_ups, len(durations))
    return [i for i in full if sides[i] == sides[0]] or list(full)


def _left(estimates: list[float], durations: list[float], warm_ups: int, sides: list[int], pick, pace: float) -> float:
    """The runs left: a setting with full runs done at `pick` of them, any other at its estimate times `pace`."""
    full = range(warm_ups, len(durations))
    own = {side: pick([durations[i] for i in full if sides[i] == side]) for side in {sides[i] for i in full}}
    return sum(own.get(sides[i], estimates[i] * pace) for i in range(len(durations), len(estimates)))


def plan_seconds(plan: list[tuple[str, int]], models_of) -> tuple[list[float] | None, list[str]]:
    """(seconds of each run, bases) of runs done one after another: `plan` lists (method, tokens)
    per run, `models_of(method)` gives each method's models. A method with no estimate is taken at
    the others' pace; None when none has one."""
    rates = {method: seconds_per_token(method, models_of(method)) for method in dict.fromkeys(m for m, _ in plan)}
    known = [rate.seconds for rate in rates.values() if rate is not None]
    if not known:
        return None, []
    for method, rate in rates.items():  # a method with no estimate yet: the others' pace (sd and ar are near)
        if rate is None:
            pace = statistics.median(known)
            rates[method] = Rate(pace, f"{method} taken as the others' {pace:.3f} s/token (no recent {method} run)")
    bases = [rate.basis for rate in rates.values()]
    besides = seconds_besides_decoding(_target_spec(models_of(plan[0][0])))
    if besides:
        bases.append(f"and {besides:.2f} s a run besides (its prompt's pass, timing ar's step: the last jobs' runs)")
    return [rates[method].seconds * tokens + besides for method, tokens in plan], bases


def plan_line(plan: list[tuple[str, int]], models_of, unknown: str = "") -> tuple[float | None, str]:
    """(seconds, one line) a plan of runs should take, from this machine's recent runs; `unknown`
    ends the line where nothing is known yet."""
    seconds, bases = plan_seconds(plan, models_of)
    if seconds is None:
        return None, f"{len(plan)} runs; no run on this machine lately to estimate their time from{unknown}"
    total = sum(seconds)
    return total, (f"{len(plan)} runs, {duration_text(total)} if each writes its max new tokens at the recent pace "
                   f"(one that stops sooner takes less, a busier machine more; from {'; '.join(bases)})")


def took_text(seconds: float) -> str:
    """'48.7 s', '8 min 2 s': a time taken, as measured."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def shown_seconds(seconds: float) -> int:
    """The seconds `duration_text` says: to the second under a minute, to 10 s past it."""
    return max(1, round(seconds)) if seconds < 60 else round(seconds / 10) * 10


def duration_text(seconds: float) -> str:
    """'about 40 s', 'about 3 min 10 s' (rounded to what a person plans with)."""
    shown = shown_seconds(seconds)
    if shown < 60:
        return f"about {shown} s"
    minutes, rest = divmod(shown, 60)
    return f"about {minutes} min" + (f" {rest} s" if rest else "")
