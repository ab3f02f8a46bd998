"""Scoring: verifier outcomes to rewards, GRPO group statistics, pass@k and pass^k.

Exports load on first use (``components.core.lazy``): the score step's CLI lives in this
package, and ``openforge --help`` must not load the experiment config for it.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "pass_at_k": "components.reward.passk:pass_at_k",
        "pass_hat_k": "components.reward.passk:pass_hat_k",
        "Capture": "components.reward.scoring:Capture",
        "inspect_capture": "components.reward.scoring:inspect_capture",
        "score_outcomes": "components.reward.scoring:score_outcomes",
        "GroupStats": "components.reward.stats:GroupStats",
        "TaskStats": "components.reward.stats:TaskStats",
        "group_stats": "components.reward.stats:group_stats",
        "score_metrics": "components.reward.stats:score_metrics",
        "task_stats": "components.reward.stats:task_stats",
        "ScoreReport": "components.reward.step:ScoreReport",
        "score_iteration": "components.reward.step:score_iteration",
        "EvalSummary": "components.reward.summary:EvalSummary",
        "summarize_evaluation": "components.reward.summary:summarize_evaluation",
    },
)
