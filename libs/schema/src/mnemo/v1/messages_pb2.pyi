import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from mnemo.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NewMessage(_message.Message):
    __slots__ = ("peer_id", "content", "metadata", "configuration", "create_time")
    PEER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    peer_id: str
    content: str
    metadata: _struct_pb2.Struct
    configuration: _struct_pb2.Struct
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, peer_id: _Optional[str] = ..., content: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., configuration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateMessagesRequest(_message.Message):
    __slots__ = ("parent", "messages", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    messages: _containers.RepeatedCompositeFieldContainer[NewMessage]
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[NewMessage, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateMessagesResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[_resources_pb2.Message, _Mapping]]] = ...) -> None: ...

class StreamMessagesRequest(_message.Message):
    __slots__ = ("parent", "messages", "request_id")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    messages: _containers.RepeatedCompositeFieldContainer[NewMessage]
    request_id: str
    def __init__(self, parent: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[NewMessage, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class StreamMessagesResponse(_message.Message):
    __slots__ = ("request_id", "batches_stored", "message_ids")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    BATCHES_STORED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    batches_stored: int
    message_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., batches_stored: _Optional[int] = ..., message_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListMessagesRequest(_message.Message):
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

class ListMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_page_token", "total_size")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Message]
    next_page_token: str
    total_size: int
    def __init__(self, messages: _Optional[_Iterable[_Union[_resources_pb2.Message, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _resources_pb2.Message
    def __init__(self, message: _Optional[_Union[_resources_pb2.Message, _Mapping]] = ...) -> None: ...

class UpdateMessageRequest(_message.Message):
    __slots__ = ("name", "metadata")
    NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    metadata: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class UpdateMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _resources_pb2.Message
    def __init__(self, message: _Optional[_Union[_resources_pb2.Message, _Mapping]] = ...) -> None: ...
