"""Behaviour analytics per iteration, from the recordings alone (docs/analytics.md).

``IterationAnalytics`` is the record in the store (``RunLayout.analytics(k)``), read with
``read_analytics``; ``record_analytics`` computes and writes it at commit.
"""

from components.analytics.record import iteration_rollouts, read_analytics, record_analytics
from components.analytics.rollout import ANALYTICS, RolloutAnalytics, rollout_analytics
from components.analytics.summary import Aggregate, Change, Estimate, IterationAnalytics, difference_of_means, summarize

__all__ = [
    "ANALYTICS",
    "Aggregate",
    "Change",
    "Estimate",
    "IterationAnalytics",
    "RolloutAnalytics",
    "difference_of_means",
    "iteration_rollouts",
    "read_analytics",
    "record_analytics",
    "rollout_analytics",
    "summarize",
]
