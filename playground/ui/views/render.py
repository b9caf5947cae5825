"""HTML for generated text: one span per token, colored by origin, diagnostics on hover.

The text reads as text: spans sit inline in a `white-space: pre-wrap` block (see assets/ui.css),
so spaces and newlines are the model's own. A replaced draft candidate can be shown struck
through, in place, just before the token that replaced it.
"""

import dataclasses
from collections.abc import Callable
from html import escape

from ...decoding.speed.other_programs import named
from ...decoding.speed.speed_account import AR_ROW, MANY_SPREAD, MEASURED_ROW, PAGE_AR_RUNS_APART, SETTLED_SPREAD
from ...decoding.step import ORIGINS, RuleCheck, TokenRecord, candidate_source, stage_one_replaced
from ...decoding.token_tree import branches
from ...methods.acceptance import number
from ...serving import describe
from .explain_round import STAGES, symbols
from .paired_speedups import Speedup
from .tree_view import tree_html

ORIGIN_LABELS = {"draft": "draft (accepted)", "qualifier": "qualifier", "target": "target",
                 "rescued": "rescued (CSD)"}

# Diagnostics in the order a reader wants them, with their labels; others follow as they are.
# Every method means the same by each, on every token: p_* is the verifier's probability of this
# token after the sampling settings (1 for the argmax when greedy), p_*_raw at temperature 1
# (what divergences and gates compare); a kept candidate's q is what the draft drew it from.
DIAGNOSTIC_LABELS = {"p_target": "p target (sampling settings)", "p_target_raw": "p target raw (T=1)",
                     "p_qualifier": "r qualifier (sampling settings)", "p_qualifier_raw": "r qualifier raw (T=1)",
                     "p_draft": "q draft (what it was drawn from: one-hot if greedy, without earlier siblings)",
                     "divergence": "divergence", "comparison": "accepted if divergence", "tau": "tau",
                     "accept_prob": "acceptance prob", "u": "its draw u (kept if u < acceptance prob)",
                     "drawn_from": "drawn from",
                     "position_in_block": "position in block (from 1)", "bonus": "bonus token",
                     "branch": "tree branch (0: the chain's own token, 1+: a sibling the tree added)",
                     "lookup": "from the prompt lookup's branch",
                     "verifier_draw": "the verifier's own draw (kept only where it matched)"}
# A rule without a threshold (sd's ratio test, csd's rescue) never reads the divergence its check records.
UNREAD_DIVERGENCE = "divergence (recorded for the charts; this rule does not read it)"
CANDIDATE_FIGURES = ("p_target", "p_qualifier", "p_draft", "divergence", "tau", "accept_prob", "u", "verifier_draw",
                     "psi")


def tooltip(token: TokenRecord, decode: Callable[[int], str]) -> str:
    lines = [f"{token.origin} · id {token.id} · {token.text!r}"]
    diagnostics = token.own_figures()
    for key in DIAGNOSTIC_LABELS:
        if key in diagnostics:
            lines.append(f"{_label(key, diagnostics)}: {_value(key, diagnostics.pop(key), decode)}")
    lines += [_line(key, value) for key, value in diagnostics.items()]
    if token.branch and token.replaced and token.check.is_ratio:  # recursive rejection sampling's residual
        lines.append(f"its acceptance prob reads p after the {len(token.replaced)} candidate(s) rejected before it "
                     "(the residual, as step mode shows), not the p above")
    lines += [f"replaced {_candidate(c, source, decode)}" for c, source in zip(token.replaced, token.replaced_sources)]
    return "\n".join(lines + _stage_one_lines(token, decode))


def _stage_one_lines(token: TokenRecord, decode: Callable[[int], str]) -> list[str]:
    """PyramidSD: the qualifier's check of the token at stage one, and the draft candidates it rejected."""
    if not token.stage_one:
        return []
    return ["the qualifier's check (stage 1):",
            *(f"  {_line(key, value)}" for key, value in token.stage_one_check.items()),
            *(f"  rejected {_candidate(c, candidate_source(c), decode)}" for c in token.stage_one_replaced)]


def _candidate(candidate: dict, source: str, decode: Callable[[int], str]) -> str:
    kind = "qualifier" if candidate.get("origin") == "qualifier" else "draft"
    return f"{kind} candidate {decode(candidate['id'])!r} (id {candidate['id']}, {source}){_figures(candidate, decode)}"


