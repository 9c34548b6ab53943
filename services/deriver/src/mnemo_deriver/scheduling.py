"""Which batch runs next: one line per representation, taken fairly. Pure.

Every representation has its own line of closed batches, worked one batch at a time and in
order, so its observations are published in the order of its messages whichever replica or
however many slots derive them. When a slot frees, workspaces take turns, and within a
workspace its representations take turns: a workspace with a long backlog gets one slot in
its turn, never all of them while another waits. ``take`` can be told which workspaces it
may serve: the deriver keeps a slot for those with nothing running.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Collection

from mnemo_deriver.batching import Batch, RepKey


class FairQueue:
    """Closed batches per representation, handed out one representation at a time."""

    def __init__(self) -> None:
        self._lines: dict[RepKey, deque[Batch]] = {}
        self._busy: set[RepKey] = set()
        # workspace -> its representations with a batch waiting and none running, in turn order
        # (an ordered set: a group's workspace may have thousands)
        self._ready: OrderedDict[str, OrderedDict[RepKey, None]] = OrderedDict()
        # Kept as lines come and go, not counted over them at each batch: batches waiting, and
        # each workspace's lines.
        self._count = 0
        self._lines_of: Counter[str] = Counter()
        self._waiting_of: Counter[str] = Counter()

    def put(self, batch: Batch, *, front: bool = False) -> None:
        """Queue ``batch`` at the end of its line (``front``: to be taken next, in a retry)."""
        line = self._lines.get(batch.key)
        if line is None:
            line = self._lines[batch.key] = deque()
            self._lines_of[batch.key.workspace] += 1
        self._count += 1
        self._waiting_of[batch.key.workspace] += 1
        if front:
            line.appendleft(batch)
        else:
            line.append(batch)
        self._mark_ready(batch.key)

    def take(self, skip: Collection[str] = ()) -> Batch | None:
        """The next batch to run, its representation then counted as busy; None if none waits.
        The workspaces in ``skip`` are not served; they keep their turn."""
        for workspace in list(self._ready):
            if workspace not in skip:
                batch = self._take_from(workspace)
                if batch is not None:
                    return batch
        return None

    def _take_from(self, workspace: str) -> Batch | None:
        """The batch of ``workspace``'s representation whose turn it is; the workspace then goes
        to the end of the turns (or leaves them, with nothing else ready)."""
        reps = self._ready[workspace]
        while reps:
            key, _ = reps.popitem(last=False)
            line = self._lines.get(key)
            if not line or key in self._busy:
                continue
            if reps:
                self._ready.move_to_end(workspace)
            else:
                del self._ready[workspace]
            self._busy.add(key)
            batch = line.popleft()
            self._count -= 1
            self._counted_out(workspace, 1)
            if not line:
                self._forget(key)
            return batch
        del self._ready[workspace]
        return None

    def done(self, key: RepKey) -> None:
        """The running batch of ``key`` finished (or was put back): its line may go on."""
        self._busy.discard(key)
        self._mark_ready(key)

    def drop(self, keep: Callable[[RepKey], bool]) -> list[Batch]:
        """Remove the lines of the representations ``keep`` rejects (running or waiting to be
        tried again included); their waiting batches."""
        gone = [k for k in self._lines if not keep(k)]
        out = [b for k in gone for b in self._lines[k]]
        for k in gone:
            self._counted_out(k.workspace, len(self._lines[k]))
            self._forget(k)
        self._count -= len(out)
        self._busy = {k for k in self._busy if keep(k)}
        for workspace in list(self._ready):
            reps = OrderedDict.fromkeys(k for k in self._ready[workspace] if keep(k))
            if reps:
                self._ready[workspace] = reps
            else:
                del self._ready[workspace]
        return out

    def busy(self, key: RepKey) -> bool:
        return key in self._busy

    def waiting(self, workspace: str) -> bool:
        """Whether any line of ``workspace`` has a batch waiting."""
        return self._lines_of[workspace] > 0

    def backlogged(self, workspace: str) -> bool:
        """Whether a line of ``workspace`` has more than one batch waiting: more came to one
        of its representations than its last message or two (a conversation's message waits
        as one batch in each representation that observes it, a group's in many)."""
        return self._waiting_of[workspace] > self._lines_of[workspace]

    def __len__(self) -> int:
        """Batches waiting (not those running)."""
        return self._count

    def _counted_out(self, workspace: str, batches: int) -> None:
        self._waiting_of[workspace] -= batches
        if self._waiting_of[workspace] <= 0:
            del self._waiting_of[workspace]

    def _mark_ready(self, key: RepKey) -> None:
        if key in self._busy or key not in self._lines:
            return
        self._ready.setdefault(key.workspace, OrderedDict())[key] = None

    def _forget(self, key: RepKey) -> None:
        """``key``'s line is empty (or dropped): it goes."""
        del self._lines[key]
        self._lines_of[key.workspace] -= 1
        if not self._lines_of[key.workspace]:
            del self._lines_of[key.workspace]
