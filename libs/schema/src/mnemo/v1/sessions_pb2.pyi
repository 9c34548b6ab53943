from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from mnemo.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetOrCreateSessionRequest(_message.Message):
    __slots__ = ("parent", "session_id", "metadata", "configuration", "peers")
    class PeersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _resources_pb2.SessionPeerConfig
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_resources_pb2.SessionPeerConfig, _Mapping]] = ...) -> None: ...
    PARENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    PEERS_FIELD_NUMBER: _ClassVar[int]
    parent: str
    session_id: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    peers: _containers.MessageMap[str, _resources_pb2.SessionPeerConfig]
    def __init__(self, parent: _Optional[str] = ..., session_id: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., peers: _Optional[_Mapping[str, _resources_pb2.SessionPeerConfig]] = ...) -> None: ...

class GetOrCreateSessionResponse(_message.Message):
    __slots__ = ("session", "created")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    session: _resources_pb2.Session
    created: bool
    def __init__(self, session: _Optional[_Union[_resources_pb2.Session, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class UpdateSessionRequest(_message.Message):
    __slots__ = ("name", "metadata", "configuration", "update_mask")
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    name: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, name: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateSessionResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: _resources_pb2.Session
    def __init__(self, session: _Optional[_Union[_resources_pb2.Session, _Mapping]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("parent", "page_size", "page_token", "filter", "reverse")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    parent: str
    page_size: int
    page_token: str
    filter: _struct_pb2.Struct
    reverse: bool
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., filter: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., reverse: _Optional[bool] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token", "total_size")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Session]
    next_page_token: str
    total_size: int
    def __init__(self, sessions: _Optional[_Iterable[_Union[_resources_pb2.Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddSessionPeersRequest(_message.Message):
    __slots__ = ("name", "peers", "replace")
    class PeersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _resources_pb2.SessionPeerConfig
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_resources_pb2.SessionPeerConfig, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEERS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    peers: _containers.MessageMap[str, _resources_pb2.SessionPeerConfig]
    replace: bool
    def __init__(self, name: _Optional[str] = ..., peers: _Optional[_Mapping[str, _resources_pb2.SessionPeerConfig]] = ..., replace: _Optional[bool] = ...) -> None: ...

class AddSessionPeersResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: _resources_pb2.Session
    def __init__(self, session: _Optional[_Union[_resources_pb2.Session, _Mapping]] = ...) -> None: ...

class RemoveSessionPeersRequest(_message.Message):
    __slots__ = ("name", "peer_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_IDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    peer_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., peer_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RemoveSessionPeersResponse(_message.Message):
    __slots__ = ("session",)
    SESSION_FIELD_NUMBER: _ClassVar[int]
    session: _resources_pb2.Session
    def __init__(self, session: _Optional[_Union[_resources_pb2.Session, _Mapping]] = ...) -> None: ...

class ListSessionPeersRequest(_message.Message):
    __slots__ = ("name", "page_size", "page_token", "reverse")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    name: str
    page_size: int
    page_token: str
    reverse: bool
    def __init__(self, name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., reverse: _Optional[bool] = ...) -> None: ...

class ListSessionPeersResponse(_message.Message):
    __slots__ = ("peers", "next_page_token", "total_size")
    PEERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    peers: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Peer]
    next_page_token: str
    total_size: int
    def __init__(self, peers: _Optional[_Iterable[_Union[_resources_pb2.Peer, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class GetSessionPeerConfigRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetSessionPeerConfigResponse(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _resources_pb2.SessionPeerConfig
    def __init__(self, config: _Optional[_Union[_resources_pb2.SessionPeerConfig, _Mapping]] = ...) -> None: ...

class SetSessionPeerConfigRequest(_message.Message):
    __slots__ = ("name", "config")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _resources_pb2.SessionPeerConfig
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Union[_resources_pb2.SessionPeerConfig, _Mapping]] = ...) -> None: ...

class SetSessionPeerConfigResponse(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _resources_pb2.SessionPeerConfig
    def __init__(self, config: _Optional[_Union[_resources_pb2.SessionPeerConfig, _Mapping]] = ...) -> None: ...
