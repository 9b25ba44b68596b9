"""What a run shows: the terminal, the output formats, the rules' documentation, the
interactive review."""
