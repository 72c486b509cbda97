"""Hand-built surfaces for the fold preview's tests: nodes and a meter holding them, with
no log behind them (the real engine's folds are checked on real logs elsewhere)."""

from __future__ import annotations

from dshweb.core.fold.meter import SessionMeter, SurfaceNode
from dshweb.core.fold.pricing import Shape


def node(
    seq: int, kind: str, tokens: int, calls: int = 0, shape: Shape | None = None
) -> SurfaceNode:
    return SurfaceNode(seq, kind, tokens, f"node {seq}", calls=calls, shape=shape)


def surface_meter(
    nodes: list[SurfaceNode], window: int | None = None, reserved: int = 0
) -> SessionMeter:
    """A meter whose surface is ``nodes`` (under ``window`` and ``reserved``)."""
    meter = SessionMeter(context_window=window, reserved_tokens=reserved)
    for one in nodes:
        meter.nodes.append(one)
        meter.node_seqs.append(one.seq)
        meter.nodes_tokens += one.tokens
        meter._count(one, 1)
    return meter
