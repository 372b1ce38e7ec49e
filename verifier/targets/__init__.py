"""Audit targets: models whose training data a claim is about (see ``base`` for the contract)."""

from verifier.peers import PeerAccess
from verifier.targets.base import CAPABILITIES, Target, TargetIdentity
from verifier.targets.cache import ScoreCache
from verifier.targets.causal_lm import CausalLMTarget, ScoringOptions
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.openai_compatible import PREFIX as API_PREFIX
from verifier.targets.openai_compatible import ApiOptions, OpenAICompatibleTarget
from verifier.targets.token_scores import TokenScores

__all__ = ["API_PREFIX", "CAPABILITIES", "ApiOptions", "CausalLMTarget", "ModelSource", "OpenAICompatibleTarget", "ScoreCache",
           "ScoringOptions", "Target", "TargetIdentity", "TokenScores", "capabilities_of", "load_target", "resolve_model",
           "target_class"]


def target_class(spec: str) -> type[CausalLMTarget] | type[OpenAICompatibleTarget]:
    """The class that loads ``spec``: an ``openai-compatible:`` URL, else a local or hub causal LM."""
    return OpenAICompatibleTarget if spec.startswith(API_PREFIX) else CausalLMTarget


def capabilities_of(spec: str) -> frozenset[str]:
    """What the target named by ``spec`` can supply, known before anything is loaded."""
    return target_class(spec).capabilities


def load_target(spec: str, options: ScoringOptions | None = None, api: ApiOptions | None = None,
                access: PeerAccess | None = None) -> Target:
    """The target ``spec`` names; an API target is sent the key of ``access.api_key_env``."""
    if spec.startswith(API_PREFIX):
        return OpenAICompatibleTarget(spec, api, access, access.api_key_env if access else None)
    return CausalLMTarget(spec, options)
