"""The Generate tab's what-if: the last run's rounds (draft forwards, pass sizes, tokens) replayed
on the costs of another machine or pair (decoding/speed/what_if.py), with a slider for the draft's cost
c and the line where the speedup crosses 1. A projection from the run's own acceptance, labelled
as one: nothing here is measured on the chosen profile."""

from dataclasses import dataclass, replace
from functools import partial

import gradio as gr
import plotly.graph_objects as go

from ...decoding.speed import what_if
from ...decoding.speed.cost_model import CostProfile, break_even_cost_ratio, projected_speedup
from ...errors import PlaygroundError
from ...methods import METHODS
from ..sharing.session import Sessions
from ..views.charts import COLORS, LEGEND_BELOW, small_figure
from ..views.error_status import toast_text
from ..views.widgets import Choice, OptionSlider
from .wiring import PRIVATE, Shared, keyed

OWN_CURVE = "your own: c from the slider, T(n)/T(1) from the box"
# After a new run, your own c stayed and read 0.95x beside the stats' 1.60x, unexplained.
KEPT_OWN = (" Your own costs stay from run to run (c is the slider's, which choosing another profile moves), so "
            f"this is not the run's own figure: choose *{what_if.THIS_RUN}* for that.")
# A reviewer emptied the box and read a projection with no word of the curve it used.
EMPTY_CURVE = "the box is empty, so every pass costs one T(1) whatever its size: type pairs like '2: 1.09, 4: 1.26'"
SHOWN_DIGITS = 3  # of c on the slider
COST_RANGE = (0.0, 2.0)  # the c slider's
# While a run goes, the words of the last run's projection (its rounds, tokens) read as this one's.
RUN_GOING_JS = ('() => "*A run is going: the what-if replays its rounds when it ends (the chart below is the '
                "last run's).*\"")
C_STEPS = 101  # points of the speedup-vs-c line over 0..1 (0..2 past a c of 1)
# A curve is a handful of measured pass sizes: 400,000 typed pairs (7.3 MB) took 41 s of the server's CPU.
MAX_CURVE_CHARS, MAX_CURVE_POINTS = 2000, 64


def profile_names() -> list[str]:
    return [what_if.THIS_RUN, *(p.name for p in what_if.recorded_profiles()), OWN_CURVE]


MAX_PASS_COST = 1000  # in T(1): past it the projection is a pass only, and a typo more likely than a model


def parse_curve(text: str) -> tuple[tuple[int, float], ...]:
    """'2: 1.09, 4: 1.26' -> ((1, 1.0), (2, 1.09), (4, 1.26)); T(1)/T(1) is 1 by definition."""
    if not isinstance(text, str | None):
        raise PlaygroundError(f"the curve must be text like '2: 1.09, 4: 1.26', got {type(text).__name__}")
    if text and (len(text) > MAX_CURVE_CHARS or text.count(",") >= MAX_CURVE_POINTS):
        raise PlaygroundError(f"the curve is {len(text):,} characters; write at most {MAX_CURVE_POINTS} pairs "
                              f"({MAX_CURVE_CHARS:,} characters) like '2: 1.09, 4: 1.26'")
    points = {1: 1.0}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        size, _, ratio = item.partition(":")
        try:
            n, value = int(size), float(ratio)
            if value != value:  # nan passes no comparison: it read "nan is past it"
                raise ValueError(ratio)
        except ValueError:
            raise PlaygroundError(f"cannot read {item!r} as 'tokens: cost': write pairs like '2: 1.09, 4: 1.26'") \
                from None
        if n < 1:
            raise PlaygroundError(f"{item!r}: a pass is over 1 or more tokens, got {n}: write pairs like '2: 1.09'")
        if not 1 <= value < MAX_PASS_COST:
            why = ("it does the one-token pass's work and more: '2: 0.5' projected 32x" if value < 1 else
                   f"{value:g} is past it: no pass of this playground's models costs that much")
            raise PlaygroundError(f"{item!r}: a pass costs from 1 to {MAX_PASS_COST} T(1) ({why})")
        if n in points and n > 1:
            raise PlaygroundError(f"{size.strip()} tokens are given twice: give each pass size once")
        points[n] = value
    return tuple(sorted(points.items()))


