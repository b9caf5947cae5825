"""One module per tab or panel: its handlers, and what it builds on the page."""
