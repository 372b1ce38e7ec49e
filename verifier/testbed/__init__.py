"""Ground-truth testbeds: small causal LMs whose training membership is known exactly."""

from verifier.testbed.build import PRESETS, Testbed, TestbedConfig, build_testbed, preset_config
from verifier.testbed.pool import NEW, OLD, PoolText, books_pool, bundled_pool

__all__ = ["NEW", "OLD", "PRESETS", "PoolText", "Testbed", "TestbedConfig", "books_pool", "build_testbed", "bundled_pool", "preset_config"]
