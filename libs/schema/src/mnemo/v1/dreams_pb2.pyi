from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ScheduleDreamRequest(_message.Message):
    __slots__ = ("parent", "observer", "observed", "session_id", "dream_type")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DREAM_TYPE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    observer: str
    observed: str
    session_id: str
    dream_type: str
    def __init__(self, parent: _Optional[str] = ..., observer: _Optional[str] = ..., observed: _Optional[str] = ..., session_id: _Optional[str] = ..., dream_type: _Optional[str] = ...) -> None: ...

class ScheduleDreamResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
