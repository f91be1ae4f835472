from kbgraph.core.ids import content_hash, normalise_text, text_hash


def test_normalising_collapses_white_space_and_keeps_case() -> None:
    assert normalise_text("  Return \n the   US item ") == "Return the US item"


def test_content_hash_ignores_key_order_and_is_prefixed() -> None:
    assert content_hash({"a": 1, "b": [1, 2]}, "exp") == content_hash({"b": [1, 2], "a": 1}, "exp")
    assert content_hash({"a": 1}, "exp").startswith("exp_")
    assert content_hash({"a": 1}, "exp") != content_hash({"a": 2}, "exp")


def test_text_hash_is_full_sha256() -> None:
    assert len(text_hash("x")) == 64
