"""Starts a session's runs from the controls: their options, the session's family, and for csd
the correction memory the app keeps for that family. Every round runs in a turn of the session's
visitor (turns.py); a Generate run, a Compare's or a Race's runs wait in line first (waiting_line.py); a
Generate run identical to one finished moments ago is replayed instead, and one identical to a run
being computed follows it (identical.py)."""

from ...deploy.limits import current_limits
from ...engine import stream
from ...errors import PlaygroundError
from ...methods import METHODS
from ..options import options_from_values
from ..sharing import eta, model_thread
from ..sharing.identical import Claim, Identical, signature
from ..sharing.replay_stream import FOLLOW_NOTE, followed, replay_note, replayed
from ..sharing.server_settings import queue_settings
from ..sharing.visitors import visitor_of
from ..sharing.waiting_line import POLL_SECONDS, Job, Line, Place, ordinal, queued
from ..views.error_status import check_method
from .family_panel import FamilyPanel
from .memory import CorrectionMemories

TIMING_BARE_STEP = "timing the target's step for Compare's and Race's estimate (a few passes)"


class Runs:
    def __init__(self, family: FamilyPanel, memories: CorrectionMemories):
        self.family, self.memories = family, memories
        limits = current_limits()
        self.line = Line(limits.runs_sharing, queue_settings()["max_size"], model_thread.turns.busy_seconds)
        self.identical = Identical(limits.replay_seconds)

    def _prepare(self, key: str, method: str, values, override: dict) -> tuple[dict, dict]:
        """(the method's models, every argument of the engine's call but the prompt)."""
        check_method(method)
        options = {**options_from_values(method, values), **override}
        models = self.family.models_for(key, method)
        memory = self.memories.for_models(key, models) if METHODS[method].uses_memory else None
        return models, {"method": method, **models, "correction_memory": memory, **options}

    def stream(self, key: str, prompt: str, method: str, values) -> tuple[dict, object]:
        """(the method's models, the engine's step stream) of a step-mode run, each round in a turn
        and none waiting in line (a round at a click); counts one run against the session's rate."""
        models, arguments = self._prepare(key, method, values, {})
        self.family.sessions.get(key).admit(1, current_limits().runs_per_minute)
        return models, model_thread.iterate(stream(prompt, **arguments), visitor_of(key))

    def start(self, key: str, prompt: str, method: str, values, asked: float) -> tuple[dict, "Started"]:
        """(the method's models, a Generate run as it starts, asked for at `asked`, a perf_counter
        time); counts one run against the session's rate."""
        models, arguments = self._prepare(key, method, values, {})
        self.family.sessions.get(key).admit(1, current_limits().runs_per_minute)
        options = {name: value for name, value in arguments.items() if name not in models and name != "method"}
        return models, Started(self, key, prompt, models, arguments, signature(prompt, method, models, options), asked)

    def job(self, key: str, plan: list[tuple[str, int]]) -> Job:
        """A Compare's or Race's runs as one job in line: `plan` is (method, tokens at most) of each."""
        return Job(visitor_of(key), [(seconds_per_token(method, self.family.models_for(key, method)), tokens)
                                     for method, tokens in plan], page=key)

    def tab_job_going(self, key: str) -> bool:
        """Whether the session's Compare or Race waits or runs: the lines under their buttons wait for
        its end (told again above a busy job's own line, one read "about 6 min 40 s" over "about 2 min
        30 s left", and "x0.6: faster now" with the burners going)."""
        return self.line.has_page_job(key)

    def in_line(self, job: Job, given_up=lambda: False):
        """Status lines while `job` waits for the model (refused past the visitor's model time);
        the caller calls `done(job)` when it ends."""
        self.check_model_time(job.visitor)
        yield from queued(self.line, job, given_up)

    def time_machine(self, key: str, job: Job) -> None:
        """As `job` starts, in a turn of its own: time the target's bare step, which the job's estimate
        reads where the machine became slower than its last runs (eta.time_bare_step), unless the line
        under its button timed one just now under the same load (eta.bare_step_fresh)."""
        target = self.family.models_for(key, "ar")["target"]
        if not eta.bare_step_fresh(target):
            model_thread.call_as(job.visitor, job.charge, eta.time_bare_step, target, doing=TIMING_BARE_STEP)

    def time_machine_if_idle(self, key: str) -> None:
        """For the line under Compare's and Race's buttons, told as the settings change: time the
        target's bare step where it is loaded, its page shows a tab other than Generate, no run is in
        line and none was timed lately (beside burners started 40 s before, that line told a sweep
        "about 29 s"; it took 3 min 12 s). Not for a page on Generate, whose method switch tells the
        hidden lines too: a busy Generate pressed after one waited behind their timings."""
        target = self.family.loaded_target(key)
        if self.family.sessions.get(key).generate_shown or target is None or self.line.running():
            return
        if eta.claim_bare_step(target):
            model_thread.call(TIMING_BARE_STEP, eta.time_bare_step, target)

    def done(self, job: Job) -> None:
        self.line.leave(job)

    def check_model_time(self, visitor: str) -> None:
        """Refuse a run to a visitor whose turns took the limits' model seconds in the last minute."""
        allowed = current_limits().model_seconds_per_minute
        used = model_thread.turns.used
        if allowed and used.seconds(visitor) >= allowed:
            raise PlaygroundError(f"your runs used {used.seconds(visitor):.0f} s of the model in the last minute; "
                                  f"this deployment shares it at {allowed} s a minute per visitor: try again in "
                                  f"{max(1, round(used.free_in(visitor, allowed)))} s")

    def finished(self, key: str, prompt: str, method: str, values, job: Job | None = None, **override):
        """The finished Run, `override` taking the place of some of the controls' options, each round
        in a turn charged to `job` (the caller counts it against the session's rate)."""
        arguments = self._prepare(key, method, values, override)[1]
        run = None
        for step, run in model_thread.iterate(stream(prompt, **arguments), visitor_of(key),
                                              job.charge if job else None):
            run.stats.account.took_turns_with(self.line.running() - 1)
            if job is not None:
                job.wrote(len(step.tokens))
        return run


