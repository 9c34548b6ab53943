"""Uploaded files to message texts: the text of a plain, markdown, JSON or PDF file, cut into
parts that each fit one message.

Parts break where the reference server breaks them: at the last paragraph break, else line
break, else sentence end, else space inside the size limit; a stretch with none of these is cut
at the limit. A PDF's text is its pages' text, each headed ``[Page N]``, blank pages left out.
"""

from __future__ import annotations

import json
import mimetypes
from io import BytesIO

from pypdf import PdfReader

from mnemo_schema.errors import Refusal

PDF = "application/pdf"
JSON = "application/json"
_GENERIC = frozenset({"", "application/octet-stream"})
_BREAKS = ("\n\n", "\n", ". ", " ")
# Extensions whose files are text whatever the client calls them.
_TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".csv", ".log", ".rst"})


def content_type_of(filename: str, declared: str | None) -> str:
    """The file's type: as declared, or guessed from its name when declared generically."""
    kind = (declared or "").split(";", 1)[0].strip().lower()
    if kind not in _GENERIC:
        return kind
    if any(filename.lower().endswith(s) for s in _TEXT_SUFFIXES):
        return "text/plain"
    return mimetypes.guess_type(filename)[0] or kind or "application/octet-stream"


def extract_text(data: bytes, content_type: str) -> str:
    """The text of a file of ``content_type``; a Refusal naming ``file`` when there is none."""
    if content_type == PDF:
        return _pdf_text(data)
    if content_type == JSON:
        try:
            return json.dumps(json.loads(_decode(data)), ensure_ascii=False)
        except ValueError as err:
            raise Refusal(422, f"file: not valid JSON ({err})", "file") from err
    if content_type.startswith("text/"):
        return _decode(data)
    raise Refusal(
        415,
        f"file: unsupported type {content_type!r}; text/*, application/json and"
        " application/pdf are",
        "file",
    )


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as err:
            raise Refusal(422, "file: not valid UTF-16 text", "file") from err
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise Refusal(
            422, f"file: not UTF-8 text (invalid byte at offset {err.start})", "file"
        ) from err


def _pdf_text(data: bytes) -> str:
    try:
        reader = PdfReader(BytesIO(data))
        encrypted = reader.is_encrypted
        pages = [] if encrypted else [page.extract_text() or "" for page in reader.pages]
    except Exception as err:
        # A parser of untrusted bytes fails in many ways (a bad stream, a missing key, a
        # reference cycle); every one of them means the same to the caller.
        raise Refusal(422, f"file: not a readable PDF ({type(err).__name__})", "file") from err
    if encrypted:
        raise Refusal(422, "file: the PDF is encrypted", "file")
    return "\n\n".join(f"[Page {n}]\n{text}" for n, text in enumerate(pages, 1) if text.strip())


def split_text(text: str, max_chars: int) -> list[str]:
    """``text`` in consecutive parts of at most ``max_chars``; joined they are ``text``."""
    parts: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        end = start + max_chars
        cut = end
        for mark in _BREAKS:
            found = text.rfind(mark, start, end)
            if found > start:
                cut = min(found + len(mark), end)
                break
        parts.append(text[start:cut])
        start = cut
    parts.append(text[start:])
    return parts
