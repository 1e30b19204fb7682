"""What tests/ and benchmarks/ share and kaynak itself never imports: document and corpus makers, embedded servers
and clusters, round-trip counters, float comparisons, a small search corpus and stand-in plugins.

Importable from the repository root (pytest's ``pythonpath``; benchmarks put the root on ``sys.path``)."""
