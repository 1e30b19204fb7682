"""Hostile input: the corpora of broken and malicious files, hostile uploads built in memory, faults injected into
parse workers, and ``kaynak ingest`` run under a hard memory cap."""
