"""One run's speed account: where its seconds went, and the `ar` step it is compared with.

Every speed figure that the CLI's JSON, the UI and the bench show is a function of this account
and nothing else (docs/speed.md): the speedup, c, the pass cost, the cost model's prediction, the
bound past which a figure is impossible, the time budget and the what-if's "this run" profile.

The reference is `ar`'s one-token step T(1), timed on the target's own cache between the run's
rounds (as the second round starts, then every REFERENCE_EVERY / 2 rounds, alternately as a round
ends and as the next starts), so that it shares the
run's context length and the machine's load at the time: on a machine whose load changes, a run
has one T(1), measured beside its own rounds. An `ar` run is its own reference: its one-token
passes are T(1).

Beside the wall clock it keeps the decoding thread's CPU seconds: where the thread had its core
for much less than the run's time, or the T(1) timings disagree, other work moved the figures,
and the account says the speedup is not settled rather than show it plain (`unsettled`). The CPU
seconds are no steadier a measure than the wall clock here: torch's worker threads spin while they
wait for each other, so a busy machine inflates them too (bench/results/speed_account).
"""

import statistics
import time
from dataclasses import dataclass, field, replace

from .cost_model import CostProfile, Round, replay, round_costs
from .other_programs import named
from .what_if import THIS_RUN

# Rounds between two timings of T(1) at the same phase of a round. Each timing is one target
# forward the run does not need: at 8 (a timing every 4 rounds) sd ran 1.04x `ar` on the wall
# clock against 1.25x with timings off (embedded family, chat prompts, same process); at 32 one
# timing in 16 rounds costs a few percent.
REFERENCE_EVERY = 32
ENDED_PASSES = 2  # a timing as a round ends is the lesser of this many passes (time_step)
# Measured beside two processes burning both cores (bench/results/speed_account): the decoding
# thread's CPU over wall time fell from 0.99 to 0.48-0.50 (a page's run: 0.26), and its T(1)
# timings spread 2.7-9x. On a quiet machine a browser drawing the run leaves it about 0.76 (the
# server's threads drawing each round take turns with it), which is no other work's load; three
# full-page screenshots during a run left it 0.68 and doubled the run's seconds, which is.
BUSY_UTILIZATION = 0.65
# T(1) timings further apart than this leave the speedup unsettled: beside two burners they spread
# 2.7-9x, beside a browser drawing the page 1.1-1.4x.
SETTLED_SPREAD = 1.5
MANY_TIMINGS = 8  # timings past which their spread is read between the quartiles
# Between their quartiles, a quiet page's `ar` run spread its one-token passes 1.26-1.60x (the page
# drawing each token on the same cores), one beside two burners 1.36-1.79x (its core share says
# that one): the quartiles tell a load that changed within the run, at its own factor, not noise.
MANY_SPREAD = 2.0
# A pass over several new tokens costs at least one token's (T(n)/T(1) 1.09-2.4 for the embedded
# target, timed bare): a run whose passes averaged well under its T(1) ran faster than T(1) was
# timed (a settled slem 1.38x at T(1) 121 ms, contradicted by the next `ar` run's 71 ms a token; a
# settled sd 1.60x, its passes of 2.6 tokens at 0.81 T(1), beside 0.99-1.32x). But a T(1) read
# from passes a page drew, one token each, runs up to a tenth over: quiet sd passes over 3.6-3.9
# tokens cost 0.99-1.0 of it, and at 1.0 allowed, 10 of 12 identical quiet sd runs read unsettled.
LEAST_PASS_COST = 0.9
# Where T(1) rests on the page's `ar` run, a pass of several tokens may cost down to 1 / this of it:
# identical `ar` runs drawn by a quiet page averaged 63.1-81.2 ms a pass (1.29x apart; 50-54 ms
# without a page), so a run whose page drew less ran that much faster than the `ar` run it is set
# against, which is what a lecturer sees (walk 27: three quiet sd runs at 0.82 of such a T(1) withheld).
PAGE_AR_RUNS_APART = 1.3
# How far back the target's one-token passes join a run's T(1): a lecturer reads an `ar` run's page
# for a minute before the next run; a load that changed since shows as the run's own timings apart
# from them (`unsettled`).
RECENT_STEP_SECONDS = 120.0
# Rounds below which a run's seconds are mostly its first step's (the prompt, one-time setup): a
# run stopped after one token read "busy, its core 52%" on a quiet machine.
MIN_ROUNDS = 3
# The budget's row for `ar`: a model of ar (the run's own first pass and T(1) per further token),
# not a measured ar run (a reviewer set it beside an ar run's own seconds and found them apart).
AR_ROW = "ar at this run's T(1), same tokens"
MEASURED_ROW = "this run (measured)"
# The target's first pass, over the prompt: `ar` takes it too, and after a Load it runs cold (a
# reviewer found a second of it inside "target passes" and ar's bar, beside a pass cost of 0.95 T(1)).
PROMPT_PASS = "the prompt's pass"
HOST_PART = "host, between them"
# From the click to its start and between its rounds: other visitors' rounds, a page being updated,
# its place in line, its models loading (a reviewer saw a load's 1.7 s here, called a turn).
WAITING_PART = "waiting (its turn, a load, the page)"
PREPARING_PART = "preparing the draft (once a model)"  # its levers' int8 copy and smaller head, before the run


