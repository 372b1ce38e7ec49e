"""Audit targets: models whose training data a claim is about (see ``base`` for the contract).

The kinds of target (``kinds/``, and plugins' ``verifier.targets`` entry points) register
themselves with ``registry.register``; ``kind_of(spec)`` says which one a spec names and what it
can do before anything is loaded. Nothing imported here loads torch or transformers: the causal-LM
kind imports them when a model is loaded.
"""

from verifier.boundary.peers import PeerAccess
from verifier.targets.base import CAPABILITIES, Target, TargetIdentity
from verifier.targets.cache import ScoreCache
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.targets.kinds.openai_compatible import ApiOptions, OpenAICompatibleTarget
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.options import ScoringOptions
from verifier.targets.registry import KINDS, TargetKind, kind_of, kind_of_target
from verifier.targets.token_scores import TokenScores

__all__ = [
    "CAPABILITIES",
    "KINDS",
    "ApiOptions",
    "CausalLMTarget",
    "ModelSource",
    "OpenAICompatibleTarget",
    "ScoreCache",
    "ScoringOptions",
    "Target",
    "TargetIdentity",
    "TargetKind",
    "TokenScores",
    "kind_of",
    "kind_of_target",
    "load_target",
    "resolve_model",
]


def load_target(
    spec: str, options: ScoringOptions | None = None, api: ApiOptions | None = None, access: PeerAccess | None = None
) -> Target:
    """The target ``spec`` names, loaded by its kind (an API target is sent the key of ``access.api_key_env``)."""
    return kind_of(spec).cls.load(spec, options, api, access)
