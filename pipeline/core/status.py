"""The status of a stored (question, unit) row, and the error prefix reports count apart: one owner each.

Why here, at the bottom: the stage driver writes these values, and the catalog's views, the row
checks, the stale-unit hints and ``membench forget`` read them; each of those sits in another layer.
"""

from __future__ import annotations

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUSES = (STATUS_OK, STATUS_FAILED)

# The error of a judgment whose judge replied but gave no verdict the protocol can read
# (pipeline/judges/base.py ``UnparseableVerdict``): counted apart from transport failures.
UNPARSEABLE_ERROR_PREFIX = "UnparseableVerdict:"