def seconds_per_token(method: str, models: dict) -> float | None:
    """This machine's seconds per token for `method` on `models` (eta.py), None when unknown."""
    rate = eta.seconds_per_token(method, models)
    return rate.seconds if rate else None


class Started:
    """A Generate run from its start to its end: its wait (in line, or for an identical run being
    computed to begin), its steps (computed round by round, followed as another visitor's identical
    run computes them, or replayed) and its end."""

    def __init__(self, runs: Runs, key: str, prompt: str, models: dict, arguments: dict, key_of_run: tuple | None,
                 asked: float):
        self.runs, self.prompt, self.models, self.arguments, self.asked = runs, prompt, models, arguments, asked
        self.signature, self.visitor = key_of_run, visitor_of(key)
        self.record = self.job = self.following = self.computing = None
        self.claimed = False

    @property
    def replay(self) -> str | None:
        """The label of a run shown without computing it: a replay, or a follower."""
        if self.record:
            return replay_note(self.record.at)
        return FOLLOW_NOTE if self.following else None

    @property
    def doing(self) -> str:
        return "replaying" if self.record else "following" if self.following else "generating"

    def waits(self, given_up=lambda: False):
        """Status lines while the run waits, until its steps may start (or `given_up()`)."""
        identical = self.runs.identical
        while isinstance(found := identical.claim(self.signature), Claim):
            steps, ended = found.steps_when(0, 0)
            if ended:
                continue  # it ended just now: replay its record, or compute it if it ended unfinished
            if steps:
                self.following = found
                return
            if given_up():
                return
            yield self._following(found)
            found.steps_when(0, POLL_SECONDS)
        if found is not None:
            self.record = found
            return
        self.claimed = self.signature is not None
        method, most = self.arguments["method"], self.arguments["max_new_tokens"]
        tokens = eta.expected_tokens(method, self.models, self.prompt, most, self.arguments["temperature"],
                                     self.arguments["seed"])
        self.job = Job(self.visitor, [(seconds_per_token(method, self.models), tokens)], most=most,
                       spread=eta.length_spread(most))
        if (claim := identical.computing(self.signature)) is not None:
            claim.job, self.computing = self.job, claim
        yield from self.runs.in_line(self.job, given_up)

    def turn_text(self) -> str | None:
        """Where a run that starts beside others stands: how many share the model, and when its
        first tokens should come, as a range: each run ahead in the ring takes one turn first (a
        first step, with its prompt's pass, for those that have not started; a round for the rest,
        between the quartiles of recent turns), then its own first step. That work is counted in
        the model thread's CPU seconds and put on the clock at the share of its core the thread
        had lately (Turns.pace) and the share of the clock the model was held (Line.duty). None
        when it computes alone."""
        others = self.runs.line.running() - 1
        if self.job is None or others < 1:
            return None
        runs = "1 other run shares" if others == 1 else f"{others} other runs share"
        share = f"generating: {runs} the model, a round each in turn"
        lengths, first = model_thread.turns.turn_seconds(), eta.first_step_cpu()
        if lengths is None or first is None:
            return share
        new, clock_share = self.runs.line.unstarted() - 1, self.runs.line.duty() * model_thread.turns.pace()
        low, high = (((others - new) * length + (new + 1) * first) / clock_share for length in lengths)
        return f"{share}: first tokens in {Place(0, low, (1.0, high / low)).wait_text()}"

    def sharing(self) -> str:
        """While it runs: how many other runs take turns with it now ("" when none), so a page
        whose run slows when others join says why."""
        others = self.runs.line.running() - 1 if self.job is not None else 0
        return "" if others < 1 else f" (sharing the model with {others} other run{'s' * (others > 1)}, a round each)"

    def shared_text(self, run) -> str:
        """At its end, for a run that took turns with others: who, and what its wait came to ("" if
        none), so the time on its end line is not read as its own pace."""
        account = run.stats.account
        if not account.shared_with:
            return aside_text(account)
        others = "1 other run" if account.shared_with == 1 else f"up to {account.shared_with} other runs"
        return (f"; it took turns with {others} (a round each): {account.waited:.2f} s of it was waiting, counted in "
                "its budget")

    def _following(self, claim: Claim) -> str:
        place = self.runs.line.place(claim.job) if claim.job is not None else None
        if place is None:
            where, wait = "starting", "in a moment"
        else:
            where = f"{ordinal(place.position)} in line"
            wait = place.wait_text() if place.seconds is not None else \
                "the wait is known once it has been measured"
        return (f"waiting for the model: the identical run (same prompt, models, settings and seed) of another visitor "
                f"is {where} and will be shown here as it is computed, {wait}")

    def steps(self, given_up=lambda: False):
        """(step, run) as the run goes: replayed on the record's clock, followed (until `given_up()`),
        or computed a round a turn."""
        if self.record is not None:
            return replayed(self.record.run, self.replay)
        if self.following is not None:
            return followed(self.following, given_up)
        return self._computed()

    def _computed(self):
        steps = model_thread.iterate(stream(self.prompt, **self.arguments), self.visitor, self.job.charge)
        for number, (step, run) in enumerate(steps):
            if not number:
                run.stats.account.asked_at(self.asked)  # its clock from the click, as its visitor waited
                run.stats.account.drawn = True
            self.job.wrote(len(step.tokens))
            run.stats.account.took_turns_with(self.runs.line.running() - 1)
            if self.computing is not None:
                self.computing.add(step, run)
            yield step, run

    def close(self, run) -> None:
        """The run ended (`run`: its last state, or None): leave the line; a computed run that
        finished is replayed to identical runs from now on, and those waiting for it go on."""
        if self.job is not None:
            self.runs.done(self.job)
        if self.claimed:
            if run is not None and run.finished and self.record is None:
                self.runs.identical.publish(self.signature, run)
            self.runs.identical.release(self.signature)