class WhatIf:
    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def profile_chosen(self, key: str, name: str):
        """The slider moves to the chosen profile's own c (the run's, for this run)."""
        if name not in profile_names():
            return None
        if name == OWN_CURVE:
            return gr.skip()  # your own curve keeps the c the slider shows
        profile = self._profile(key, name, None, "")
        return round(profile.cost_ratio, SHOWN_DIGITS) if profile else None

    def project(self, key: str, name: str, cost_ratio: float, curve_text: str,
                typed: bool = True) -> tuple[str, go.Figure | None]:
        """(the projection in words, speedup against c on the chosen profile); where c was `typed`
        (not a refresh after a run), a c at an end of the slider says a c past it is moved there."""
        run = self.sessions.get(key).run
        if name not in profile_names():
            return f"**what-if:** {toast_text(f'unknown costs {name!r}: choose one of the list')}", None
        why_not = self.why_not(key)
        if why_not:
            return why_not, None
        rounds = run.stats.account.rounds
        # First, on a line of its own: at the end of the paragraph a reviewer took it for no answer to a
        # 5 typed; before a refusal of the curve too, which hid it.
        end = next((f"**c = {bound:g} is the slider's {which}:** a {beyond} c typed into its box is moved there.\n\n"
                    for bound, which, beyond in ((COST_RANGE[0], "start", "smaller"), (COST_RANGE[1], "end", "larger"))
                    if typed and cost_ratio == bound), "")  # a -1 typed became 0 unsaid
        try:
            self._check_cost(key, name, cost_ratio)
            profile = self._profile(key, name, cost_ratio, curve_text)
        except PlaygroundError as error:
            return f"{end}**what-if:** {error}", None
        if profile is None:
            return "This run has no measured one-token step T(1) to put its costs in.", None
        unsettled = run.stats.account.unsettled() if name == what_if.THIS_RUN else ""
        if unsettled:  # its figure here beside "not settled" on the card was a third one for the run
            return (f"{end}**Not settled:** {unsettled}. So this run's {len(rounds)} rounds "
                    f"({sum(r.tokens for r in rounds)} tokens, {sum(r.draft_forwards for r in rounds)} draft forwards) "
                    "are not projected on its own costs: choose another machine's costs above (its rounds, replayed "
                    "on them, do not depend on this machine's load), or run it again on a quieter machine."), None
        return end + _words(run, rounds, profile) + _beside_prediction(run, profile), _speedup_by_cost(rounds, profile)

    def _check_cost(self, key: str, name: str, cost_ratio: float | None) -> None:
        """c typed below 0 or past the slider's end is refused (the slider moves it into its range
        when its box is left); the chosen costs' own c may pass the end (a slow draft's)."""
        if cost_ratio is None or 0 <= cost_ratio <= COST_RANGE[1]:
            return
        own = self._profile(key, name, None, "") if name != OWN_CURVE else None
        if own is not None and round(own.cost_ratio, SHOWN_DIGITS) == cost_ratio:
            return
        raise PlaygroundError(f"c must be between {COST_RANGE[0]:g} and {COST_RANGE[1]:g} (a draft forward in target "
                              f"steps), got {cost_ratio:g}: the slider moves it into its range when you leave the box")

    def why_not(self, key: str) -> str:
        """Why the last run cannot be projected ("" where it can)."""
        run = self.sessions.get(key).run
        if run is None:
            return "Run something first: the what-if replays the last run's rounds."
        if "qualifier" in METHODS[run.method].roles:
            return ("PyramidSD drafts with two models (draft and qualifier): the what-if replays one draft's "
                    "rounds, so it does not project this run.")
        if not any(r.draft_forwards for r in run.stats.account.rounds):
            return f"{run.method} drafted nothing in this run: there is no draft cost to vary."
        return ""

    def on_page(self, key: str, name: str, cost_ratio: float, curve_text: str, typed: bool = False) -> tuple:
        """The projection with the panel's controls and chart shown only where the run can be
        projected (a PyramidSD run's what-if is its words alone, not an empty chart and a slider),
        and the curve's box only where it is read: for your own costs (a bad curve went unsaid under
        the run's own)."""
        words, figure = self.project(key, name, cost_ratio, curve_text, typed)
        visible = not self.why_not(key)
        return (words, gr.update(value=figure, visible=visible), gr.update(visible=visible),
                gr.update(visible=visible), gr.update(visible=visible and name == OWN_CURVE))

    def _profile(self, key: str, name: str, cost_ratio: float | None, curve_text: str) -> CostProfile | None:
        run = self.sessions.get(key).run
        if name == OWN_CURVE:
            source = "entered on this page" if (curve_text or "").strip() else EMPTY_CURVE
            return CostProfile(OWN_CURVE, source, cost_ratio or 0.0, parse_curve(curve_text))
        if name == what_if.THIS_RUN:
            profile = run.stats.account.profile() if run else None
        else:
            profile = next((p for p in what_if.recorded_profiles() if p.name == name), None)
        if profile is None or cost_ratio is None or round(profile.cost_ratio, SHOWN_DIGITS) == cost_ratio:
            return profile  # the slider at the profile's own c, as shown: the profile's c exactly
        return replace(profile, cost_ratio=cost_ratio)


def _words(run, rounds, profile: CostProfile) -> str:
    speedup = projected_speedup(rounds, profile)
    even = break_even_cost_ratio(rounds, profile)
    sizes = sorted({r.pass_tokens for r in rounds})
    crossing = (f"it breaks even with `ar` at c = {even:.2f}" if even is not None
                else "it is slower than `ar` even with a draft that costs nothing")
    step = run.stats.account.single_step()
    unit = (f" (its costs in this run's T(1), {step * 1000:.1f} ms, the stats' target step)"
            if profile.name == what_if.THIS_RUN and step else "")
    return (f"**Projection, not a measurement:** this run's {len(rounds)} rounds ({sum(r.tokens for r in rounds)} "
            f"tokens, {sum(r.draft_forwards for r in rounds)} draft forwards, target passes over "
            f"{sizes[0]}-{sizes[-1]} tokens) on *{profile.name}* ({profile.source}){unit}: at c = "
            f"{profile.cost_ratio:.3f}, **{speedup:.2f}x** the speed of `ar` (one target step a token); {crossing}."
            f"{KEPT_OWN if profile.name == OWN_CURVE else ''}")


