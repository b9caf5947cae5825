"""What a shared deployment caps: request sizes and rates, and a prompt's length in tokens."""
