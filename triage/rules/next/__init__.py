"""What comes next: where each recipe stands and what to run, which recipe tells rival
hypotheses apart, the replay of a finished investigation, and similar hypotheses elsewhere."""
