"""A tree of drafted tokens, and what the target needs to verify every node in one forward pass.

Node i continues the path of its parent (`parents[i]`, -1: the root, the context's last token).
The target sees each node at position `len(context) - 1 + depth` and attends to the context and
to the node's own ancestors only (SpecInfer's tree attention), so the logits of node i are those
the target would give after the context followed by node i's path.

Nodes are stored parents first: a node's index is larger than its parent's.
"""

from dataclasses import dataclass, field

import torch


@dataclass
class TokenTree:
    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)  # 1 for a child of the root

    def add(self, token: int, parent: int) -> int:
        """Append a child of `parent` (-1: the root); returns its index."""
        self.tokens.append(token)
        self.parents.append(parent)
        self.depths.append(1 if parent < 0 else self.depths[parent] + 1)
        return len(self.tokens) - 1

    def __len__(self) -> int:
        return len(self.tokens)

    def children(self, node: int) -> list[int]:
        """The children of `node` (-1: the root) in the order they were added."""
        return [i for i, parent in enumerate(self.parents) if parent == node]

    def path(self, node: int) -> list[int]:
        """The nodes from the root's child down to `node` (empty for the root)."""
        nodes = []
        while node >= 0:
            nodes.append(node)
            node = self.parents[node]
        return nodes[::-1]

    def ancestry(self) -> torch.Tensor:
        """[n, n] bool: entry (i, j) is True when node j is node i or one of its ancestors."""
        n = len(self.tokens)
        sees = torch.eye(n, dtype=torch.bool)
        for i, parent in enumerate(self.parents):
            if parent >= 0:
                sees[i] |= sees[parent]
        return sees


def branches(parents: list[int]) -> bool:
    """Whether a tree given by its nodes' parents branches anywhere (a chain's are -1, 0, 1, ...)."""
    return parents != list(range(-1, len(parents) - 1))


def tree_attention(tree: TokenTree, cached: int, context_new: int, dtype: torch.dtype,
                   device) -> torch.Tensor:
    """The additive attention mask [1, 1, rows, cached + rows] for a forward over `context_new`
    context tokens (after `cached` cached ones) followed by the tree's nodes: context rows are
    causal; a node row sees the whole context and its own ancestors."""
    rows = context_new + len(tree)
    allowed = torch.zeros(rows, cached + rows, dtype=torch.bool)
    allowed[:, :cached + context_new] = True
    allowed[:context_new, cached:cached + context_new] = torch.ones(context_new, context_new, dtype=torch.bool).tril()
    allowed[context_new:, cached + context_new:] = tree.ancestry()
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None].to(device)


def tree_positions(tree: TokenTree, cached: int, context_new: int, device) -> torch.Tensor:
    """Position ids [1, rows]: the context's own positions, then each node's context length - 1 + depth."""
    last = cached + context_new - 1
    positions = list(range(cached, cached + context_new)) + [last + depth for depth in tree.depths]
    return torch.tensor([positions], device=device)
