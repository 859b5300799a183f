"""triage: a declarative CI-triage knowledge base and rule engine."""

__version__ = "0.1.0"
