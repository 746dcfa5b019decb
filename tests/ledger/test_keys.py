"""mtvbench.ledger.keys: one digest, and the stored keys made with it, pinned: a stored key that changes shape
changes its store's format number (and these values)."""

from __future__ import annotations

from mtvbench.construct.journal import request_key
from mtvbench.data.schema import ChecklistItem
from mtvbench.ledger.keys import canonical_json, digest, text_digest
from mtvbench.records import GenerationConfig, GenerationRequest
from mtvbench.review.decisions import content_hash
from mtvbench.review.store import token_digest


def test_the_one_digest_is_sha256_of_canonical_json() -> None:
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'
    assert digest({"b": [1, "é"], "a": None}) == "f8f17faab95c024891d173fa43442b0e"  # run fingerprints
    assert digest({"x": "é", "a": [1, 2]}, length=24) == "325f13193efeaa0fe5122b0b"  # artifact content digests
    assert digest({"a": 1}) == digest({"a": 1}, length=64)[:32] and len(digest([1], length=64)) == 64


def test_the_stored_keys_are_pinned() -> None:
    assert text_digest("one", "two") == "33688af4ac8c7316" == digest(["one", "two"], length=16)  # prompt digests
    req = GenerationRequest(id="r/1", prompt="Describe ü",
                            generation=GenerationConfig(system="sys", max_tokens=10, temperature=0.2),
                            options={"b": 1, "a": "x"})
    assert request_key("openai:m", req, "frames-key") == \
        "3bf9f3c696ed596a2fcbd508493cc4b78addd65a7d9d4e9bc20bbd6978cfe12b"  # call-journal keys (format 2)
    ck = {2: [ChecklistItem(key="Q1", question="ü?", expected="Yes")]}
    assert content_hash([{"User": "é?", "Assistant": "a"}], ck) == "6e67addc6c47f676"  # review decisions (format 3)
    assert token_digest("tok") == "1a7674eb4ee78df7e1ac439a93c3fa8e3c945784d4dec9fd8e3011738b2f1d62"  # users
