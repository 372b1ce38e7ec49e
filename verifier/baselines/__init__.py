"""Model-free blind baselines: what the texts alone reveal about the labels."""

from verifier.baselines.bag_of_words import bag_of_words_scores
from verifier.baselines.latest_year import latest_year, latest_year_scores

__all__ = ["bag_of_words_scores", "latest_year", "latest_year_scores"]
