from typing import NamedTuple

class DatabaseURI(NamedTuple):
    scheme: str
    username: str | None
    password: str | None
    hostname: str | None
    port: int | None
    database: str | None
    args: dict[str, str]

def parse_uri(s: str) -> DatabaseURI: ...
