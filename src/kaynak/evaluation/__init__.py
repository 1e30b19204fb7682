"""The evaluation harness: data sets, metrics, the runner that drives the services, and reports.

from kaynak.context import Context
from kaynak.evaluation import load_beir, evaluate_beir, write_report

with Context(embedder="hash") as ctx:
    report = evaluate_beir(ctx, load_beir("tests/fixtures/beir_tiny"), modes="keyword,vector,hybrid")
write_report(report, "eval-out")
"""

from __future__ import annotations

from kaynak.evaluation.datasets import BeirDataset, Question, load_beir, load_questions, pool
from kaynak.evaluation.metrics import evaluate, metric_names, recall_curve
from kaynak.evaluation.report import compare_reports, load_report, render_markdown, write_report
from kaynak.evaluation.runner import ModeSpec, collection_name, evaluate_beir, evaluate_questions, parse_modes

__all__ = [
    "BeirDataset",
    "ModeSpec",
    "Question",
    "collection_name",
    "compare_reports",
    "evaluate",
    "evaluate_beir",
    "evaluate_questions",
    "load_beir",
    "load_questions",
    "load_report",
    "metric_names",
    "parse_modes",
    "pool",
    "recall_curve",
    "render_markdown",
    "write_report",
]
