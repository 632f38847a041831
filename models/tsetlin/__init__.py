"""The Tsetlin machine on the bitwise engine and its convergence study; the card is in card.py."""
