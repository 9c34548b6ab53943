import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Workspace(_message.Message):
    __slots__ = ("name", "id", "uid", "metadata", "configuration", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    uid: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., uid: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Peer(_message.Message):
    __slots__ = ("name", "id", "uid", "workspace_id", "metadata", "configuration", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    uid: str
    workspace_id: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., uid: _Optional[str] = ..., workspace_id: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("name", "id", "uid", "workspace_id", "is_active", "metadata", "configuration", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    IS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    uid: str
    workspace_id: str
    is_active: bool
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., uid: _Optional[str] = ..., workspace_id: _Optional[str] = ..., is_active: _Optional[bool] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("name", "id", "content", "peer_id", "session_id", "workspace_id", "metadata", "create_time", "token_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PEER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    content: str
    peer_id: str
    session_id: str
    workspace_id: str
    metadata: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    token_count: int
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., content: _Optional[str] = ..., peer_id: _Optional[str] = ..., session_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., token_count: _Optional[int] = ...) -> None: ...

class SessionPeerConfig(_message.Message):
    __slots__ = ("observe_me", "observe_others")
    OBSERVE_ME_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_OTHERS_FIELD_NUMBER: _ClassVar[int]
    observe_me: bool
    observe_others: bool
    def __init__(self, observe_me: _Optional[bool] = ..., observe_others: _Optional[bool] = ...) -> None: ...

class Conclusion(_message.Message):
    __slots__ = ("name", "id", "content", "observer_id", "observed_id", "session_id", "level", "source_ids", "times_derived", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMES_DERIVED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    content: str
    observer_id: str
    observed_id: str
    session_id: str
    level: str
    source_ids: _containers.RepeatedScalarFieldContainer[str]
    times_derived: int
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., content: _Optional[str] = ..., observer_id: _Optional[str] = ..., observed_id: _Optional[str] = ..., session_id: _Optional[str] = ..., level: _Optional[str] = ..., source_ids: _Optional[_Iterable[str]] = ..., times_derived: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Summary(_message.Message):
    __slots__ = ("content", "message_id", "summary_type", "create_time", "token_count")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_TYPE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    content: str
    message_id: str
    summary_type: str
    create_time: _timestamp_pb2.Timestamp
    token_count: int
    def __init__(self, content: _Optional[str] = ..., message_id: _Optional[str] = ..., summary_type: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., token_count: _Optional[int] = ...) -> None: ...
