"""Step mode's drawing of a token-tree round: the nodes the walk reached, nested under their
parent, marked accepted (on the path the target kept), rejected, or unchecked (below a rejected
token or beside an accepted one, which it says), with the rule's numbers where the walk checked it. An unchecked
node stands for its whole subtree ("+N below"): on a projector the drawing shows what was decided."""

from collections.abc import Callable
from html import escape


def checked_nodes(tree: dict, checks: list) -> dict[int, object]:
    """node index -> the evidence of its check. The walk checks children of the root and of the
    accepted path, in order; siblings carry distinct tokens, so (parent, token) names a node."""
    parents, tokens, path = tree["parents"], tree["tokens"], tree["path"]
    found = {}
    for e in checks:
        parent = -1 if e.position == 0 else path[e.position - 1]
        found[next(i for i, (p, t) in enumerate(zip(parents, tokens)) if p == parent and t == e.candidate)] = e
    return found


def tree_html(tree: dict, checks: list, test_text: Callable[[object], str], decode: Callable[[int], str],
              verifier: str = "target") -> str:
    """`test_text(evidence)`: a check's acceptance test in words, with its numbers."""
    checked = {node: test_text(e) for node, e in checked_nodes(tree, checks).items()}
    summary = (f"<p>A token tree of {len(tree['tokens'])} nodes, verified in one {verifier} pass; the walk down "
               f"from the context checked {len(checked)} and kept {len(tree['path'])}.</p>")
    return summary + '<ul class="token-tree"><li><span class="tree-root">context</span>' + \
        _children(-1, tree, checked, decode) + "</li></ul>"


def _children(parent: int, tree: dict, checked: dict, decode) -> str:
    kids = [i for i, p in enumerate(tree["parents"]) if p == parent]
    return "<ul>" + "".join(_node(i, tree, checked, decode) for i in kids) + "</ul>" if kids else ""


def _node(node: int, tree: dict, checked: dict, decode) -> str:
    test = checked.get(node)
    state = "unchecked" if test is None else "accepted" if node in tree["path"] else "rejected"
    numbers = f' <span class="tree-test">{escape(test)}</span>' if test else ""
    token = escape(repr(decode(tree["tokens"][node])))
    said = f"{state}: {_why_unchecked(node, tree, decode)}" if state == "unchecked" else state
    head = f'<li><span class="tree-node tree-{state}" title="{state}">{token}</span> <em>{escape(said)}</em>{numbers}'
    if state == "unchecked":
        below = _descendants(node, tree["parents"])
        return head + (f' <span class="tree-below">(+{below} below)</span>' if below else "") + "</li>"
    return head + _children(node, tree, checked, decode) + "</li>"


def _why_unchecked(node: int, tree: dict, decode) -> str:
    """A reviewer saw siblings marked "unchecked" and no reason: the walk keeps one child a depth."""
    parents, path = tree["parents"], tree["path"]
    parent = parents[node]
    kept = [i for i in path if parents[i] == parent]
    if kept:
        return f"the walk kept its sibling {decode(tree['tokens'][kept[0]])!r} at this depth"
    if parent != -1 and parent not in path:
        return "below a rejected token"
    return "the walk ended at this depth before reaching it"


def _descendants(node: int, parents: list[int]) -> int:
    """How many nodes lie below `node` (parents come before their children)."""
    below = {node}
    for i, parent in enumerate(parents):
        if parent in below:
            below.add(i)
    return len(below) - 1
