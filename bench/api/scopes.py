"""Nested scopes kept on a stack: the run context, the sharing memo, an evaluation's time account."""

from __future__ import annotations

import contextlib
from typing import Iterator, TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def pushed(stack: list[T], item: T) -> Iterator[T]:
    """``item`` on top of ``stack`` within this block (the innermost scope is ``stack[-1]``)."""
    stack.append(item)
    try:
        yield item
    finally:
        stack.remove(item)
