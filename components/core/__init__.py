"""Data contracts shared by every step: the recorded-call schema and its reader."""

from components.core.images import ImageRef, rebuild_request, rebuild_upstream_request, referenced_images
from components.core.trajectory import (
    SCHEMA_VERSION,
    RecordedCall,
    TrajectoryError,
    read_session,
    read_sessions,
)

__all__ = [
    "SCHEMA_VERSION",
    "ImageRef",
    "RecordedCall",
    "TrajectoryError",
    "read_session",
    "read_sessions",
    "rebuild_request",
    "rebuild_upstream_request",
    "referenced_images",
]
