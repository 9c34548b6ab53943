from google.protobuf import struct_pb2 as _struct_pb2
from mnemo.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NewConclusion(_message.Message):
    __slots__ = ("content", "observer_id", "observed_id", "session_id")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    content: str
    observer_id: str
    observed_id: str
    session_id: str
    def __init__(self, content: _Optional[str] = ..., observer_id: _Optional[str] = ..., observed_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class CreateConclusionsRequest(_message.Message):
    __slots__ = ("parent", "conclusions")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CONCLUSIONS_FIELD_NUMBER: _ClassVar[int]
    parent: str
    conclusions: _containers.RepeatedCompositeFieldContainer[NewConclusion]
    def __init__(self, parent: _Optional[str] = ..., conclusions: _Optional[_Iterable[_Union[NewConclusion, _Mapping]]] = ...) -> None: ...

class CreateConclusionsResponse(_message.Message):
    __slots__ = ("conclusions",)
    CONCLUSIONS_FIELD_NUMBER: _ClassVar[int]
    conclusions: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Conclusion]
    def __init__(self, conclusions: _Optional[_Iterable[_Union[_resources_pb2.Conclusion, _Mapping]]] = ...) -> None: ...

class ListConclusionsRequest(_message.Message):
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

class ListConclusionsResponse(_message.Message):
    __slots__ = ("conclusions", "next_page_token", "total_size")
    CONCLUSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    conclusions: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Conclusion]
    next_page_token: str
    total_size: int
    def __init__(self, conclusions: _Optional[_Iterable[_Union[_resources_pb2.Conclusion, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class QueryConclusionsRequest(_message.Message):
    __slots__ = ("parent", "query", "top_k", "distance", "filter")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    parent: str
    query: str
    top_k: int
    distance: float
    filter: _struct_pb2.Struct
    def __init__(self, parent: _Optional[str] = ..., query: _Optional[str] = ..., top_k: _Optional[int] = ..., distance: _Optional[float] = ..., filter: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class QueryConclusionsResponse(_message.Message):
    __slots__ = ("conclusions",)
    CONCLUSIONS_FIELD_NUMBER: _ClassVar[int]
    conclusions: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Conclusion]
    def __init__(self, conclusions: _Optional[_Iterable[_Union[_resources_pb2.Conclusion, _Mapping]]] = ...) -> None: ...

class GetConclusionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetConclusionResponse(_message.Message):
    __slots__ = ("conclusion",)
    CONCLUSION_FIELD_NUMBER: _ClassVar[int]
    conclusion: _resources_pb2.Conclusion
    def __init__(self, conclusion: _Optional[_Union[_resources_pb2.Conclusion, _Mapping]] = ...) -> None: ...

class DeleteConclusionRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteConclusionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
