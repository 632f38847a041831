"""Pieces every room shares, written once: datasets and encoders, the x/y check, the torch
training loop and seeded initialisation. A room imports these; nothing here imports a room."""