NOTICED_ASIDE = 0.1  # the share of a run's seconds not its own decoding that its end line explains


def aside_text(account) -> str:
    """At the end of a run that took no turns: the seconds of its clock that were not its own
    decoding, where they were a noticeable share: preparing the draft's levers, before its first
    round (a place in line, a model loading), while the page took its rounds' views, and timing
    `ar`'s step; the speed figures read the rest ("" otherwise). A reviewer alone read 2.03 s of
    5.26 s as "waiting (its turn, a load)", no load named; another read `ar`'s 3.39 s and sd's 3.51 s
    beside sd's 1.05x; another 0.96 s "before its first round" of the first sd after a Load, with no
    run in line: its draft's preparation."""
    if account.waited + account.measuring < NOTICED_ASIDE * account.clock:
        return ""
    prepared = account.prepared_before()
    parts = [(prepared, "preparing the draft's levers (its int8 copy or smaller head, once a model)"),
             (account.before - prepared, "before its first round (from the click: the app starting it, and any "
                                         "place in line or model load)"),
             (account.waited - account.before, "while the page took its rounds' views"),
             (account.measuring, "timing `ar`'s step")]
    said = ", ".join(f"{seconds:.2f} s {what}" for seconds, what in parts if seconds >= 0.01)
    return (f"; {account.decoder_seconds:.2f} s of it decoding, which its speed figures read; the rest, in its "
            f"budget: {said}")
