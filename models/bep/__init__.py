"""BEP: Binary Error Propagation (MLP and BEP-TT) on the bitwise engine; the card is in card.py."""
