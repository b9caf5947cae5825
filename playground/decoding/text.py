"""Incremental, UTF-8-safe detokenization: each new token gets exactly the text it adds.

Decoding one byte-level token alone can yield half a character (U+FFFD). We decode a short
trailing window instead and hand out only the new, complete suffix; a token that completes no
character gets "" and its bytes show up with the token that completes them.

`tokenizers`' DecodeStream gives the same pieces. It was tried and reverted after single browser
runs blamed it for a slowdown; later measurements found that slowdown in the page (Gradio's
progress bookkeeping and the charts, bench/results/README.md), so the blame is unproven and the
swap was not measured again.
"""


class Detokenizer:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix_start = 0  # window start: a few tokens of context for correct spacing
        self._read_end = 0  # tokens up to here have been handed out as text

    def push(self, token_id: int) -> str:
        self.ids.append(token_id)
        already = self._decode(self._prefix_start, self._read_end)
        window = self._decode(self._prefix_start, len(self.ids))
        if len(window) <= len(already) or window.endswith("\ufffd"):
            return ""
        self._prefix_start, self._read_end = self._read_end, len(self.ids)
        return window[len(already):]

    def _decode(self, start: int, end: int) -> str:
        return self.tokenizer.decode(self.ids[start:end], skip_special_tokens=True)
