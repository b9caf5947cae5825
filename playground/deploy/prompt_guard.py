"""A user's prompt as token ids: their text stays text, and its length is capped in tokens.

Text a user types is tokenized with special tokens split, so `<|im_start|>` typed in a prompt is
the characters `<|im_start|>`, never the chat template's turn marker: a prompt cannot forge a
system or assistant turn. The chat template's own markers stay real tokens.

A prompt's cost is its token count, not its length in characters (20,000 tag characters are
80,000 tokens), so the cap is on tokens, checked before any forward pass.
"""

import unicodedata

from ..errors import PlaygroundError
from .limits import current_limits

# Stands for the prompt while the chat template is rendered (private-use characters: no template
# or tokenizer gives them a meaning).
PLACEHOLDER = "\ue000prompt\ue001"


def prompt_ids(tokenizer, prompt: str, use_chat_template: bool) -> list[int]:
    """The prompt's token ids, in the chat template where asked and the tokenizer has one."""
    if use_chat_template and getattr(tokenizer, "chat_template", None):
        return _chat_ids(tokenizer, prompt)
    return tokenizer(prompt, split_special_tokens=True).input_ids


def control_ids(tokenizer) -> set[int]:
    """The special tokens that steer the model (turn markers, BOS, EOS, ...); not the unknown
    token, which stands for text the vocabulary lacks (the placeholder's characters, say)."""
    added = getattr(tokenizer, "added_tokens_decoder", {})
    special = set(tokenizer.all_special_ids) | {token_id for token_id, token in added.items() if token.special}
    return special - {tokenizer.unk_token_id}


def _render(tokenizer, content: str) -> str:
    return tokenizer.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                         tokenize=False)


def _template_ids(tokenizer, text: str) -> list[int]:
    """Text written by the chat template: its markers are real special tokens."""
    return tokenizer(text, add_special_tokens=False).input_ids


def _text_ids(tokenizer, text: str) -> list[int]:
    """Text that may hold the user's words: special-token strings in it are plain characters."""
    return tokenizer(text, add_special_tokens=False, split_special_tokens=True).input_ids


def _chat_ids(tokenizer, prompt: str) -> list[int]:
    rendered, frame = _render(tokenizer, prompt), _render(tokenizer, PLACEHOLDER)
    ids, controls = _template_ids(tokenizer, rendered), control_ids(tokenizer)
    if _controls_in(ids, controls) == _controls_in(_template_ids(tokenizer, frame), controls):
        return ids  # every control token is the template's: the usual tokenization, unchanged
    return _ids_with_plain_prompt(tokenizer, rendered, frame, controls)


def _controls_in(ids: list[int], controls: set[int]) -> list[int]:
    return [token_id for token_id in ids if token_id in controls]


def _ids_with_plain_prompt(tokenizer, rendered: str, frame: str, controls: set[int]) -> list[int]:
    """The template's text up to its last marker before the prompt, and from its first marker
    after it, as the template wrote them; everything between (the prompt and the plain text
    around it) with special tokens split."""
    before, found, after = frame.partition(PLACEHOLDER)
    if not found or PLACEHOLDER in after or not _framed(rendered, before, after):
        raise PlaygroundError("prompt contains special-token text (such as a chat turn marker) that this model's "
                              "chat template cannot keep as plain text: remove it, or turn the chat template off")
    prompt = rendered[len(before):len(rendered) - len(after)]  # as the template wrote it (it may trim)
    head_ids, head_text = _through_last_control(tokenizer, before, controls)
    tail_text, tail_ids = _from_first_control(tokenizer, after, controls)
    return head_ids + _text_ids(tokenizer, head_text + prompt + tail_text) + tail_ids


def _framed(rendered: str, before: str, after: str) -> bool:
    return len(rendered) >= len(before) + len(after) and rendered.startswith(before) and rendered.endswith(after)


def _through_last_control(tokenizer, text: str, controls: set[int]) -> tuple[list[int], str]:
    """(ids through the last control token of `text`, the text after it)."""
    ids, marks = _control_marks(tokenizer, text, controls)
    if not marks:
        return [], text
    last, (_, end) = marks[-1]
    return ids[:last + 1], text[end:]


def _from_first_control(tokenizer, text: str, controls: set[int]) -> tuple[str, list[int]]:
    """(the text before the first control token of `text`, ids from it on)."""
    ids, marks = _control_marks(tokenizer, text, controls)
    if not marks:
        return text, []
    first, (start, _) = marks[0]
    return text[:start], ids[first:]


def _control_marks(tokenizer, text: str, controls: set[int]) -> tuple[list[int], list]:
    """The template text's ids, and (index, character span) of each control token among them."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    marks = [(i, encoded.offset_mapping[i]) for i, token_id in enumerate(encoded.input_ids) if token_id in controls]
    return encoded.input_ids, marks


def check_prompt_tokens(count: int, model=None, max_new_tokens: int = 0) -> None:
    """Refuse, before any forward pass, a prompt over the deployment's token cap or one that leaves
    the model's context no room for `max_new_tokens`."""
    cap = current_limits().max_prompt_tokens
    if cap and count > cap:
        raise PlaygroundError(f"prompt is {count} tokens, over this deployment's limit of {cap} tokens: "
                              "shorten it")
    context = context_length(model)
    if context is not None and count + max_new_tokens > context:
        room = max(context - max_new_tokens, 0)
        raise PlaygroundError(f"prompt is {count} tokens, over the {room} that fit in the model's context of "
                              f"{context} with {max_new_tokens} new tokens: shorten it or ask for fewer new tokens")


def context_length(model) -> int | None:
    """The most positions `model` reads (None when its config does not say)."""
    length = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return length if isinstance(length, int) and length > 0 else None


def format_prompt(tokenizer, prompt: str, use_chat_template: bool, *, model=None,
                  max_new_tokens: int = 0) -> list[int]:
    """The prompt's ids, its special-token strings kept as text, refused over the
    token cap; given `model`, also when it leaves the context no room for `max_new_tokens`."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise PlaygroundError("empty prompt: type some text to continue or a question to answer")
    limit = current_limits().max_prompt_chars
    if len(prompt) > limit:
        raise PlaygroundError(f"prompt is {len(prompt)} characters, over the limit of {limit}: shorten it")
    _check_characters(prompt)
    ids = prompt_ids(tokenizer, prompt, use_chat_template)
    check_prompt_tokens(len(ids), model, max_new_tokens)
    return ids


def _check_characters(prompt: str) -> None:
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as error:
        raise PlaygroundError(f"prompt is not valid text (broken character at position {error.start}): "
                              "paste it again as plain UTF-8 text") from error
    for position, char in enumerate(prompt):
        if unicodedata.category(char) == "Cc" and char not in "\n\t\r":
            raise PlaygroundError(f"prompt contains the control character U+{ord(char):04X} at position "
                                  f"{position}: remove it")
