"""Policy lists on benchmark command lines."""

from __future__ import annotations


def split_policies(text: str) -> list[str]:
    """``linucb:3,alpha=3,single`` → ``linucb:3,alpha=3`` and ``single``: a
    policy's options share its commas, and no policy name holds an ``=``."""
    policies: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and policies:
            policies[-1] += "," + piece
        else:
            policies.append(piece)
    return policies
