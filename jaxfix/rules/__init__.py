"""What a rule is and which rules run: the base class, the registry and its index, the
suppression comments. Rules declare; they do not run."""
