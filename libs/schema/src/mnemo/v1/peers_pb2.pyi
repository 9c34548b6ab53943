from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from mnemo.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetOrCreatePeerRequest(_message.Message):
    __slots__ = ("parent", "peer_id", "metadata", "configuration")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PEER_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    parent: str
    peer_id: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    def __init__(self, parent: _Optional[str] = ..., peer_id: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class GetOrCreatePeerResponse(_message.Message):
    __slots__ = ("peer", "created")
    PEER_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    peer: _resources_pb2.Peer
    created: bool
    def __init__(self, peer: _Optional[_Union[_resources_pb2.Peer, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class UpdatePeerRequest(_message.Message):
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

class UpdatePeerResponse(_message.Message):
    __slots__ = ("peer",)
    PEER_FIELD_NUMBER: _ClassVar[int]
    peer: _resources_pb2.Peer
    def __init__(self, peer: _Optional[_Union[_resources_pb2.Peer, _Mapping]] = ...) -> None: ...

class ListPeersRequest(_message.Message):
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

class ListPeersResponse(_message.Message):
    __slots__ = ("peers", "next_page_token", "total_size")
    PEERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    peers: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Peer]
    next_page_token: str
    total_size: int
    def __init__(self, peers: _Optional[_Iterable[_Union[_resources_pb2.Peer, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class ListPeerSessionsRequest(_message.Message):
    __slots__ = ("name", "page_size", "page_token", "filter", "reverse")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    name: str
    page_size: int
    page_token: str
    filter: _struct_pb2.Struct
    reverse: bool
    def __init__(self, name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., filter: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., reverse: _Optional[bool] = ...) -> None: ...

class ListPeerSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token", "total_size")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Session]
    next_page_token: str
    total_size: int
    def __init__(self, sessions: _Optional[_Iterable[_Union[_resources_pb2.Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...
