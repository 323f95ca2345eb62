"""The one error a ``membench`` command raises for a mistake of the person at the keyboard."""

from __future__ import annotations


class UserError(Exception):
    """A mistake of the person at the keyboard: reported as one line, exit status 2."""
