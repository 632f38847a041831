"""TrainRef: noisy labels curated into label distributions with a minimal reference set."""
