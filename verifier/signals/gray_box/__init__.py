"""Gray-box signals: read the target's token scores of a text (open weights, or an API that
scores prompts)."""
