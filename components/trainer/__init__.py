"""Training: recorded calls + rewards -> veRL DataProto -> CPU GRPO update -> checkpoint.

Exports load on first use (``components.core.lazy``), so importing the package (or
``openforge --help``) never imports torch or veRL.
"""

from components.core.lazy import lazy_exports

__all__ = [
    "BatchError",
    "BatchStats",
    "TemperatureMismatchError",
    "build_batch",
    "build_batch_file",
    "cpu_update",
    "merge_calls",
    "train_iteration",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BatchError": "components.trainer.rows:BatchError",
        "TemperatureMismatchError": "components.trainer.rows:TemperatureMismatchError",
        "merge_calls": "components.trainer.rows:merge_calls",
        "BatchStats": "components.trainer.batch:BatchStats",
        "build_batch": "components.trainer.batch:build_batch",
        "build_batch_file": "components.trainer.build:build_batch_file",
        "cpu_update": "components.trainer.cpu_update:cpu_update",
        "train_iteration": "components.trainer.step:train_iteration",
    },
)
