from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueueCounts(_message.Message):
    __slots__ = ("total_work_units", "completed_work_units", "in_progress_work_units", "pending_work_units")
    TOTAL_WORK_UNITS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_WORK_UNITS_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_WORK_UNITS_FIELD_NUMBER: _ClassVar[int]
    PENDING_WORK_UNITS_FIELD_NUMBER: _ClassVar[int]
    total_work_units: int
    completed_work_units: int
    in_progress_work_units: int
    pending_work_units: int
    def __init__(self, total_work_units: _Optional[int] = ..., completed_work_units: _Optional[int] = ..., in_progress_work_units: _Optional[int] = ..., pending_work_units: _Optional[int] = ...) -> None: ...

class GetQueueStatusRequest(_message.Message):
    __slots__ = ("parent", "observer_id", "sender_id", "session_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SENDER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    observer_id: str
    sender_id: str
    session_id: str
    def __init__(self, parent: _Optional[str] = ..., observer_id: _Optional[str] = ..., sender_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class GetQueueStatusResponse(_message.Message):
    __slots__ = ("counts", "sessions")
    class SessionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: QueueCounts
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[QueueCounts, _Mapping]] = ...) -> None: ...
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    counts: QueueCounts
    sessions: _containers.MessageMap[str, QueueCounts]
    def __init__(self, counts: _Optional[_Union[QueueCounts, _Mapping]] = ..., sessions: _Optional[_Mapping[str, QueueCounts]] = ...) -> None: ...

class WatchQueueStatusRequest(_message.Message):
    __slots__ = ("parent", "observer_id", "sender_id", "session_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SENDER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    observer_id: str
    sender_id: str
    session_id: str
    def __init__(self, parent: _Optional[str] = ..., observer_id: _Optional[str] = ..., sender_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class WatchQueueStatusResponse(_message.Message):
    __slots__ = ("counts", "sessions")
    class SessionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: QueueCounts
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[QueueCounts, _Mapping]] = ...) -> None: ...
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    counts: QueueCounts
    sessions: _containers.MessageMap[str, QueueCounts]
    def __init__(self, counts: _Optional[_Union[QueueCounts, _Mapping]] = ..., sessions: _Optional[_Mapping[str, QueueCounts]] = ...) -> None: ...
