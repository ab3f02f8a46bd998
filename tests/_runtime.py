"""The runtime of tests about what a run computes rather than how its rollouts are contained.

`openforge run` and `run_experiment` default to the sandbox on Linux. Here it cost the
quickstart, straggler, overlap and real-iteration tests about twice the CPU of plain
processes (9.0 vs 4.8 CPU-minutes, 303 vs 248 s on 2 workers), which CI's 2 cores pay in
every other test. The sandbox has tests of its own: tests/e2e/test_sandbox_runtime.py,
test_sandbox_hostile.py, and the real-harness and GUI iterations, which run in it.
"""

PIPELINE_RUNTIME = "process"
