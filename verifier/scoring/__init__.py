"""Scoring a document set with a target: the score table every later step reads (``table``), the
same scorer on a Ray Data actor pool (``ray``), and a labelled table's evaluation (``evaluation``)."""
