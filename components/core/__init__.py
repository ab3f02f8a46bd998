"""Data contracts shared by every step: the recorded-call schema and its reader.

Exports load on first use (``components.core.lazy``): every step imports some module of
this package, and none should pay for pydantic because another one needs it.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ImageRef": "components.core.images:ImageRef",
        "rebuild_request": "components.core.images:rebuild_request",
        "rebuild_upstream_request": "components.core.images:rebuild_upstream_request",
        "referenced_images": "components.core.images:referenced_images",
        "SCHEMA_VERSION": "components.core.trajectory:SCHEMA_VERSION",
        "RecordedCall": "components.core.trajectory:RecordedCall",
        "TrajectoryError": "components.core.trajectory:TrajectoryError",
        "read_session": "components.core.trajectory:read_session",
        "read_sessions": "components.core.trajectory:read_sessions",
    },
)
