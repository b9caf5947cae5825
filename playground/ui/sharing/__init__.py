"""The shared public Space: visitors, their turns on the model, the line of waiting runs, and the
limits one visitor may hold."""
