from collections.abc import Iterator

class Migration:
    id: str

class MigrationList:
    def __iter__(self) -> Iterator[Migration]: ...
    def __len__(self) -> int: ...
