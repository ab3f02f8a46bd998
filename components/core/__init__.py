"""Data contracts shared by every step: the recorded-call schema and its reader."""

from components.core.trajectory import (
    SCHEMA_VERSION,
    RecordedCall,
    TrajectoryError,
    read_session,
    read_sessions,
)

__all__ = ["SCHEMA_VERSION", "RecordedCall", "TrajectoryError", "read_session", "read_sessions"]
