"""Audit targets: models whose training data a claim is about."""

from verifier.targets.cache import ScoreCache
from verifier.targets.causal_lm import CausalLMTarget, ScoringOptions
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.token_scores import TokenScores

__all__ = ["CausalLMTarget", "ModelSource", "ScoreCache", "ScoringOptions", "TokenScores", "resolve_model"]
