"""Audit targets: models whose training data a claim is about (see ``base`` for the contract)."""

from verifier.targets.base import CAPABILITIES, Target, TargetIdentity
from verifier.targets.cache import ScoreCache
from verifier.targets.causal_lm import CausalLMTarget, ScoringOptions
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.token_scores import TokenScores

__all__ = ["CAPABILITIES", "CausalLMTarget", "ModelSource", "ScoreCache", "ScoringOptions", "Target", "TargetIdentity",
           "TokenScores", "capabilities_of", "load_target", "resolve_model", "target_class"]


def target_class(spec: str) -> type[CausalLMTarget]:
    """The class that loads ``spec``; every spec is a local or hub causal LM in this version."""
    return CausalLMTarget


def capabilities_of(spec: str) -> frozenset[str]:
    """What the target named by ``spec`` can supply, known before anything is loaded."""
    return target_class(spec).capabilities


def load_target(spec: str, options: ScoringOptions | None = None) -> Target:
    return target_class(spec)(spec, options)
