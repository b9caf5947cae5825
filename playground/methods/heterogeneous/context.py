"""The drafter's own token sequence for the target's text (seed 004, Algorithm 2, line 4)."""

from ...decoding.text import Detokenizer

PRIMING_TOKENS = 4  # context tokens decoded before drafted ones, for correct spacing


class DraftContext:
    """The prompt re-tokenized once by the draft tokenizer, then the generated text as chunks of
    draft tokens with the text each chunk covers. Before every step `sync` keeps the chunks whose
    text the target's output still starts with (so their KV cache stays valid) and re-tokenizes
    only the rest; the draft runner's cache follows by prefix matching, rolling back by itself."""

    def __init__(self, ctx):
        self.target_tokenizer, self.tokenizer = ctx.target_tokenizer, ctx.draft_tokenizer
        self.prompt_length = ctx.prompt_length
        prompt_text = self.target_tokenizer.decode(ctx.ids[:ctx.prompt_length])
        self.prompt_ids = self.tokenizer(prompt_text, add_special_tokens=False).input_ids
        self.chunks: list[tuple[list[int], str]] = []

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + [token for ids, _ in self.chunks for token in ids]

    def sync(self, target_ids: list[int], proposed: list[tuple[list[int], str]] = ()) -> int:
        """Align the chunks with the target's generated text. `proposed` are the chunks the drafter
        sampled last step (one per draft token); those the target kept are reused as sampled.
        Returns how many generated characters had to be re-tokenized for the drafter."""
        generated = self.target_tokenizer.decode(target_ids[self.prompt_length:])
        kept, covered = [], 0
        for ids, text in [*self.chunks, *proposed]:
            if not generated.startswith(text, covered):
                break
            kept.append((ids, text))
            covered += len(text)
        while kept and not kept[-1][1]:  # half a character or a special token: redo with what follows
            kept.pop()
        rest = generated[covered:]
        if rest:
            kept.append((self.tokenizer(rest, add_special_tokens=False).input_ids, rest))
        self.chunks = kept
        return len(rest)

    def detokenizer(self) -> Detokenizer:
        """A detokenizer primed with the end of the context: push drafted ids to get their text."""
        detokenizer = Detokenizer(self.tokenizer)
        for token in self.ids[-PRIMING_TOKENS:]:
            detokenizer.push(token)
        return detokenizer