def _figures(candidate: dict, decode: Callable[[int], str]) -> str:
    """A replaced candidate's own check, in a few words (its threshold with its divergence)."""
    shown = [f"{_label(key, candidate)} {_value(key, candidate[key], decode)}"
             for key in CANDIDATE_FIGURES if candidate.get(key) is not None]
    return f": {'; '.join(shown)}" if shown else ""


def _value(key: str, value, decode: Callable[[int], str]) -> str:
    """A figure as shown; the verifier's own draw as its token (a reviewer got only an id); a
    position counted from 1, as the struck marks and the position chart count it (the record's is
    from 0: a kept token read position 1 beside the mark it replaced at position 2)."""
    if key == "verifier_draw":
        return f"{decode(value)!r} (id {value})"
    return _number(key, value)


def _number(key: str, value) -> str:
    return number(value + 1) if key == "position_in_block" else number(value)


def _label(key: str, figures: dict) -> str:
    if key == "divergence" and not RuleCheck.of(figures).reads_divergence:
        return UNREAD_DIVERGENCE
    return DIAGNOSTIC_LABELS.get(key, key.replace("_", " "))


def _line(key: str, value) -> str:
    """One diagnostic in words; a stage's own checks (PyramidSD's qualifier check) one per line."""
    label = DIAGNOSTIC_LABELS.get(key, key.replace("_", " "))
    if isinstance(value, dict):
        return "\n".join([f"{label}:", *(f"  {_line(k, v)}" for k, v in value.items())])
    if isinstance(value, list):
        return f"{label}: {', '.join(number(item) for item in value)}"
    return f"{label}: {_number(key, value)}"


def token_span(token: TokenRecord, decode: Callable[[int], str], show_rejected: bool) -> str:
    branch = " tok-branch" if token.branch else ""  # a token tree's sibling, accepted
    span = (f'<span class="tok tok-{escape(token.origin)}{branch}" title="{escape(tooltip(token, decode))}">'
            f"{escape(token.text)}</span>")
    if show_rejected:
        struck = _struck_by_qualifier(token.stage_one_replaced, decode)
        for c, source in zip(token.replaced, token.replaced_sources):
            struck += _struck_by_qualifier(stage_one_replaced(c), decode)
            struck.append((c, _struck_title(token, c, source, decode)))
        span = "".join(f'<s class="tok tok-rejected" title="{escape(title)}">{rejected_text(decode(c["id"]))}</s>'
                       for c, title in struck) + span
    return span


def _struck_by_qualifier(candidates: list[dict], decode: Callable[[int], str]) -> list[tuple[dict, str]]:
    """PyramidSD's stage-one rejections, each a struck mark with its hover."""
    return [(c, f"rejected by the qualifier (stage 1): {_candidate(c, candidate_source(c), decode)}")
            for c in candidates]


def _struck_title(token: TokenRecord, candidate: dict, source: str, decode: Callable[[int], str]) -> str:
    """A struck mark's hover: the candidate, where it came from and its check, and what took its place."""
    # counted from 1, as the acceptance-by-position chart counts (a reviewer read 0 here, 1 there)
    where = f" at candidate position {token.block_position + 1} of its block" if token.block_position is not None \
        else ""
    return (f"rejected {_candidate(candidate, source, decode)}\n"
            f"in its place{where} the {token.origin} wrote {token.text!r} (id {token.id})")


def rejected_text(text: str) -> str:
    """A rejected candidate as a small mark above the line (assets/ui.css): its newlines and tabs
    shown as symbols, so it never breaks the text it annotates (a byte draft's run has one before
    nearly every token)."""
    return escape(text.replace("\n", "↵").replace("\t", "⇥")) or "∅"


def token_spans(tokens: list[TokenRecord], decode: Callable[[int], str], show_rejected: bool = False) -> str:
    """The spans alone, for a component that is itself the `token-text` block: while a run
    streams, this string only grows, so Gradio sends only the new tokens' spans."""
    return "".join(token_span(t, decode, show_rejected) for t in tokens)


def tokens_html(tokens: list[TokenRecord], decode: Callable[[int], str], show_rejected: bool = False,
                prompt: str = "") -> str:
    head = f'<span class="prompt">{escape(prompt)}</span>' if prompt else ""
    return f'<div class="token-text">{head}{token_spans(tokens, decode, show_rejected)}</div>'


