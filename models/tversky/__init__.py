"""Tversky neural networks (arXiv:2506.11035): projection layer, frozen-encoder heads, char GPT."""