class Clock:
    """Wall and CPU seconds since it was made (CPU: of the thread that reads it)."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.thread_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.thread_time() - self.cpu


@dataclass(frozen=True)
class Timing:
    """One timed T(1): wall and CPU seconds, the context it was taken at, after which round, whether
    it was a forward of its own (else one of the run's passes, fed one token alone), and whether it
    was taken as the next round started (else as the round ended)."""

    wall: float
    cpu: float
    context: int
    after_round: int
    extra: bool = True
    starting: bool = False


@dataclass
class SpeedAccount:
    """Written by the engine as the run goes: `take_own_pass` and `time_step` (T(1)), `add_round`."""

    target_role: str = "target"
    draft_role: str = "draft"
    clock: float = 0.0  # seconds since the run started, waiting included: what the status line shows
    waited: float = 0.0  # held at its yields: other visitors' rounds, a page being updated
    before: float = 0.0  # from being asked for to its start (asked_at): in line, its first turn, a load
    draft_prepared: float = 0.0  # of it, preparing the draft's levers (its int8 copy, smaller head: once a model)
    measuring: float = 0.0  # spent timing T(1) (not the run's own work)
    timing_passes: int = 0  # the target forwards it took (two as a round ends)
    decoder_cpu: float = 0.0  # CPU seconds of the decoding thread in the run's rounds
    tokens: int = 0
    round_count: int = 0
    drafting: float = 0.0
    passes: float = 0.0  # the target's passes, without the checks
    checks: float = 0.0  # the checks and the walk after each pass
    draft_forwards: int = 0
    target_passes: int = 0
    first_pass: float | None = None  # seconds of the target's first pass: the prompt's
    reference: list[Timing] = field(default_factory=list)
    # The seconds of the one-token passes of the last `ar` run of the two minutes before the run (with
    # none, any run's): T(1) is timed with them, and its own timings held against them.
    recent_steps: list[float] = field(default_factory=list)
    recent_busy: float | None = None  # the share of their core those passes had, where too busy to time the run
    # What that `ar` run spent per token besides its passes (its sampling, its loop): `ar`'s seconds
    # for the run's tokens pay it too.
    ar_host: float = 0.0
    shared_with: int = 0  # the most other runs that took turns with it on the model at once
    # Whether a page drew each round as the next began (Generate's runs): where none did (the CLI, the
    # API, Compare's), timings as rounds started and as they ended are alike, and no reason names a page.
    drawn: bool = False
    # The other programs' shares of a core during the run, by name (None: unmeasured, no /proc)
    besides: list[tuple[str, float]] | None = None
    rounds: list[Round] = field(default_factory=list)  # the verified rounds, for the what-if
    pass_seconds: list[float] = field(default_factory=list)  # each verified round's pass, checks excluded
    started: float = field(default_factory=time.perf_counter, repr=False)

    # Writing ---------------------------------------------------------------------------------

    def add_round(self, step, cpu: float, waited: float) -> None:
        """Count a round the method yielded, the decoding thread's CPU seconds for it, and the
        clock at its end; `waited` is how long the run has been held so far."""
        self.clock = time.perf_counter() - self.started
        self.waited = waited + self.before
        self.round_count += 1
        checks = step.extra.get("check_seconds", 0.0)
        self.tokens += len(step.tokens)
        self.drafting += step.draft_seconds
        self.passes += step.verify_seconds - checks
        self.checks += checks
        self.decoder_cpu += cpu
        self.draft_forwards += step.forwards.get(self.draft_role, 0)
        passes = step.forwards.get(self.target_role, 0)
        self.target_passes += passes
        if passes:
            self.rounds.append(Round(step.forwards.get(self.draft_role, 0), step.drafted + 1, len(step.tokens)))
            self.pass_seconds.append((step.verify_seconds - checks) / passes)

    def took_turns_with(self, others: int) -> None:
        """`others` other runs take turns with it on the model now (their rounds between its own)."""
        self.shared_with = max(self.shared_with, others)

    def take_recent_steps(self, passes: list[tuple[float, float]]) -> None:
        """The target's one-token passes before the run (`recent_steps`), (wall, CPU) seconds each:
        its `recent_steps` are those whose thread had its core BUSY_UTILIZATION of their time or more
        (a busy `ar` run's steps, its core 59%, had settled a quiet sd run at 1.43x; beside two
        burners every pass had 49-51%, so a quiet `ar` run after a busy one times the run alone)."""
        busy = [(wall, cpu) for wall, cpu in passes if cpu < BUSY_UTILIZATION * wall]
        self.recent_steps = [wall for wall, cpu in passes if cpu >= BUSY_UTILIZATION * wall]
        if busy and len(self.recent_steps) < MANY_TIMINGS:
            self.recent_busy = sum(cpu for _, cpu in busy) / sum(wall for wall, _ in busy)

    def asked_at(self, asked: float) -> None:
        """The run was asked for at `asked` (perf_counter) and started later: its clock and its
        waiting count the time between, as its visitor waited it (a second visitor's page saw 111.8 s
        from the click to "done: ... in 101.08 s": its wait for its first turn was on no clock)."""
        before = self.started - asked
        if before > 0:
            self.started, self.before = asked, self.before + before
            self.clock += before
            self.waited += before

    def take_own_pass(self, runner, step) -> None:
        """Before counting `step`: where it fed the target's `runner` (a KVRunner) one token alone
        (an `ar` round, a round that drafted nothing), that pass was `ar`'s step: a timing of T(1)."""
        if runner is None or runner.first_pass is None:
            return
        self.first_pass = self.first_pass or runner.first_pass
        if step.forwards.get(self.target_role) == 1 and runner.forwards > 1 and runner.last_pass[0] == 1:
            _, wall, cpu = runner.last_pass
            # In a run that drafts, such a round follows the page's view of the last one, as a round starts.
            starting = self.draft_forwards > 0
            self.reference.append(Timing(wall, cpu, len(runner.ids), self.round_count + 1, extra=False,
                                         starting=starting))

    def time_step(self, runner, sequence: list[int], starting: bool, finished: bool = False) -> None:
        """Between two rounds of a run that drafts, where due: time `ar`'s step on the target's
        cache. The timings alternate between a round's start (`starting`: its page draws the last
        round's tokens beside it) and its end (the page is quiet), every REFERENCE_EVERY / 2 rounds
        from the second round's start, so that their mean sees the load the rounds saw; and at the
        end of a run timed fewer than twice or never as a round ended."""
        if runner is None or runner.first_pass is None or not self.draft_forwards:
            return
        extra = [t for t in self.reference if t.extra]
        after = self.round_count + (0 if starting else 1)  # as a round ends, it is not counted yet
        if finished:  # and none as a round ended, the page quiet: a 15-round fsd run had two as rounds started
            due = len(self.reference) < 2 or all(t.starting for t in self.reference)
        elif not extra:
            due = starting
        else:
            due = extra[-1].starting != starting and after - extra[-1].after_round >= REFERENCE_EVERY // 2
        if not due:
            return
        clock = Clock()
        # As a round ends, the lesser of two passes: one pass alone, disturbed once (a page's draw, the
        # server's own thread), read 129.2 ms beside `ar` passes of 52 ms and withheld one quiet sd run in three.
        timings = [t for _ in range(1 if starting else ENDED_PASSES) if (t := runner.timed_step(sequence)) is not None]
        self.timing_passes += len(timings)
        timing = min(timings, default=None)
        if timing is not None:
            self.reference.append(Timing(*timing, len(runner.ids), after, starting=starting))
            self.measuring += clock.read()[0]

    # The reference ---------------------------------------------------------------------------

    def single_step(self) -> float | None:
        """T(1): the mean of the run's timings of it (an `ar` run: of its one-token passes), as its
        rounds paid their slow moments too, with the target's one-token passes of the two minutes
        before it where they time it (a lecturer's `ar` run of the same prompt: a few timings alone
        read 89 ms where that run took 72 ms a step, and the speedup 1.26x where the status lines'
        seconds gave 1.10x). Fewer passes only check it: three slow ones had put a T(1) of 161.6 ms
        beside a reason that named the run's timings, 65.5-116.5 ms."""
        walls = self._kept_walls() + (self.recent_steps if self.timed_by_recent_steps() else [])
        return statistics.fmean(walls) if walls else None

    def _kept_walls(self) -> list[float]:
        """The run's own timings T(1) reads: all of them; where the passes before the run time it,
        those taken as rounds ended, the page quiet. Those passes (an `ar` run's, drawn by the page)
        count the page's drawing on average; a timing as a round started counts it at its peak (one
        of 484 ms beside steps of 73-111 ms set three T(1)s in one panel)."""
        ended = [t.wall for t in self.reference if not t.starting]
        return ended if self.timed_by_recent_steps() and ended else [t.wall for t in self.reference]

    def timed_by_recent_steps(self) -> bool:
        """Whether T(1) rests on the target's one-token passes before the run (an `ar` run's, drawn
        by its page as this run was) more than on the run's own few timings, which then only check
        them: two timings, one as the page drew a round, set its speedup apart by a quarter."""
        return len(self.recent_steps) >= MANY_TIMINGS

    def own_step(self) -> float | None:
        """The mean of the run's own timings of T(1) that it reads (`_kept_walls`)."""
        walls = self._kept_walls()
        return statistics.fmean(walls) if walls else None

    @property
    def recent_step(self) -> float | None:
        """The mean of the target's one-token passes of the two minutes before the run, as T(1) reads
        them (their median let a busy `ar` run's 58-351 ms steps, mean 149 ms, pass as 104 ms)."""
        return statistics.fmean(self.recent_steps) if self.recent_steps else None

    def reference_spread(self) -> float | None:
        """How far the T(1) timings of one phase spread (the widest of the two phases): the slowest
        over the fastest, or where there are many (an `ar` run's), the upper quartile over the lower."""
        spreads = [_spread([t.wall for t in self.reference if t.starting == starting]) for starting in (False, True)]
        return max((spread for spread in spreads if spread is not None), default=None)

    # The run's own seconds -------------------------------------------------------------------

    @property
    def decoder_seconds(self) -> float:
        """The run's own wall clock: less its waiting and the timing of T(1)."""
        return max(self.clock - self.waited - self.measuring, 0.0)

    def prepared_before(self) -> float:
        """Of the seconds before its first round, those spent preparing the draft's levers."""
        return min(self.draft_prepared, self.before)

    def parts(self) -> dict[str, float]:
        """Where the clock's seconds went; they add up to `clock`, the status line's seconds."""
        prompt = min(self.first_pass or 0.0, self.passes)
        parts = {"drafting": self.drafting, PROMPT_PASS: prompt, "target passes": self.passes - prompt,
                 "checks and walk": self.checks}
        parts[HOST_PART] = max(self.decoder_seconds - sum(parts.values()), 0.0)
        parts["timing ar's step"] = self.measuring
        prepared = self.prepared_before()  # the status line names it: the budget did not
        if prepared:
            parts[PREPARING_PART] = prepared
        parts[WAITING_PART] = self.waited - prepared
        return parts

    def ar_seconds(self) -> float | None:
        """`ar`'s seconds for the same tokens: the run's first target pass (the prompt's, which
        `ar` also takes) and one T(1) for each further token, with what the recent `ar` runs spent
        per token besides their passes (`ar_host`: without it a quiet sd run read 1.34x beside
        tokens/s 1.42x the `ar` run's just before)."""
        step = self.single_step()
        if step is None or self.first_pass is None or not self.tokens:
            return None
        return self.first_pass + (self.tokens - 1) * (step + self.ar_host)

    def host_per_token(self) -> float | None:
        """An `ar` run's seconds per token besides its passes (None where too short to time, or where
        other work took its core: that work's seconds are no run's host time)."""
        if self.round_count < MIN_ROUNDS or self.first_pass is None or self.busy() is not None:
            return None
        return max(self.decoder_seconds - self.passes, 0.0) / (self.tokens - 1)

    def speedup(self) -> float | None:
        """`ar`'s wall seconds for the run's tokens over the run's own."""
        ar = self.ar_seconds()
        return ar / self.decoder_seconds if ar and self.decoder_seconds else None

    def utilization(self) -> float | None:
        """The decoding thread's CPU seconds over its wall seconds: about 1 on a quiet machine,
        about 0.5 where other work shares its core."""
        return self.decoder_cpu / self.decoder_seconds if self.decoder_seconds and self.decoder_cpu else None

    def busy(self) -> float | None:
        """The share of its core the decoding thread had, where other work took too much of it
        (under BUSY_UTILIZATION); None on a quiet enough machine or where unmeasured."""
        used = self.utilization()
        return used if used is not None and used < BUSY_UTILIZATION else None

    def unsettled(self) -> str:
        """Why this run cannot settle its speedup over `ar` ("" where it can): too short, its thread
        did not have its core to itself, it shared the model, or its T(1) timings disagree."""
        used = self.busy()
        if self.round_count < MIN_ROUNDS:
            return (f"the run is too short to time: {self.round_count} round{'s' * (self.round_count != 1)}, "
                    f"mostly its prompt's pass (a speedup needs {MIN_ROUNDS} or more)")
        # Turns first: a second visitor's run read "the machine was busy" beside a status saying it shared.
        if self.shared_with:  # a second visitor's run doubled c (0.64 against 0.22-0.34) and read a settled 0.83x
            others = "another run" if self.shared_with == 1 else f"up to {self.shared_with} other runs"
            return (f"it took turns with {others} on the model: their rounds, and their pages drawing them, ran on "
                    "the same cores between and beside its own, and moved its drafting and T(1); run it alone to "
                    "time it")
        if used is not None:
            work = self._besides_words() or ("other programs, or a browser on this machine capturing or "
                                             "redrawing the page")
            return (f"the machine was busy: the decoding thread had its core {used:.0%} of this run's time, so "
                    f"its seconds and T(1) moved with the other work ({work})")
        return self._timings_disagree()

    def _timings_disagree(self) -> str:
        """Why the timings T(1) rests on cannot be one step's ("" where they agree)."""
        started = [t.wall for t in self.reference if t.starting]
        ended = [t.wall for t in self.reference if not t.starting]
        by_recent, besides = self.timed_by_recent_steps(), self._besides_words()
        if self.drawn and not by_recent and started and ended and max(started) > SETTLED_SPREAD * min(ended):
            # Not "a busy `ar` run's": a reviewer with only sd runs before, the machine quiet, read it.
            settle = "run `ar` on this page just before it to time the step as the page draws it" \
                if self.recent_busy is None else ("the target's one-token passes just before it had under "
                                                  f"{BUSY_UTILIZATION:.0%} of their core (other runs' on this "
                                                  "machine, beside other work or a page drawing them), too few "
                                                  "of the rest to time it: run `ar` on this page just before it")
            return (f"the page drawing each round beside the next moved `ar`'s step to {_ms(started)} as rounds "
                    f"started, against {_ms(ended)} as they ended, on the same cores: {settle}, or see the "
                    "Compare tab, which times this setting against `ar` without the page")
        # With the passes before the run, those as rounds ended (the page quiet) check them: the page's
        # drawing moved those as rounds started by 1.1-2.5x, a stats view more than a text one.
        own = self._kept_walls()
        by_phase = self.drawn and not by_recent
        phases = [[t.wall for t in self.reference if t.starting == s] for s in (False, True)] if by_phase else [own]
        if any(_apart(walls) for walls in phases):
            # It names what can move them, not "the load changed": a reviewer saw 60-150 ms with nothing else running.
            return f"T(1) timed {_ms(own)} within the run, too far apart to be one step's: {self._what_moves()} them" \
                + (f" ({besides})" if besides else "")
        recent = _middle(self.recent_steps)
        if _apart(self.recent_steps):
            between = " between their quartiles" if len(self.recent_steps) >= MANY_TIMINGS else ""
            return (f"the target's one-token passes of the two minutes before this run, which time its T(1) with its "
                    f"own timings, took {_ms(recent)}{between}: the machine's load changed in those minutes")
        step, before = self.own_step(), self.recent_step
        # Its own timings, taken as rounds ended (the page quiet), run under passes the page drew: a quiet
        # page's `ar` passes averaged 1.2-1.7x a following sd run's own (52-70 ms against 41-44 ms).
        if step and before and (step > SETTLED_SPREAD * before or before > MANY_SPREAD * step):
            elsewhere = "the Compare tab times this setting against `ar` without the page" if self.drawn \
                else "`bench` times it against `ar` run for run"
            return (f"this run timed `ar`'s step at {step * 1000:.1f} ms, the target's one-token passes just before "
                    f"it took {before * 1000:.1f} ms ({self._what_moves()} its timings{'; ' * bool(besides)}"
                    f"{besides}); {elsewhere}")
        return self._passes_under_step()

    def _what_moves(self) -> str:
        """What moves a quiet run's timings of one step: a page drawing beside them where one drew the
        run; else other work, or a fresh process's first passes (a CLI run's three timings read 55-126 ms,
        no other program beside it, its first one-token passes run slow now and then)."""
        if self.drawn:
            return "other work, or the page drawing on the same cores, moved"
        return "other work, or this process's own (a fresh process's first passes run slow now and then), moved"

    def _besides_words(self) -> str:
        """What else ran on the cores during the run: "besides this app: chromium 0.62 of a core", or
        "" where unmeasured."""
        words = named(self.besides)
        return f"besides this app during it: {words}" if words else ""

    def least_pass_cost(self) -> float:
        """The least a pass of several tokens may cost in T(1) before that T(1) reads as timed slower
        than the machine ran this run: LEAST_PASS_COST of its own timings; of the passes of the
        `ar` run before it, what one such run drawn by a page moves from the next (PAGE_AR_RUNS_APART)."""
        return 1 / PAGE_AR_RUNS_APART if self.timed_by_recent_steps() else LEAST_PASS_COST

    def _passes_under_step(self) -> str:
        """Why T(1) cannot be this run's step where its passes of several tokens cost less ("" otherwise)."""
        verify, step, mean, least = self.verify_cost(), self.single_step(), self.mean_pass(), self.least_pass_cost()
        if verify is None or verify >= least:
            return ""
        tokens = statistics.fmean(r.pass_tokens for r in self.rounds) if self.rounds else None
        over = f" over {tokens:.1f} tokens" if tokens else " of several tokens"
        if self.timed_by_recent_steps():
            source = ("the mean of the target's one-token passes of the last `ar` run before it (this page's, "
                      "another visitor's or a Compare's) and its own timings")
            allowed = f"and identical `ar` runs a page drew took up to {PAGE_AR_RUNS_APART}x one another's step"
        else:
            source, allowed = "the mean of its own timings", "less a tenth allowed for timing one step"
        return (f"its passes{over} took {mean * 1000:.1f} ms on average, under {least:.0%} of the "
                f"{step * 1000:.1f} ms of its T(1), {source}; a pass over several tokens costs more than one token's "
                f"(1.09-2.4x timed bare on the embedded target, {allowed}), so that T(1) ran slower than the machine "
                "ran this run, and its speedup over it reads too high")

    # The cost model, in this run's T(1) ---------------------------------------------------------

    def cost_ratio(self) -> float | None:
        """c: the run's mean seconds per draft forward over its T(1)."""
        step = self.single_step()
        return self.drafting / self.draft_forwards / step if step and self.draft_forwards else None

    def mean_pass(self) -> float | None:
        """The mean seconds of its verification passes after the prompt's."""
        later = self.pass_seconds[1:]
        return sum(later) / len(later) if later else None

    def verify_cost(self) -> float | None:
        """A verification pass over T(1)."""
        step, mean = self.single_step(), self.mean_pass()
        return mean / step if step and mean else None

    def predicted_speedup(self) -> float | None:
        """Theorem 3.8 with this run's c and pass cost: the tokens of its drafted rounds over their
        cost in T(1) (each draft forward c, each pass `verify_cost`)."""
        cost, verify = self.cost_ratio(), self.verify_cost() or 1.0
        drafted = [r for r in self.rounds if r.draft_forwards]
        if not drafted or cost is None:
            return None
        forwards = sum(r.draft_forwards for r in drafted)
        return sum(r.tokens for r in drafted) / sum(round_costs(forwards, len(drafted), 0, cost, verify).values())

    def bound(self) -> float | None:
        """The most this run's speedup can be from its own costs: its draft forwards at c, its
        passes at no less than T(1) each (its first at what it measured), nothing else."""
        step, cost = self.single_step(), self.cost_ratio()
        if not step or self.first_pass is None or not self.target_passes or (self.draft_forwards and cost is None):
            return None
        prompt = self.first_pass / step
        least = self.draft_forwards * (cost or 0.0) + prompt + self.target_passes - 1
        return (prompt + (self.tokens - 1) * (1 + self.ar_host / step)) / least if least > 0 else None

    def budget(self) -> dict[str, dict[str, float]] | None:
        """Three rows of seconds: where the run's went (adding up to its clock), the cost model's
        prediction of its rounds (each draft forward c, each later pass `verify_cost`, in its T(1)),
        and `ar`'s for the same tokens; the prompt's pass is its own part of each, as measured."""
        if not self.round_count:
            return None
        out = {MEASURED_ROW: self.parts()}
        step, cost, ar = self.single_step(), self.cost_ratio(), self.ar_seconds()
        if step and cost is not None and self.first_pass is not None:
            later = self.rounds[1:]
            predicted = round_costs(sum(r.draft_forwards for r in self.rounds), len(later), 0, cost,
                                    self.verify_cost() or 1.0)
            predicted[PROMPT_PASS] = self.first_pass / step
            out["cost model (predicted)"] = {part: units * step for part, units in predicted.items()}
        if ar:
            host = (self.tokens - 1) * self.ar_host
            out[AR_ROW] = {PROMPT_PASS: self.first_pass, "target passes": ar - self.first_pass - host}
            if host:
                out[AR_ROW][HOST_PART] = host
        return out

    def profile(self) -> CostProfile | None:
        """The run's own costs in its T(1), for the what-if: c, each pass size's mean cost, the
        prompt's pass, and the rest of its clock per round. Replayed on it, the rounds take the
        run's own seconds, and project its own speedup."""
        step = self.single_step()
        if not step or not self.rounds or self.first_pass is None:
            return None
        sizes: dict[int, list[float]] = {}
        for round_, seconds in zip(self.rounds[1:], self.pass_seconds[1:]):
            sizes.setdefault(round_.pass_tokens, []).append(seconds / step)
        curve = tuple((size, sum(costs) / len(costs)) for size, costs in sorted(sizes.items())) or ((1, 1.0),)
        cost = self.cost_ratio() or 0.0
        profile = CostProfile(THIS_RUN, "this run's draft forwards, passes and host time, over the "
                              "T(1) timed beside its rounds", cost, curve, 0.0, self.first_pass / step,
                              self.ar_host / step)
        rest = self.decoder_seconds / step - sum(replay(self.rounds, profile).values())
        return replace(profile, host_per_round=rest / len(self.rounds))

    def to_dict(self) -> dict:
        """CONTRACT: the account as the CLI's JSON carries it (stats.account)."""
        step = self.single_step()
        return {
            "clock_seconds": self.clock, "decoder_seconds": self.decoder_seconds,
            "decoder_cpu_seconds": self.decoder_cpu,
            "parts": self.parts(), "speedup": self.speedup(), "ar_seconds": self.ar_seconds(),
            "utilization": self.utilization(), "unsettled": self.unsettled() or None, "besides": self.besides,
            "drawn": self.drawn,
            "single_step_seconds": step, "own_step_seconds": self.own_step(), "recent_step_seconds": self.recent_step,
            "ar_host_seconds": self.ar_host,
            "step_with_recent_passes": self.timed_by_recent_steps(), "reference": [vars(t) for t in self.reference],
            "first_pass_seconds": self.first_pass,
            "cost_ratio": self.cost_ratio(), "verify_cost": self.verify_cost(),
            "predicted_speedup": self.predicted_speedup(), "bound": self.bound(),
        }


def _ms(walls: list[float]) -> str:
    """"55.0 ms", or "53.0-131.0 ms" for timings that differ."""
    low, high = min(walls) * 1000, max(walls) * 1000
    return f"{low:.1f} ms" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f} ms"


def _middle(walls: list[float]) -> list[float]:
    """The timings sorted; where there are many, those between the quartiles."""
    walls = sorted(walls)
    return walls[len(walls) // 4:3 * len(walls) // 4 + 1] if len(walls) >= MANY_TIMINGS else walls


def _apart(walls: list[float]) -> bool:
    """Whether timings are too far apart to be one step's: few of them, end to end; many, between
    their quartiles."""
    spread = _spread(walls)
    return spread is not None and spread > (MANY_SPREAD if len(walls) >= MANY_TIMINGS else SETTLED_SPREAD)


def _spread(walls: list[float]) -> float | None:
    walls = _middle(walls)
    return walls[-1] / walls[0] if len(walls) > 1 and walls[0] > 0 else None