def legend_html() -> str:
    items = "".join(f'<span class="tok tok-{o}">{ORIGIN_LABELS[o]}</span>' for o in ORIGINS)
    rejected = '<s class="tok tok-rejected">rejected candidate</s>'
    branch = '<span class="tok tok-draft tok-branch">from a tree branch</span>'
    hint = '<span class="hint">hover a token for its diagnostics</span>'
    return f'<div class="legend">{items}{branch}{rejected}{hint}</div>'


STAT_ROWS = (("tokens", "tokens", "{}"),
             ("tokens_per_second", "tokens/s (over its own seconds: less its timing of ar's step and waits)", "{:.1f}"),
             ("acceptance_rate", "acceptance rate (of every drafted candidate)", "{:.1%}"),
             ("mean_acceptance_length", "tokens per target forward", "{:.2f}"),
             ("drafted_per_pass", "candidates verified per target forward", "{:.2f}"),
             ("steps", "verification rounds", "{}"), ("drafted", "drafted", "{}"),
             ("accepted", "accepted", "{}"),
             ("speedup", "speedup over ar (this run's seconds against ar's for its tokens)", "{:.2f}x"),
             ("speedup_spread", "speedup over ar of your settled runs of this setting on this page (median, range, "
              "and the c and T(1) they ran at): one run's figure moves with the page's drawing and other work, as "
              "their c, T(1) and the other programs' cores show (the page's own browser is one); Compare repeats "
              "each side", "{}"),
             ("paired_speedup", "speedup over your last ar run (the same tokens, one run each)", "{:.2f}x"),
             ("expected_speedup", "predicted speedup, an estimate (Leviathan: c, pass cost below)", "{:.2f}x"),
             ("ar_step", "ms a target step, T(1): the mean of this run's one-token passes (ar writes a token a step)",
              "{:.1f}"),
             ("cost_ratio", "draft step / target step (c)", "{:.3f}"),
             ("verify_cost", "verification pass / target step", "{:.2f}x"), ("seconds", "seconds", "{:.2f}"),
             ("stop_reason", "stopped by", "{}"))


# A PyramidSD run's figures by stage: the qualifier checks the draft's tokens (writing its own in
# place of a rejected one, or a bonus), then the target checks the block the qualifier passed on.
STAGE_LABELS = {"acceptance_rate": "of the tokens the qualifier passed on, the target accepted",
                "drafted": "tokens the qualifier passed on", "accepted": "of them, the target accepted",
                "cost_ratio": "drafting per draft token / target step (c: the qualifier's checks included)"}


def _stage_one_cells(stats: dict) -> list[tuple[str, str, str]]:
    checked, kept = stats["qualifier_drafted"], stats["qualifier_accepted"]
    share = f" ({kept / checked:.0%})" if checked else ""
    return [(f"{kept} of {checked}{share}", "draft tokens the qualifier accepted, of all drafted (after a rejection "
                                             "the rest of a block goes unchecked)", ""),
            (str(stats["drafted"] - kept), "tokens the qualifier wrote (for a rejected draft token, or a bonus)", "")]


# A verification pass timed below the target step it is measured in (a reader asked how 0.98x could be).
UNDER_ONE_STEP = " (under 1x is the noise of timing one step: a pass costs at least that)"

# A reviewer read 1.79x mid-run and "not settled" once the run ended: until then it is provisional.
RUNNING_SPEEDUP = ", so far: whether it is settled is told when the run ends"

# The costs a busy machine moves with the speedup: marked where the speedup is not settled.
BUSY_MARKED = ("cost_ratio", "verify_cost")  # and the pairing with ar, in its own cell


# A draft with a vocabulary of its own proposes text: its candidates are that text cut into the
# target's tokens (a byte draft's 14 bytes may be 3 or 4 of them), counted and checked as such.
RETOKENIZED = {"drafted_per_pass": "candidates verified per target forward (the draft's text cut into target tokens)",
               "drafted": "drafted (target tokens its text spelled)"}


