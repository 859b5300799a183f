"""Helpers shared by the test modules (test modules do not import each other)."""
