"""Incremental, UTF-8-safe detokenization: each new token gets exactly the text it adds.

Decoding one byte-level token alone can yield half a character (U+FFFD). `tokenizers`'
DecodeStream buffers such tokens and hands their text out with the token that completes it; a
token that completes no character gets "".
"""

from tokenizers.decoders import DecodeStream


class Detokenizer:
    def __init__(self, tokenizer):
        backend = getattr(tokenizer, "backend_tokenizer", None)
        # A tokenizer without a Rust backend (pure Python) cannot drive a DecodeStream.
        self._push = _StreamPush(backend) if backend is not None else _WindowPush(tokenizer)

    def push(self, token_id: int) -> str:
        return self._push(token_id)


class _StreamPush:
    def __init__(self, backend):
        self.backend, self.stream = backend, DecodeStream(skip_special_tokens=True)

    def __call__(self, token_id: int) -> str:
        return self.stream.step(self.backend, token_id) or ""


class _WindowPush:
    """DecodeStream's rule for Python tokenizers: decode a short trailing window (a few tokens of
    context keep the spacing right) and hand out only its new, complete suffix."""

    def __init__(self, tokenizer):
        self.tokenizer, self.ids = tokenizer, []
        self.prefix_start = self.read_end = 0

    def __call__(self, token_id: int) -> str:
        self.ids.append(token_id)
        already = self._decode(self.prefix_start, self.read_end)
        window = self._decode(self.prefix_start, len(self.ids))
        if len(window) <= len(already) or window.endswith("\ufffd"):
            return ""
        self.prefix_start, self.read_end = self.read_end, len(self.ids)
        return window[len(already):]

    def _decode(self, start: int, end: int) -> str:
        return self.tokenizer.decode(self.ids[start:end], skip_special_tokens=True)