def stats_html(stats: dict, retokenized: bool = False) -> str:
    """The stats grid; `retokenized`: the draft has a vocabulary of its own (its text is cut into
    the target's tokens, and those are the candidates counted)."""
    staged = "qualifier_drafted" in stats
    unsettled = (stats.get("account") or {}).get("unsettled")
    cells = []
    for key, label, fmt in STAT_ROWS:
        if staged and key == "acceptance_rate":
            cells += _stage_one_cells(stats)
        if key == "speedup" and stats.get("stop_reason") == "running":
            label += RUNNING_SPEEDUP
        if key in ("speedup", "expected_speedup") and unsettled and key in stats:
            cells.append(("not settled", label, ""))  # a busy T(1) predicted 4.50x where the run gave 2.6x
        elif key == "speedup_spread" and key in stats:  # walk 29: the whole sentence stood in large bold
            value, _, runs = stats[key].partition(" (")
            # Walk 30: beside a busy run's "not settled" its bold figure read as this run's
            aside = " (not this run: it is not settled)" if unsettled else ""
            label = label.replace(" on this page", " on this page" + aside, 1)
            cells.append((value, f"{label}. These runs: {runs.removesuffix(')')}", " stat-aside"))
        elif key == "paired_speedup" and key in stats:
            pairing = stats[key]
            shown = "not given" if pairing.ratio is None else _format(fmt, pairing.ratio) + " *"
            cells.append((shown, f"{label}: {pairing.words}", ""))
        elif key in stats:
            mark = " *" if unsettled and key in BUSY_MARKED and stats.get(key) is not None else ""
            shown_label = STAGE_LABELS.get(key, label) if staged else RETOKENIZED.get(key, label) if retokenized \
                else label
            if key == "verify_cost" and (stats.get(key) or 1) < 1:
                shown_label += UNDER_ONE_STEP
            account = stats.get("account") or {}
            step = account.get("single_step_seconds")
            if key == "cost_ratio" and step:
                shown_label += f"; target step T(1) = {step * 1000:.1f} ms{_pooled_text(account)}" \
                    f"{_draft_step_text(stats.get(key), step, account)}"
            if key == "ar_step":
                shown_label += _ar_step_text(account)
            if key == "speedup" and step:  # beside an ar run's own tokens/s it read as a second ratio, unexplained
                shown_label = shown_label.replace("ar's for its tokens", f"ar's for its tokens at T(1) = "
                                                  f"{step * 1000:.1f} ms each, not an ar run's")
            if key == "speedup" and (passes := stats.get("ar_prompt_pass")):
                shown_label += (f"; ar's prompt's pass here is this run's {passes[1]:.3f} s, where the page's last ar "
                                f"run paid {passes[0]:.3f} s: so its tokens/s ratio over that run differs")
            cells.append((_format(fmt, stats.get(key)) + mark, shown_label, ""))
    shown = "".join(f'<div class="stat{aside}"><b>{value}</b><span>{escape(label)}</span></div>'
                    for value, label, aside in cells)
    marked = " The figures marked * were measured in the same conditions (what moved T(1) moved them too)." if any(
        value.endswith(" *") for value, _, _ in cells) else ""
    # Mid-run a reason is provisional too: one read "not settled" 3 s in, and the run ended settled.
    head = "Not settled so far (told again as the run ends)" if stats.get("stop_reason") == "running" else \
        "Speedup not settled"
    why = f'<p class="flagged">{head}: {escape(unsettled)}.{marked}</p>' if unsettled else ""
    return f'<div class="stat-grid">{shown}</div>{why}'


def _pooled_text(account: dict) -> str:
    """Where T(1) pools the target's one-token passes before the run with the run's own timings and
    these differ by a tenth: both means, the two figures its settled check compares (walk 24 read
    "T(1) = 93.3 ms" one cell away from "this run's 52.9 ms"; walk 25 held this run's 73.0 ms against
    the `ar` run's 48.0 ms, where the passes the check read averaged more)."""
    own, step = account.get("own_step_seconds"), account.get("single_step_seconds")
    if not account.get("step_with_recent_passes") or not own or abs(own - step) < 0.1 * step:
        return ""
    before = account.get("recent_step_seconds")
    return (f", with the target's one-token passes of the last ar run before it (this page's, another "
            f"visitor's or a Compare's: {before * 1000:.1f} ms on average; this run's own "
            f"timings: {own * 1000:.1f} ms; its speedup settles where its own are under {SETTLED_SPREAD}x those and "
            f"over 1/{MANY_SPREAD:.0f} of them)")


