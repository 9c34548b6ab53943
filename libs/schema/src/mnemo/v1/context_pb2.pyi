from google.protobuf import struct_pb2 as _struct_pb2
from mnemo.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RepresentationOptions(_message.Message):
    __slots__ = ("search_query", "search_top_k", "search_max_distance", "include_most_frequent", "max_conclusions")
    SEARCH_QUERY_FIELD_NUMBER: _ClassVar[int]
    SEARCH_TOP_K_FIELD_NUMBER: _ClassVar[int]
    SEARCH_MAX_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_MOST_FREQUENT_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCLUSIONS_FIELD_NUMBER: _ClassVar[int]
    search_query: str
    search_top_k: int
    search_max_distance: float
    include_most_frequent: bool
    max_conclusions: int
    def __init__(self, search_query: _Optional[str] = ..., search_top_k: _Optional[int] = ..., search_max_distance: _Optional[float] = ..., include_most_frequent: _Optional[bool] = ..., max_conclusions: _Optional[int] = ...) -> None: ...

class GetSessionContextRequest(_message.Message):
    __slots__ = ("name", "tokens", "summary", "peer_target", "peer_perspective", "limit_to_session", "representation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PEER_TARGET_FIELD_NUMBER: _ClassVar[int]
    PEER_PERSPECTIVE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_TO_SESSION_FIELD_NUMBER: _ClassVar[int]
    REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    tokens: int
    summary: bool
    peer_target: str
    peer_perspective: str
    limit_to_session: bool
    representation: RepresentationOptions
    def __init__(self, name: _Optional[str] = ..., tokens: _Optional[int] = ..., summary: _Optional[bool] = ..., peer_target: _Optional[str] = ..., peer_perspective: _Optional[str] = ..., limit_to_session: _Optional[bool] = ..., representation: _Optional[_Union[RepresentationOptions, _Mapping]] = ...) -> None: ...

class GetSessionContextResponse(_message.Message):
    __slots__ = ("id", "messages", "summary", "peer_representation", "peer_card", "has_peer_card")
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PEER_REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    HAS_PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    id: str
    messages: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Message]
    summary: _resources_pb2.Summary
    peer_representation: str
    peer_card: _containers.RepeatedScalarFieldContainer[str]
    has_peer_card: bool
    def __init__(self, id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_resources_pb2.Message, _Mapping]]] = ..., summary: _Optional[_Union[_resources_pb2.Summary, _Mapping]] = ..., peer_representation: _Optional[str] = ..., peer_card: _Optional[_Iterable[str]] = ..., has_peer_card: _Optional[bool] = ...) -> None: ...

class GetPeerRepresentationRequest(_message.Message):
    __slots__ = ("name", "session_id", "target", "representation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    session_id: str
    target: str
    representation: RepresentationOptions
    def __init__(self, name: _Optional[str] = ..., session_id: _Optional[str] = ..., target: _Optional[str] = ..., representation: _Optional[_Union[RepresentationOptions, _Mapping]] = ...) -> None: ...

class GetPeerRepresentationResponse(_message.Message):
    __slots__ = ("representation",)
    REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    representation: str
    def __init__(self, representation: _Optional[str] = ...) -> None: ...

class GetPeerContextRequest(_message.Message):
    __slots__ = ("name", "target", "representation")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    representation: RepresentationOptions
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., representation: _Optional[_Union[RepresentationOptions, _Mapping]] = ...) -> None: ...

class GetPeerContextResponse(_message.Message):
    __slots__ = ("peer_id", "target_id", "representation", "peer_card", "has_peer_card")
    PEER_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    REPRESENTATION_FIELD_NUMBER: _ClassVar[int]
    PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    HAS_PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    peer_id: str
    target_id: str
    representation: str
    peer_card: _containers.RepeatedScalarFieldContainer[str]
    has_peer_card: bool
    def __init__(self, peer_id: _Optional[str] = ..., target_id: _Optional[str] = ..., representation: _Optional[str] = ..., peer_card: _Optional[_Iterable[str]] = ..., has_peer_card: _Optional[bool] = ...) -> None: ...

class GetPeerCardRequest(_message.Message):
    __slots__ = ("name", "target")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ...) -> None: ...

class GetPeerCardResponse(_message.Message):
    __slots__ = ("peer_card", "has_peer_card")
    PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    HAS_PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    peer_card: _containers.RepeatedScalarFieldContainer[str]
    has_peer_card: bool
    def __init__(self, peer_card: _Optional[_Iterable[str]] = ..., has_peer_card: _Optional[bool] = ...) -> None: ...

class SetPeerCardRequest(_message.Message):
    __slots__ = ("name", "target", "peer_card")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    peer_card: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., peer_card: _Optional[_Iterable[str]] = ...) -> None: ...

class SetPeerCardResponse(_message.Message):
    __slots__ = ("peer_card", "has_peer_card")
    PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    HAS_PEER_CARD_FIELD_NUMBER: _ClassVar[int]
    peer_card: _containers.RepeatedScalarFieldContainer[str]
    has_peer_card: bool
    def __init__(self, peer_card: _Optional[_Iterable[str]] = ..., has_peer_card: _Optional[bool] = ...) -> None: ...

class SearchMessagesRequest(_message.Message):
    __slots__ = ("parent", "query", "filter", "limit")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    query: str
    filter: _struct_pb2.Struct
    limit: int
    def __init__(self, parent: _Optional[str] = ..., query: _Optional[str] = ..., filter: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class SearchMessagesResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[_resources_pb2.Message, _Mapping]]] = ...) -> None: ...

class GetSummariesRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetSummariesResponse(_message.Message):
    __slots__ = ("id", "short_summary", "long_summary")
    ID_FIELD_NUMBER: _ClassVar[int]
    SHORT_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    LONG_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    id: str
    short_summary: _resources_pb2.Summary
    long_summary: _resources_pb2.Summary
    def __init__(self, id: _Optional[str] = ..., short_summary: _Optional[_Union[_resources_pb2.Summary, _Mapping]] = ..., long_summary: _Optional[_Union[_resources_pb2.Summary, _Mapping]] = ...) -> None: ...
