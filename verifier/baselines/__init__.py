"""Model-free blind baselines: what the texts alone reveal about the labels (``bag_of_words``,
``latest_year``, ``surface``) and the exchangeability check built on them (``exchangeability``)."""
