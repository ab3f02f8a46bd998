"""The pipeline-overhead benchmark's parts: probes that time a run, the split, the report."""