def _draft_step_text(cost_ratio: float | None, step: float, account: dict) -> str:
    """The draft's step in ms and what else took the cores during the run: identical quiet runs read
    c 0.17-0.39 with the same draft work, and nothing on screen said why (the page's own browser, on
    the same two cores, took 0.20-0.63 of one beside them)."""
    if not cost_ratio:
        return ""
    beside = named(account.get("besides"))
    return f"; a draft step {cost_ratio * step * 1000:.1f} ms" + (
        f", which moves with what shares the cores (besides this app during the run: {beside})" if beside else "")


def _ar_step_text(account: dict) -> str:
    """Why identical `ar` runs on a page differ: a reviewer read 14.5 then 11.7 tokens/s for the same
    run, without a word (their passes averaged 66 and 80 ms)."""
    beside = named(account.get("besides"))
    return (f"; a page drawing each token on the same cores moves it from one run to the next (by up to "
            f"{PAGE_AR_RUNS_APART}x for identical quiet runs on the embedded family)") + (
        f"; besides this app during the run: {beside}" if beside else "")


def acceptance_metrics(stats: dict) -> dict:
    """Compare's acceptance figures: one rate, or PyramidSD's two stages."""
    if "qualifier_drafted" not in stats:
        return {"acceptance": stats["acceptance_rate"]}
    checked = stats["qualifier_drafted"]
    return {"qualifier accepted, of the draft's": stats["qualifier_accepted"] / checked if checked else None,
            "target accepted, of the qualifier's": stats["acceptance_rate"]}


def serving_html(run) -> str:
    """The finished run's setting as serving-engine commands (or why there are none)."""
    if "draft" not in run.models:
        return ""
    text = describe(run.method, run.models["target"], run.models["draft"], run.config.candidates,
                    run.config.tree_width)
    return (f'<details class="serving"><summary>Serve this setting (vLLM, SGLang)</summary>'
            f"<pre>{escape(text)}</pre></details>")


def vocabulary_html(run) -> str:
    """Why a draft with its own vocabulary is rarely accepted, with this run's numbers (a byte
    draft failed on screen without a word); "" for any other run."""
    pair, stats = run.pair, run.stats
    if pair is None or pair.same_vocabulary or not stats.tokens:
        return ""
    sizes = (f"the draft writes from {pair.draft_vocabulary:,} tokens, the target from {pair.target_vocabulary:,}; "
             if pair.draft_vocabulary and pair.target_vocabulary else "")
    chars = len(run.text) / stats.tokens
    passed = (f"Here {stats.accepted} of {stats.drafted} drafted tokens passed ({stats.accepted / stats.drafted:.1%})"
              if stats.drafted else "Here nothing was drafted")
    target_wrote = stats.origins.get("target", 0)
    why = _shared_vocabulary_rule(pair) if run.method == "tli" else (
        f"this answer's target tokens average {chars:.1f} characters, and a drafted token passes only when the "
        f"draft's text spells the target's next token exactly ({escape(run.method)} verifies the target's tokens, "
        "not the draft's). Pieces of another vocabulary rarely line up with the target's tokens (a byte draft needs "
        "every byte of a token right).")
    return (f'<p class="vocabulary-note"><b>Why so few drafts pass:</b> {escape(sizes)}{why} {escape(passed)}; the '
            f"target wrote {target_wrote} of {stats.tokens} tokens itself.</p>")


def _shared_vocabulary_rule(pair) -> str:
    """tli's rule in words: speculative decoding on the token strings both vocabularies share."""
    shared = (f"the {pair.intersection:,} token strings both vocabularies share ({pair.share_of_target:.0%} of the "
              f"target's, {pair.share_of_draft:.0%} of the draft's)" if pair.intersection is not None
              else "the token strings both vocabularies share")
    return (f"tli drafts only from {shared}, and checks each drafted token with speculative decoding's rule, "
            "min(1, p/q), over that shared vocabulary: a token passes as often as the two models agree there, and "
            "what the draft would say outside it is never proposed.")


def budget_text(run) -> str | None:
    """A run's time budget (its speed account) in one line: its measured parts, then `ar`'s seconds
    for the same tokens (not for an `ar` run: its own seconds are those; not where its speedup is
    not settled, as the budget chart withholds them: a busy Compare printed them beside "not settled")."""
    budget = run.stats.account.budget()
    if not budget:
        return None
    parts = " · ".join(f"{part} {seconds:.2f} s" for part, seconds in budget[MEASURED_ROW].items() if seconds)
    ar = budget.get(AR_ROW) if run.method != "ar" and not run.stats.account.unsettled() else None
    return parts + (f" ({AR_ROW}: about {sum(ar.values()):.2f} s)" if ar else "")


