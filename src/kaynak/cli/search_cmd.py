"""CLI commands: placeholder until this group is written."""
