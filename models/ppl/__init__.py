"""PPL, Pose Prior Learner (Wang, Han & Zhang, ICLR 2026): see ``card.py`` and README.md."""
