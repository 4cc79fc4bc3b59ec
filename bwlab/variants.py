"""Every student their own numbers: the variant of a prediction exercise, from the student's token.

A course has a secret (`secret_file(course)`: made by `python -m bwlab.tools.classroom student`, kept in
the instructor's course folder, never released). A student's token is HMAC-SHA256(secret, student id),
shortened (`token_for`); the instructor hands each student theirs (`classroom tokens`). A notebook finds
the token of whoever runs it (`current()`): the environment variable BWLAB_TOKEN, else the first line of
`bwlab-token.txt` in the notebook's folder, else none: the self-study variant, the numbers the notebook's
text was written with. The grader recomputes the token from the student id and the secret (a token in a
submission is never read) and gives it to the student's sandbox and to its own checks (`using`), so the
notebook, the visible check and the hidden test all work on the same numbers.

`pick(exercise, choices)` is how an exercise draws its numbers: the first choice for the self-study
variant, else one of the others chosen by the token and the exercise's name (a random generator seeded
with both), so two students' numbers differ exercise by exercise and a neighbour's values earn nothing.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import random
import re
import secrets
from pathlib import Path
from typing import Sequence

__all__ = ["TOKEN_ENV", "TOKEN_FILE", "current", "using", "token_for", "pick", "new_secret", "read_secret",
           "secret_file", "TokenError"]

TOKEN_ENV = "BWLAB_TOKEN"
TOKEN_FILE = "bwlab-token.txt"
TOKEN = re.compile(r"[0-9a-f]{16}")
_forced: list = []          # the grader's `using(token)`, innermost last


class TokenError(ValueError):
    """A token or a course secret that is not one; the message names the rule."""


def token_for(secret: bytes, student_id: str) -> str:
    """The student's token: the first 16 hex digits of HMAC-SHA256(secret, student id)."""
    if not secret:
        raise TokenError("the course secret is empty: make one with new_secret()")
    return hmac.new(secret, student_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def new_secret() -> bytes:
    return secrets.token_hex(32).encode()


def secret_file(course) -> Path:
    return Path(course) / "course_secret.txt"


def read_secret(course) -> bytes:
    path = secret_file(course)
    try:
        secret = path.read_bytes().strip()
    except OSError:
        raise TokenError(f"{path}: no course secret (python -m bwlab.tools.classroom student makes one)") from None
    if len(secret) < 32:
        raise TokenError(f"{path}: a course secret is at least 32 characters")
    return secret


def _check(token: str, where: str) -> str:
    token = token.strip().lower()
    if not TOKEN.fullmatch(token):
        raise TokenError(f"{where}: {token[:40]!r} is not a token (16 hex digits, as your instructor gave it)")
    return token


def current() -> str | None:
    """The token whose numbers the exercises use here: the grader's (`using`), else BWLAB_TOKEN, else
    ./bwlab-token.txt, else None (the self-study variant)."""
    if _forced:
        return _forced[-1]
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return _check(env, f"the environment variable {TOKEN_ENV}")
    path = Path(TOKEN_FILE)
    if path.is_file():
        first = (path.read_text(errors="replace").splitlines() or [""])[0]
        if first.strip():
            return _check(first, str(path.resolve()))
    return None


@contextlib.contextmanager
def using(token: str | None):
    """Within this block `current()` is `token` (the grader's checks of one student's notebook)."""
    _forced.append(None if token is None else _check(token, "using()"))
    try:
        yield
    finally:
        _forced.pop()


def pick(exercise: str, choices: Sequence, token: str | None = None):
    """The variant of `exercise`: choices[0] for the self-study variant (no token), else one of the
    others, chosen by the token and the exercise's name (the self-study answers, which anyone can
    read in the solution notebooks, are never a graded student's)."""
    if len(choices) < 2:
        raise ValueError(f"{exercise}: a variant needs the self-study choice and at least one more")
    token = current() if token is None else token
    if token is None:
        return choices[0]
    return choices[1 + random.Random(f"{token}:{exercise}").randrange(len(choices) - 1)]


def describe(token: str | None = None) -> str:
    """Whose numbers these are, for the line an exercise prints."""
    token = current() if token is None else token
    return "the self-study numbers (no token here)" if token is None else f"the numbers of token {token}"