def tokens(count: int) -> str:
    """'1 token', '2 tokens'."""
    return f"{count} token" + ("" if count == 1 else "s")


def _format(fmt: str, value) -> str:
    return "–" if value is None else escape(fmt.format(value))


def status_html(message: str, kind: str = "info") -> str:
    """A one-line status; kind 'error' makes it stand out (errors never break the app)."""
    return f'<div class="status status-{kind}">{escape(message)}</div>'


def _cells(values, tag: str = "td") -> str:
    return "".join(f"<{tag}>{escape(str(v))}</{tag}>" for v in values)


def _table(header, rows, css: str) -> str:
    body = "".join(f"<tr>{_cells(row)}</tr>" for row in rows)
    return f'<table class="{css}"><tr>{_cells(header, "th")}</tr>{body}</table>'


def check_test(e, decode: Callable[[int], str]) -> str:
    """The acceptance test of one check, written by the rule's own test record with its numbers."""
    if e.test is None:
        return "—"
    verifier, proposer = symbols(e)
    return e.test.describe(verifier, proposer, e.at_candidate, decode)


def _check_row(e, decode: Callable[[int], str]) -> tuple:
    verifier, proposer = symbols(e)
    kept = repr(decode(e.emitted)) + (f" (drawn from {e.drawn_from})" if e.drawn_from else "")
    numbers = [number(e.at_candidate[name]) if name in e.at_candidate else "—"
               for name in (verifier, proposer, f"{verifier}_raw", f"{proposer}_raw")]
    branch = e.branch
    if branch and "residual" in e.at_candidate:  # recursive rejection sampling: this sibling met p_(i+1)
        numbers[0] += f" ({verifier} after the {branch} sibling(s) rejected before it: the residual)"
    if branch:  # a sibling is drawn from q without the tokens drawn before it (the bars show q whole)
        for column in (1, 3):
            if numbers[column] != "—":
                numbers[column] += f" (without the {branch} sibling(s) drawn before it)"
    return (e.position + 1, repr(decode(e.candidate)), *numbers, check_test(e, decode), e.verdict, kept)


def _checks_table(checks: list, decode: Callable[[int], str]) -> str:
    verifier, proposer = symbols(checks[0])
    header = ("#", "candidate x", f"{verifier}(x)", f"{proposer}(x) as drawn", f"{verifier} raw(x)",
              f"{proposer} raw(x)", "test", "verdict", "emitted at this place")
    return _table(header, [_check_row(e, decode) for e in checks], "explain-table")


def _stage_one_trees(trees: list, checks: list, decode: Callable[[int], str]) -> list[str]:
    """PyramidSD's stage-one rounds that branched, each drawn with the qualifier's checks of that
    round (the checks come round after round, their positions counted from the round's first token)."""
    drawn, first, offset = [], 0, 0
    for tree in trees:
        mine = checks[first:first + tree["checks"]]
        if branches(tree["parents"]):
            shifted = [dataclasses.replace(e, position=e.position - offset) for e in mine]
            drawn.append(tree_html(tree, shifted, lambda e: check_test(e, decode), decode, verifier="qualifier"))
        first += tree["checks"]
        offset += len(tree["path"]) + 1
    return drawn


def explanation_html(explanation, decode: Callable[[int], str]) -> str:
    """Step mode: each check with the numbers its rule used (PyramidSD: both stages), then the
    emitted tokens and why. `x(y)` columns: sampling settings; `raw`: temperature 1."""
    stage_one = [e for e in explanation.checks if e.stage == "qualifier"]
    stage_two = [e for e in explanation.checks if e.stage == "target"]
    unchecked = explanation.drafted - len(stage_two)
    note = (f"<p>{explanation.drafted} candidates drafted; {unchecked} after the first rejection were "
            "discarded unchecked.</p>" if unchecked > 0 else f"<p>{explanation.drafted} candidates drafted.</p>")
    if explanation.tree:
        note = tree_html(explanation.tree, stage_two, lambda e: check_test(e, decode), decode)
    parts = []
    if stage_one:
        parts += [f"<h4>{STAGES['qualifier']}</h4>", *_stage_one_trees(explanation.qualifier_trees, stage_one, decode),
                  _checks_table(stage_one, decode), "<h4>Stage 2: the target checks the collected tokens</h4>"]
    else:
        parts.append(f"<h4>{STAGES['target']}</h4>")
    drafter = f'<p class="drafter">{escape(explanation.drafter)}</p>' if explanation.drafter else ""
    parts += [note, drafter, _checks_table(stage_two, decode) if stage_two else ""]
    emitted = [(repr(decode(token)), origin, why) for token, origin, why in explanation.emitted]
    return ('<div class="explain">' + "".join(parts) + "<h4>Emitted this round</h4>"
            + _table(("token", "origin", "why"), emitted, "explain-table") + "</div>")


