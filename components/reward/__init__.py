"""Scoring: verifier outcomes to rewards, GRPO group statistics, pass@k and pass^k."""

from components.reward.passk import pass_at_k, pass_hat_k
from components.reward.scoring import Capture, inspect_capture, score_outcomes
from components.reward.stats import GroupStats, TaskStats, group_stats, score_metrics, task_stats
from components.reward.step import ScoreReport, score_iteration
from components.reward.summary import EvalSummary, summarize_evaluation

__all__ = [
    "Capture",
    "EvalSummary",
    "GroupStats",
    "ScoreReport",
    "TaskStats",
    "group_stats",
    "inspect_capture",
    "pass_at_k",
    "pass_hat_k",
    "score_iteration",
    "score_metrics",
    "score_outcomes",
    "summarize_evaluation",
    "task_stats",
]
