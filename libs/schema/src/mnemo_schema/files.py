"""Where messages' text came from when it was cut out of an uploaded file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema.text import StorableText


class UploadedFile(BaseModel):
    """A file whose text was split into the messages of one batch, in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file_id: str = Field(min_length=1, max_length=64)
    filename: StorableText = Field(max_length=1_000)
    content_type: StorableText = Field(max_length=255)


class FileChunk(UploadedFile):
    """Which part of an uploaded file one message holds."""

    chunk_index: int = Field(ge=0)
    total_chunks: int = Field(ge=1)
