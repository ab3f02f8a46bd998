"""Prefix continuity of recorded sessions, with and without the proxy's token provenance."""
