from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatRequest(_message.Message):
    __slots__ = ("name", "query", "session_id", "target", "reasoning_level", "include_evidence")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REASONING_LEVEL_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    query: str
    session_id: str
    target: str
    reasoning_level: str
    include_evidence: bool
    def __init__(self, name: _Optional[str] = ..., query: _Optional[str] = ..., session_id: _Optional[str] = ..., target: _Optional[str] = ..., reasoning_level: _Optional[str] = ..., include_evidence: _Optional[bool] = ...) -> None: ...

class ChatResponse(_message.Message):
    __slots__ = ("content", "evidence")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    content: str
    evidence: _struct_pb2.Struct
    def __init__(self, content: _Optional[str] = ..., evidence: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class StreamChatRequest(_message.Message):
    __slots__ = ("name", "query", "session_id", "target", "reasoning_level", "include_evidence")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REASONING_LEVEL_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    query: str
    session_id: str
    target: str
    reasoning_level: str
    include_evidence: bool
    def __init__(self, name: _Optional[str] = ..., query: _Optional[str] = ..., session_id: _Optional[str] = ..., target: _Optional[str] = ..., reasoning_level: _Optional[str] = ..., include_evidence: _Optional[bool] = ...) -> None: ...

class StreamChatResponse(_message.Message):
    __slots__ = ("delta", "done", "evidence")
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    delta: str
    done: bool
    evidence: _struct_pb2.Struct
    def __init__(self, delta: _Optional[str] = ..., done: _Optional[bool] = ..., evidence: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
