"""Two vocabularies side by side: the text of each token, their intersection by string, and the
re-tokenization of draft text for the target (seed 004, Sections 3.2 and 4).

Token strings are taken in context: each token is decoded after a plain anchor character and the
anchor is cut off, so SentencePiece's '▁hello' and byte-level BPE's 'Ġhello' both read " hello"
(decoding '▁hello' alone drops its space). Tokens that decode to nothing, to half a UTF-8
character, or that are special tokens have no string (None): they are never matched.
"""

from dataclasses import dataclass
from functools import lru_cache

import torch

ANCHOR = "a"
REPLACEMENT = "\ufffd"  # what decoding half a UTF-8 character yields


@lru_cache(maxsize=8)
def token_strings(tokenizer) -> tuple[str | None, ...]:
    """The text each token id (0 .. len(tokenizer)-1) adds after ordinary text, or None."""
    anchor_ids = tokenizer.encode(ANCHOR, add_special_tokens=False)
    anchor_text = tokenizer.decode(anchor_ids)
    specials = set(tokenizer.all_special_ids)
    decoded = tokenizer.batch_decode([anchor_ids + [i] for i in range(len(tokenizer))])
    strings = []
    for token_id, text in enumerate(decoded):
        piece = text[len(anchor_text):] if text.startswith(anchor_text) else None
        usable = piece and REPLACEMENT not in piece and token_id not in specials
        strings.append(piece if usable else None)
    return tuple(strings)


def max_token_chars(tokenizer) -> int:
    return max((len(s) for s in token_strings(tokenizer) if s), default=0)


@dataclass(frozen=True)
class Intersection:
    """T ∩ D by token string: target_ids[i] and draft_ids[i] are the same string."""

    target_ids: torch.Tensor
    draft_ids: torch.Tensor
    target_size: int
    draft_size: int

    def __len__(self) -> int:
        return len(self.target_ids)

    def shares(self) -> dict:
        """Seed 004, Table 9: the intersection's size and its share of each vocabulary."""
        return {"intersection": len(self), "share_of_target": len(self) / self.target_size,
                "share_of_draft": len(self) / self.draft_size}

    def draft_logits_on_target(self, draft_logits: torch.Tensor, target_rows: int) -> torch.Tensor:
        """Draft logits moved onto target-vocabulary rows; tokens outside T ∩ D get -inf, so any
        softmax of the result is q renormalized onto the intersection (Algorithm 4)."""
        mapped = torch.full((target_rows,), -torch.inf, device=draft_logits.device)
        mapped[self.target_ids.to(draft_logits.device)] = draft_logits[self.draft_ids.to(draft_logits.device)].float()
        return mapped

    def draft_id(self, target_id: int) -> int:
        return int(self.draft_ids[(self.target_ids == target_id).nonzero()[0, 0]])


@lru_cache(maxsize=8)
def intersection(target_tokenizer, draft_tokenizer) -> Intersection:
    """Computed once per tokenizer pair. Where several ids share a string, the lowest id is used.

    Not transformers' AssistantToTargetTranslator, which matches raw vocabulary entries: on the
    embedded target and byte drafter it also pairs the 3 chat specials and 113 byte symbols that are
    half a UTF-8 character (238 pairs, 122 of them text), and it meets SentencePiece and byte-level
    vocabularies only on their leading space sign."""
    draft_by_string = {}
    for draft_id, text in enumerate(token_strings(draft_tokenizer)):
        if text is not None:
            draft_by_string.setdefault(text, draft_id)
    pairs, seen = [], set()
    for target_id, text in enumerate(token_strings(target_tokenizer)):
        if text in draft_by_string and text not in seen:
            seen.add(text)
            pairs.append((target_id, draft_by_string[text]))
    target_ids = torch.tensor([t for t, _ in pairs], dtype=torch.long)
    draft_ids = torch.tensor([d for _, d in pairs], dtype=torch.long)
    return Intersection(target_ids, draft_ids, len(target_tokenizer), len(draft_tokenizer))


@dataclass
class Continuation:
    """Target tokens for text appended after already committed target tokens."""

    tokens: list[int]
    spans: list[tuple[int, int]]  # each token's character span in the appended text
    realigned: bool  # the look-behind had to repair the boundary (merge or normalization)


def tokenize_continuation(tokenizer, committed: list[int], text: str, look_behind: int = 4) -> Continuation:
    """Seed 004, Section 3.2: re-tokenize the last `look_behind` committed tokens together with the
    new text, so the new text is split as the target would split it in context, then keep only the
    tokens past the committed text. A token that straddles the boundary (the committed text would
    have merged with the new one) is realigned: the new part of it is tokenized on its own.
    Character offsets come from the tokenizer, so normalization (lowercasing, merged spaces) that
    changes the text does not shift the boundary."""
    committed_tail = committed[-look_behind:]
    tail = tokenizer.decode(committed_tail)
    encoding = tokenizer(tail + text, add_special_tokens=False, return_offsets_mapping=True)
    boundary = len(tail)
    tokens, spans, kept_tail, realigned = [], [], [], False
    for token, (start, end) in zip(encoding["input_ids"], encoding["offset_mapping"]):
        if end <= boundary:
            kept_tail.append(token)
        elif start >= boundary:
            tokens.append(token)
            spans.append((start - boundary, end - boundary))
        else:  # straddles the boundary: split off its new part
            piece = _split_piece(tokenizer, (tail + text)[boundary:end])
            tokens.extend(piece.tokens)
            spans.extend(piece.spans)
            realigned = True
    # the committed tokens re-encode differently: the look-behind found the boundary anyway
    realigned |= kept_tail != committed_tail[len(committed_tail) - len(kept_tail):]
    return Continuation(tokens, spans, realigned)


def _split_piece(tokenizer, piece: str) -> Continuation:
    encoding = tokenizer(piece, add_special_tokens=False, return_offsets_mapping=True)
    return Continuation(list(encoding["input_ids"]), [tuple(s) for s in encoding["offset_mapping"]], True)
