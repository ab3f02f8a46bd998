"""OpenForge pipelines: wiring of the components into an RL iteration, and the CLI."""