def round_before_html(explained: str, number: int) -> str:
    """The round before's explanation, folded under the latest."""
    if not explained:
        return ""
    return (f'<details class="round-before"><summary>Round {number}, the round before (open to see its checks)'
            f"</summary>{explained}</details>")


def toy_html(toy) -> str:
    """The seed-001 example: acceptance probability per token, residual, the rounds so far."""
    accept = toy.accept_probs()
    rule = _table(("token", "p", "q", "accept prob min(1, p/q)", "residual"),
                  [(t, f"{p:.1f}", f"{q:.1f}", f"{accept[t]:.2f}", f"{toy.residual()[t]:.0f}")
                   for t, p, q in zip(accept, (0.6, 0.3, 0.1), (0.4, 0.4, 0.2))], "explain-table")
    rounds = [(i + 1, r.candidate, f"{r.accept_prob:.2f}", f"{r.u:.3f}", "accepted" if r.accepted else "rejected",
               r.emitted) for i, r in enumerate(toy.rounds[-8:], start=max(0, len(toy.rounds) - 8))]
    log = _table(("round", "x ~ q", "accept prob", "u", "verdict", "emitted"), rounds, "explain-table")
    return f'<div class="explain">{rule}<h4>Last rounds ({len(toy.rounds)} in all)</h4>{log}</div>'


SHARES = ("acceptance", "qualifier accepted, of the draft's", "target accepted, of the qualifier's",
          "agreement with target (aligned tokens)", "repeated word 3-grams")  # compare metrics shown as percentages


def compare_html(columns: list[dict], note: str = "") -> str:
    """Side-by-side runs: each column its colored text and its numbers (text figures as they are),
    under a note on the machine when there is one."""
    def metric(name, value):
        shown = "–" if value is None else escape(value) if isinstance(value, str) else (
            speedup_html(value) if isinstance(value, Speedup) else
            f"{value:.1%}" if name in SHARES else f"{value:.2f}")
        return f"<tr><th>{escape(name)}</th><td>{shown}</td></tr>"

    cells = "".join(f'<div class="compare-column"><h4>{escape(c["label"])}</h4><table class="stats">'
                    + "".join(metric(k, v) for k, v in c["metrics"].items()) + f"</table>{c['html']}</div>"
                    for c in columns)
    machine = f'<p class="compare-note">{escape(note)}</p>' if note else ""
    return f'{machine}<div class="compare">{cells}</div>'


def speedup_html(speedup: Speedup) -> str:
    """A paired speedup as shown in a Compare cell: its figure where settled, else why not in a few
    words, the whole reason and what to do on hover (paired_speedups.Speedup): never a figure the
    runs contradict."""
    if not speedup.unsettled:
        return escape(str(speedup))
    return (f'<span class="flagged" title="{escape(speedup.unsettled)}">not settled: '
            f"{escape(speedup.brief or speedup.unsettled)} (hover for why)</span>")


def memory_html(pairs: list[tuple], total: int, owner: str) -> str:
    """CSD's correction memory: whose it is, and the most frequent (rejected draft token,
    correction) pairs."""
    rows = [(repr(draft), repr(target), count) for draft, target, count in pairs]
    return (f'<div class="explain"><h4>Correction memory: {total} rejections recorded</h4>'
            f'<p>This memory is {escape(owner)}.</p>'
            + _table(("draft token", "target correction", "count"), rows, "explain-table") + "</div>")


def settings_text(run) -> str:
    """Every setting the run ran with (its recorded config), in one line: what a Compare column
    or a Race lane shows, so settings never change between sides unseen."""
    shown = {name: value for name, value in run.recorded_config().items() if name not in ("method", "memory")}
    return ", ".join(f"{name.rstrip('_').replace('_', ' ')} {number(value) if not isinstance(value, bool) else value}"
                     for name, value in shown.items())
