"""Command-line tools (rbd-linearizer verbs) and offline verification."""
