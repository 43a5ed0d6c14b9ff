"""Terminal output: one rich console on stderr, verbosity, and progress bars."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

console = Console(stderr=True, highlight=False)
_state = {"verbosity": 1}  # 0 quiet, 1 normal, 2 verbose


def set_verbosity(level: int) -> None:
    _state["verbosity"] = level


def verbosity() -> int:
    return _state["verbosity"]


def info(msg: str) -> None:
    if _state["verbosity"] >= 1:
        console.print(msg)


def debug(msg: str) -> None:
    if _state["verbosity"] >= 2:
        console.print(f"[dim]{msg}[/dim]")


def error(msg: str) -> None:
    """One unwrapped line on stderr, markup disabled (the message may hold user text)."""
    console.print(msg, markup=False, soft_wrap=True, highlight=False)


def warn(msg: str) -> None:
    console.print(f"[bold yellow]warning:[/bold yellow] {msg}")


@contextmanager
def progress_bar(transient: bool = True) -> Iterator[Progress]:
    """A rich Progress (disabled when quiet or when stderr is not a terminal)."""
    prog = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
        console=console,
        transient=transient,
        disable=_state["verbosity"] == 0 or not console.is_terminal,
    )
    with prog:
        yield prog


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar."""
    with progress_bar() as prog:
        task = prog.add_task(description, total=total, status="")
        for item in items:
            yield item
            prog.advance(task)
