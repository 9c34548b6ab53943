"""The load figures of ``bench_load`` as rows of the benchmark table: (figure, value, target)."""

from __future__ import annotations

from typing import Any

from mnemo_cli.bench_traffic import BATCH_HEAD_S


def _ms(f: dict[str, float], *keys: str) -> str:
    return " / ".join(f"{f[k]:.1f}" for k in keys) + " ms"


def _s(*seconds: float | None) -> str:
    """Seconds, or ``never`` for what did not happen within the run's limit."""
    return " / ".join("never" if s is None else f"{s:.1f}" for s in seconds) + " s"


def _found(f: dict[str, Any]) -> str:
    """How many probes a freshness figure has, and how many were never found."""
    missed = f.get("not_found", 0)
    return f"n {f['n']}" + (f", {missed} never" if missed else "")


def _cores(label: str, cost: dict[str, Any], deployed: bool = False) -> tuple[str, str, str]:
    """Where the CPU went during a figure: each process's cores, and the host's load (of a
    deployed Mnemo, the client's alone, and its own host's load)."""
    seconds = cost["seconds"] or 1.0
    used = ", ".join(f"{k} {v / seconds:.2f}" for k, v in cost["cpu_s"].items())
    whose, host = ("the client's cores", "its host's load") if deployed else ("cores", "host load")
    return (f"  ... {whose} used ({label})", used or "n/a", f"{host} {cost['host_load'][-1]}")


def _formation_rows(
    form: dict[str, Any], fresh: dict[str, Any], deployed: bool = False
) -> list[tuple[str, str, str]]:
    cpu = form["cost"]["cpu_s"]
    per = ", ".join(
        f"{k} {cpu[k] * 1000 / form['messages']:.1f}" for k in ("memory", "postgres") if k in cpu
    )
    drained = form.get("drained", True)
    until = "all formed" if drained else f"the limit, {form['seconds']:.0f} s (not all formed)"
    out = [
        (
            f"memory formation, {form['messages']:,} msgs flat out until {until}",
            f"{'' if drained else '< '}{form['msg_per_s']:.1f} msg/s",
            "",
        ),
        ("  ... CPU ms per message formed", per or "n/a", ""),
        (
            "  ... the queue status of that workspace (the SDK's wait), p50",
            f"{form.get('queue_status_p50_ms', 0.0):.0f} ms",
            "",
        ),
        _cores("formation", form["cost"], deployed),
    ]
    rate = fresh["load"]["achieved_msg_per_s"]
    for kind, label, target in (
        ("observation_ms", "an observation", "p50 <= 1000 ms"),
        ("search_ms", "found by search", ""),
    ):
        f = fresh[kind]
        out.append(
            (
                f"freshness at {rate:.0f} msg/s (half): accepted -> {label}, p50 / p99"
                f" ({_found(f)})",
                _ms(f, "p50_ms", "p99_ms"),
                target,
            )
        )
    return out


# Read -> (the percentiles shown, its label, its target).
_READ_ROWS = {
    "get_context": (("p50_ms", "p99_ms"), "get_context, search query, 2000 tokens", "p99 <= 25 ms"),
    "prefetch": (("p50_ms", "p95_ms"), "dialectic prefetch (conclusions/query, 12)", ""),
    "chat": (("p50_ms", "p95_ms"), "peer chat (local reasoner)", ""),
}
# Where the host probe ran: beside the stack, or on a deployed Mnemo's client.
_HOST = {False: "host", True: "the client's host"}
# On a deployed Mnemo the chat is answered by whichever model the deployment's dialectic has.
_DEPLOYED_LABELS = {"chat": "peer chat"}


def _loaded_host_rows(
    quiet: dict[str, Any] | None,
    loaded: dict[str, Any] | None,
    rate: float,
    n: int,
    deployed: bool = False,
) -> list[tuple[str, str, str]]:
    """The host probe taken again with the load on, its p99 against its quiet one: what the
    load alone does to a fixed computation on these cores, the yardstick of the reads' own
    ratio (older results have none)."""
    if not loaded:
        return []
    ratio = f" ({loaded['p99_ms'] / quiet['p99_ms']:.2f}x)" if quiet and quiet["p99_ms"] else ""
    label = (
        f"{_HOST[deployed]}: the same computation at {rate:.0f} msg/s, after history {n:,}'s reads"
    )
    return [
        (
            f"{label}, p50 / p99 (x quiet) (n {loaded['n']})",
            _ms(loaded, "p50_ms", "p99_ms") + ratio,
            "",
        )
    ]


