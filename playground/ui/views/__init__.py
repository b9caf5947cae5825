"""What the page shows: a run turned into HTML, figures and words, and a failure into one line."""
