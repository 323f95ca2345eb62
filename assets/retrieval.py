"""The ``retrievals`` asset: each memory system's ranked units and reader context per question.

Why its own asset after ``ingestion``: retrieval parameters (top_k, budget, order) and the
embedding model change far more often than the ingested memories; re-running retrieval must not
re-ingest. Each (system, haystack) memory is opened once and queried for all its questions
(pipeline.memory.retrieve); a question whose memory's ingestion failed fails with that error.
"""

from functools import partial

from assets.ingestion import run_memory_stage
from pipeline.memory.base import RETRIEVALS_PAYLOAD
from pipeline.memory.cutoffs import retrieval_units_for
from pipeline.memory.retrieve import retrieval_results

run_retrievals = partial(
    run_memory_stage,
    stage="retrievals",
    payload_schema=RETRIEVALS_PAYLOAD,
    results=retrieval_results,
    stage_units=retrieval_units_for,
)
