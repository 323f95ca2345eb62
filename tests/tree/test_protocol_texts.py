"""Protocol texts kept word for word (docs/design/third_party.md): pinned by sha256, listed in the doc.

Why: these prompts define published protocols, so a score is comparable only while they stay
exactly as published; an edit must be deliberate (change the hash here and in the doc, and say
why). The doc's table and this one must list the same constants with the same hashes.
"""

from __future__ import annotations

import hashlib
import importlib
import re

import pytest

from tests.support.paths import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "design" / "third_party.md"
JUDGES, PRESETS, TEXT = "pipeline.judges.llm", "pipeline.readers.presets", "pipeline.metrics.lexical"
BEAM, PLUS, BP = "pipeline.judges.beam", "pipeline.judges.locomo_plus", "pipeline.readers.presets_beam"

PINNED: dict[tuple[str, str], str] = {
    (JUDGES, "LME_PROMPT_DEFAULT"): "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
    (JUDGES, "LME_PROMPT_TEMPORAL"): "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
    (JUDGES, "LME_PROMPT_KNOWLEDGE_UPDATE"): "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
    (JUDGES, "LME_PROMPT_PREFERENCE"): "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
    (JUDGES, "LME_PROMPT_ABSTENTION"): "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
    (PRESETS, "LME_ANSWER_PROMPT"): "e427ff913456e51a132ec865b1b5038d562bdc36890976943ad421cc9b365c9d",
    (PRESETS, "LME_ANSWER_PROMPT_COT"): "9e2b3110622929ab896696dd8937231c7436740ec3b9586f653f97346e19ab2c",
    (PRESETS, "LME_CON_PROMPT"): "1afab7da2e46782b717d009f6a208516611d691ad0e931e95e2b5c58eb2a23c8",
    (PRESETS, "LME_SESSION_BLOCK"): "9c4cc6b4baf20116cddea52e080f8c95e4cbc44e50b148282b746bc0ed402740",
    (PRESETS, "LOCOMO_QA_PROMPT"): "a30fe18a6c9b58c5d22b6188860e5a99cdfef33fcc8a36141b571d954b9b0266",
    (PRESETS, "LOCOMO_QA_PROMPT_CAT_5"): "57005b715f4c2a7c848ab0d7829037afd08d5bb68ba626e4f5a83e8493104986",
    (PRESETS, "LOCOMO_CAT_2_HINT"): "dae3c8b7fe10cf0fdc3b3e062dae355dad2af77e82b78fe90cb67426f2a927fe",
    (PRESETS, "LOCOMO_CAT_5_CHOICE"): "768d9890ca3a9aba6d2665dd44ac6e9822502677abf5a1e05f27e7ad8525b854",
    (PRESETS, "LOCOMO_NOT_MENTIONED"): "2a542960aa38558c7ea526c58ca44e64944dd4a6c9c9db658f3fa6f6da9792c3",
    (TEXT, "LOCOMO_NOT_AVAILABLE"): "e437855647d20223d8f14800e1379557aece1c639793aa3a80b79bd781cef720",
    (JUDGES, "MEM0_ACCURACY_PROMPT"): "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0",
    (PRESETS, "MEM0_ANSWER_PROMPT"): "f3c786104816bba61d03b7f41c2be45009e6c8c296a04d9712ab1a59e4ae2399",
    (BEAM, "BEAM_JUDGE_PROMPT"): "d349c9a8559bed9c14bfe2e624212225b09218ff864258a739229c15f4c8e869",
    (BEAM, "BEAM_EQUIVALENCE_SYSTEM"): "0863c78c1b27d36c97bb7bfd2d4d6b88ef69b093e92bb4719e665527722413e2",
    (BEAM, "BEAM_EQUIVALENCE_USER"): "8686f5ce5009350f1d04fccc06fc23a234cfcd956603c5d54bb2161c2d2c6045",
    (BP, "BEAM_LONG_CONTEXT_QUESTION"): "4283812ce472c57c6a31fcc428bcc6af70fb0b7da998934c4b672999b8bc7bc4",
    (BP, "BEAM_RAG_ANSWER_PROMPT"): "ed89b98d1024432a46bd297345961cf89d2429746daec37befb50db46e0c914a",
    (PLUS, "LOCOMO_PLUS_JUDGE_PROMPT"): "83875348ab831a4f2932457bc951d37654db9f77ecaf50e7a8aacf5ff566a08b",
    (BP, "LOCOMO_PLUS_CONV_START"): "bfb101603e38a36cfecfb7e989ae51d537907ad7ac0b89020e2b7c01046d3cb7",
    (BP, "LOCOMO_PLUS_COGNITIVE_INSTRUCTION"): "b9f2dd0d22ec2bf45fad034c90d94f61cb9f4776999220e50dc811ebc8f7d9d3",
}
_DOC_ROW = re.compile(r"^\| `(?P<name>[A-Z0-9_]+)` \| `(?P<module>[\w/]+)\.py` \|.*\| `(?P<sha>[0-9a-f]{64})` \|$")


def text_sha256(value: str | tuple[str, ...]) -> str:
    text = value if isinstance(value, str) else "\x00".join(value)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(("module", "name"), sorted(PINNED))
def test_protocol_text_is_unchanged(module: str, name: str) -> None:
    assert text_sha256(getattr(importlib.import_module(module), name)) == PINNED[(module, name)]


def test_the_doc_lists_exactly_these_texts() -> None:
    rows = [m for line in DOC.read_text(encoding="utf-8").splitlines() if (m := _DOC_ROW.match(line))]
    listed = {(m["module"].replace("/", "."), m["name"]): m["sha"] for m in rows}
    assert listed == PINNED
