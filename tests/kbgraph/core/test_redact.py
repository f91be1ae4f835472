"""URIs are shown without the credentials people put in them."""

from __future__ import annotations

import pytest

from kbgraph.store.connection import open_driver
from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.core.redact import redact_uri


@pytest.mark.parametrize(("uri", "shown"), [
    ("bolt://neo4j:s3cret@db.example:7687", "bolt://***@db.example:7687"),
    ("neo4j+s://user@host", "neo4j+s://***@host"),
    ("https://api.example/v1?api_key=sk-123&model=x", "https://api.example/v1?api_key=***&model=x"),
    ("https://u:p@proxy.example/v1?token=abc", "https://***@proxy.example/v1?token=***"),
    ("bolt://127.0.0.1:7687", "bolt://127.0.0.1:7687"),
])
def test_credentials_in_a_uri_are_replaced(uri: str, shown: str) -> None:
    assert redact_uri(uri) == shown


@pytest.mark.parametrize("uri", ["http://neo4j:s3cret@127.0.0.1:1", "bolt://neo4j:s3cret@127.0.0.1:1"])
def test_connection_errors_never_echo_the_password_in_the_uri(uri: str) -> None:
    with pytest.raises(Neo4jUnavailableError) as raised:
        open_driver(uri, ("neo4j", "other"), "neo4j", timeout_s=2, retry_time_s=0)
    assert "s3cret" not in str(raised.value) and "***@127.0.0.1:1" in str(raised.value)