def _batch_rows(split: dict[str, Any] | None, rate: float) -> list[tuple[str, str, str]]:
    """The loaded get_contexts that ran during a batch's first moments, and the rest: how much
    of the tail the write bursts make (older results have no split)."""
    if not split:
        return []
    during, rest = split["during"], split["rest"]
    head = f"{BATCH_HEAD_S * 1000:.0f} ms"
    return [
        (
            f"  ... at {rate:.0f} msg/s: those meeting a batch's first {head}, p50 / p99"
            f" (n {during['n']})",
            _ms(during, "p50_ms", "p99_ms"),
            "",
        ),
        (f"  ... the rest, p50 / p99 (n {rest['n']})", _ms(rest, "p50_ms", "p99_ms"), ""),
    ]


def _read_rows(
    quiet: dict[str, Any],
    loaded: dict[str, Any],
    quiet_host: dict[str, Any] | None = None,
    deployed: bool = False,
) -> list[tuple[str, str, str]]:
    out = []
    for n in sorted(quiet, key=int):
        rate = loaded[n]["load"]["achieved_msg_per_s"]
        for kind, (keys, label, target) in _READ_ROWS.items():
            label = _DEPLOYED_LABELS.get(kind, label) if deployed else label
            shown = " / ".join(k.removesuffix("_ms") for k in keys)
            q, lo = quiet[n]["reads"][kind], loaded[n]["reads"][kind]
            ratio = lo[keys[-1]] / q[keys[-1]] if q[keys[-1]] else 0.0
            out.append(
                (f"{label}, history {int(n):,}: quiet, {shown} (n {q['n']})", _ms(q, *keys), "")
            )
            out.append(
                (
                    f"{label}, history {int(n):,}: at {rate:.0f} msg/s, {shown} (x quiet)"
                    f" (n {lo['n']})",
                    f"{_ms(lo, *keys)} ({ratio:.2f}x)",
                    f"{target} (<= 1.5x)" if target else "",
                )
            )
        out.extend(_batch_rows(loaded[n].get("batches"), rate))
        out.extend(_loaded_host_rows(quiet_host, loaded[n].get("host"), rate, int(n), deployed))
        out.append(
            _cores(f"reads at {rate:.0f} msg/s, history {int(n):,}", loaded[n]["cost"], deployed)
        )
    if quiet:
        out.append(_cores("quiet reads", next(iter(quiet.values()))["cost"], deployed))
    return out


def _burst_rows(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    chat, fair = r["chat"], r["fairness"]
    out = [
        (
            f"{chat['messages']}-msg chat after a {r['burst']['messages']:,} burst: the deriver"
            " reaches it, from its post",
            _s(chat["reached_s"]),
            "",
        ),
        (
            "  ... its queue drains, from the deriver reaching it / from its post",
            _s(chat["drained_after_reached_s"], chat["drained_after_post_s"]),
            "<= 10 s",
        ),
    ]
    pending = " -> ".join(f"{p:,}" for p in fair["a_unfinished_units"])
    for key, label, target in (
        ("other_partition", "another partition", "p50 <= 1000 ms"),
        ("same_partition", "A's partition", "p50 <= 1000 ms"),
    ):
        f = fair[key]["observation_ms"]
        out.append(
            (
                f"fairness, A {pending} units to do: B in {label}, accepted -> an"
                f" observation, p50 / max ({_found(f)})",
                _ms(f, "p50_ms", "max_ms"),
                target,
            )
        )
    return out


def _host_rows(host: dict[str, Any] | None, deployed: bool = False) -> list[tuple[str, str, str]]:
    """The host probe (older results have none; of a deployed Mnemo, the client's host)."""
    if not host:
        return []
    spread = host["p99_ms"] / host["p50_ms"] if host["p50_ms"] else 0.0
    label = f"{_HOST[deployed]}: a fixed pure-Python computation, quiet, p50 / p99 (p99 / p50) (n {host['n']})"
    return [(label, f"{_ms(host, 'p50_ms', 'p99_ms')} ({spread:.2f}x)", "")]


def rows(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The load figures as rows of the benchmark table."""
    if not r:
        return []
    deployed = bool(r.get("deployed"))
    return [
        *_formation_rows(r["formation"], r["freshness"], deployed),
        *_host_rows(r.get("host"), deployed),
        *_read_rows(r["quiet"], r["loaded"], r.get("host"), deployed),
        *_burst_rows(r),
    ]
