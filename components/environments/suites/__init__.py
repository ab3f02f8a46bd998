"""Public GUI benchmarks in their native formats, written as OpenForge task folders that run offline.

``openforge tasks webvoyager|mind2web|osworld SOURCE OUT`` (cli.py); docs/tasks.md,
"Benchmark suites", maps each native field and says what cannot run offline.

| module | job |
|---|---|
| ``common.py`` | reading native files with errors that name the entry, task ids, writing folders |
| ``web_suite.py`` | a web task whose site is a local folder of pages (``app: static``), judged by its answer |
| ``answer_verify.py`` | that task's verifier: the final answer contains the reference strings |
| ``webvoyager.py``, ``mind2web.py`` | WebVoyager's JSONL and reference answers; Online-Mind2Web's JSON and an answers file |
| ``osworld.py``, ``osworld_vm.py`` | OSWorld task JSON as a desktop task; how its VM maps onto this machine |
| ``osworld_eval.py``, ``osworld_verify.py`` | the evaluator funcs that run offline, and their verifier |
"""
