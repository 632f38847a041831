"""Tversky neural networks (arXiv:2506.11035): projection layer, frozen-encoder heads, char GPT.

``layer`` holds the similarity and ``TverskyProjection``; ``vision`` the frozen encoders and
the prototype picture; ``model`` the registered Fashion-MNIST experiment; ``gpt`` the
character-level GPT with Tversky projections.
"""
from models.tversky.layer import TverskyProjection, tversky_similarity  # noqa: F401
from models.tversky.model import CARD, TverskyHeadConfig, experiment, simulate  # noqa: F401
