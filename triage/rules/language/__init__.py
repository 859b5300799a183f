"""The rule-file language: its schema, the strict loader and its whole-file checks, the
scaffold of a new investigation, the condition words, known names, user regexes, and the
cache of parsed files."""
