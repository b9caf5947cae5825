"""A real run's speed account made to read as a quiet machine's, for tests of what its views show."""


def as_quiet(account) -> None:
    """Its thread had its core, T(1) is its first timing alone, no passes before the run hold it
    against another, and no pass cost less than it (a tiny model's passes of a few ms can sit under
    one slower timing, which the account rightly calls unsettled)."""
    account.decoder_cpu = account.decoder_seconds
    account.reference, account.recent_steps = account.reference[:1], []
    step = account.single_step()
    account.pass_seconds = [max(seconds, step) for seconds in account.pass_seconds]