def _beside_prediction(run, profile: CostProfile) -> str:
    """At the run's own costs, why the projection is not the stats' predicted speedup (a reviewer
    read 1.27x here beside 1.54x there, unexplained): the replay pays the host's time too, and the
    prompt's pass as measured (cold after a Load: a second, where the prediction counts 0.95 T(1))."""
    predicted = run.stats.account.predicted_speedup()
    if profile.name != what_if.THIS_RUN or predicted is None:
        return ""
    return (f" The stats' predicted speedup ({predicted:.2f}x) counts the drafting and the passes alone, the "
            f"prompt's at a verification pass's cost; this replay pays the prompt's pass as it ran, "
            f"{profile.prompt_pass:.2f} T(1) (and so does `ar`), and what the run spent between its rounds, "
            f"{profile.host_per_round:.2f} T(1) a round (the checks, the host, the page).")


def _speedup_by_cost(rounds, profile: CostProfile) -> go.Figure:
    end = 2.0 if profile.cost_ratio > 1 else 1.0
    costs = [end * i / (C_STEPS - 1) for i in range(C_STEPS)]
    speedups = [projected_speedup(rounds, replace(profile, cost_ratio=c)) for c in costs]
    traces = [go.Scatter(x=costs, y=speedups, mode="lines", name="projected speedup", line={"color": COLORS["draft"]}),
              go.Scatter(x=[0, end], y=[1, 1], mode="lines", name="as fast as ar",
                         line={"color": "#888888", "dash": "dash"}),
              go.Scatter(x=[profile.cost_ratio], y=[projected_speedup(rounds, profile)], mode="markers",
                         name=f"c = {profile.cost_ratio:.3f}", marker={"color": COLORS["target"], "size": 10})]
    return small_figure("What if: this run's rounds at another draft cost (projection)", traces,
                   "c: one draft forward in target steps", "speedup over ar", height=320, legend=LEGEND_BELOW,
                   margin={"l": 50, "r": 15, "t": 40, "b": 110})


@dataclass
class WhatIfPanel:
    profile: gr.Dropdown
    cost: gr.Slider
    curve: gr.Textbox
    words: gr.Markdown
    plot: gr.Plot

    @property
    def inputs(self) -> list:
        return [self.profile, self.cost, self.curve]

    @property
    def outputs(self) -> list:
        """The words, then what is shown only where the run can be projected."""
        return [self.words, self.plot, self.profile, self.cost, self.curve]


def build_panel() -> WhatIfPanel:
    """The last run's rounds on other costs (what_if.py); filled in when a run ends."""
    with gr.Accordion("What if: this run's rounds on another machine's costs (a projection)", open=False,
                      elem_id="what-if"):
        with gr.Row():
            names = profile_names()
            profile = Choice(names, value=names[0], label="costs of", elem_id="what-if-profile", scale=3)
            # A run's own c may pass the slider's end (a slow draft): the what-if reads it as it is.
            # Its step is the shown c's last digit: at 0.005, a run's c of 0.354 read 0.355 on the slider.
            cost = OptionSlider(*COST_RANGE, value=0.1, step=10 ** -SHOWN_DIGITS,
                                label="c: a draft forward in target steps", elem_id="what-if-c", scale=2)
        curve = gr.Textbox("2: 1.09, 4: 1.26, 8: 1.40, 16: 1.84", label="your own T(n)/T(1) (tokens: cost, ...)",
                           elem_id="what-if-curve", visible=False)  # shown for your own costs (`on_page`)
        words = gr.Markdown(elem_id="what-if-words")
        plot = gr.Plot(elem_id="chart-what-if", show_label=False)
    return WhatIfPanel(profile, cost, curve, words, plot)


def wire(ui: Shared, panel: WhatIfPanel) -> None:
    project = {"fn": keyed(ui.handlers.what_if_on_page), "inputs": panel.inputs, "outputs": panel.outputs, **PRIVATE}
    panel.profile.change(keyed(ui.handlers.what_if_profile), panel.profile, panel.cost, **PRIVATE).then(**project)
    # A c typed into the slider's box counts as it is typed (Enter alone sends nothing there), and
    # again as the slider moves it into range when the box is left (a change, not an input); a
    # curve counts on Enter and when its box is left.
    # The notice of a c moved to an end of the slider answers these alone: after the next run it was stale.
    typed = {**project, "fn": keyed(partial(ui.handlers.what_if_on_page, typed=True))}
    gr.on([panel.cost.release, panel.cost.input, panel.cost.change, panel.curve.submit, panel.curve.blur],
          trigger_mode="always_last", **typed)
