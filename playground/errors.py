"""The one exception type users see."""


class PlaygroundError(ValueError):
    """A user-facing error: one line naming the problem and the fix."""
