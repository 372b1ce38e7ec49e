"""Trace signals: read the target's reasoning traces, with models of their own (an encoder, a
scoring LM, a judge) lent by the scoring step; ``base`` holds what they share."""
