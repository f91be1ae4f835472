"""What a search keeps of a whole-namespace read with the namespace's search version
(kbgraph.search.student.versioned): the server is told the version kept, and what was made of the
rows is reused only when it answers that the version is unchanged."""

from __future__ import annotations

import time
from collections.abc import Callable

from kbgraph.search.student.change_feed import WritesKeptComing
from kbgraph.search.student.kept_in_background import KeptInBackground
from kbgraph.search.student.versioned import KeptByVersion, VersionedRead, filter_key, sent, version_applies


class Server:
    """Answers as the versioned queries do: the rows only when the version sent is not the current one."""

    def __init__(self, version: str | None, rows: tuple[str, ...]):
        self.version, self.rows = version, rows
        self.sent: list[str | None] = []

    def read(self, known: str | None) -> VersionedRead[tuple[str, ...]]:
        self.sent.append(known)
        unchanged = self.version is not None and known == self.version
        return VersionedRead(self.version, unchanged, () if unchanged else self.rows)


def made(rows: tuple[str, ...]) -> list[str]:
    return list(rows)


def test_the_rows_of_a_version_are_read_twice_then_reused_until_it_changes() -> None:
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    server = Server("v1", ("a", "b"))
    kept.get("filters", server.read, made)
    second = kept.get("filters", server.read, made)  # a read may have overlapped a commit: read again
    assert kept.get("filters", server.read, made) is second and server.sent == [None, None, "v1"]
    server.version, server.rows = "v2", ("a",)
    assert kept.get("filters", server.read, made) == ["a"] and server.sent[-1] == "v1"
    assert kept.get("filters", server.read, made) == ["a"] and server.sent[-1] is None
    assert kept.get("filters", server.read, made) == ["a"] and server.sent[-1] == "v2"


def test_rows_read_while_a_commit_was_applied_are_replaced_by_the_second_read() -> None:
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    kept.get("filters", Server("v2", ("a",)).read, made)  # v2's commit half applied: b not seen yet
    assert kept.get("filters", Server("v2", ("a", "b")).read, made) == ["a", "b"]


def test_a_namespace_without_a_version_and_filters_not_kept_by_it_are_read_every_time() -> None:
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    unversioned = Server(None, ("a",))
    kept.get("filters", unversioned.read, made)
    kept.get("filters", unversioned.read, made)
    assert unversioned.sent == [None, None]
    versioned = Server("v1", ("a",))
    kept.get(None, versioned.read, made)
    kept.get(None, versioned.read, made)
    assert versioned.sent == [None, None] and len(kept) == 0


def test_each_set_of_filters_keeps_its_own_and_the_oldest_goes_first() -> None:
    kept: KeptByVersion[str, list[str]] = KeptByVersion(2)
    for key in ("tenant a", "tenant b", "tenant c"):
        kept.get(key, Server("v1", (key,)).read, made)
    assert len(kept) == 2
    for key in ("tenant b", "tenant c"):  # confirmed
        kept.get(key, Server("v1", (key,)).read, made)
    server = Server("v1", ("tenant b",))
    assert kept.get("tenant b", server.read, made) == ["tenant b"] and server.sent == ["v1"]
    server = Server("v1", ("tenant a",))
    kept.get("tenant a", server.read, made)
    assert server.sent == [None], "the oldest was let go"


PARAMS = {"kb": "ns", "statuses": ["active"], "domains": None, "kinds": ["abstract"], "min_success": 0.0,
          "min_quality": 0.0, "agent": "agent-a", "domain": "retail", "other_domain": 0.5}


def test_the_key_is_the_namespace_and_every_filter_but_not_the_query_s_domain() -> None:
    assert filter_key(PARAMS) == filter_key({**PARAMS, "domain": "airline"})
    for changed in ({"kb": "other"}, {"agent": None}, {"statuses": ["archived"]}, {"domains": ["retail"]},
                    {"kinds": None}, {"min_success": 0.5}):
        assert filter_key(PARAMS) != filter_key({**PARAMS, **changed}), changed


def test_a_quality_floor_above_zero_is_read_every_time_as_feedback_changes_quality_without_a_new_version() -> None:
    assert version_applies(PARAMS)
    assert not version_applies({**PARAMS, "min_quality": 0.1})
    assert version_applies({**PARAMS, "min_success": 0.9})


def test_one_answer_serves_two_kept_reads_each_by_the_version_it_sent() -> None:
    # The intent channel's request carries the workflows and the history; each is kept on its own.
    workflows: KeptByVersion[str, list[str]] = KeptByVersion(4)
    history: KeptByVersion[str, list[str]] = KeptByVersion(4)
    server = Server("v1", ("a",))

    def both(workflow_key: str, history_key: str) -> tuple[list[str], list[str]]:
        kept_w, kept_h = workflows.kept(workflow_key), history.kept(history_key)
        answer_w, answer_h = server.read(sent(kept_w)), server.read(sent(kept_h))
        return workflows.take(workflow_key, kept_w, answer_w, made), history.take(history_key, kept_h, answer_h, made)

    both("filters", "filters, retail")
    first = both("filters", "filters, retail")  # confirmed
    assert both("filters", "filters, retail") == first and server.sent[-2:] == ["v1", "v1"]
    both("filters", "filters, airline")  # another domain's history is read, the workflows are not
    assert server.sent[-2:] == ["v1", None]
    kept = history.kept("filters, retail")
    server.version, server.rows = "v2", ("a", "b")
    history.take("filters, retail", kept, server.read(sent(kept)), made)
    assert sent(history.kept("filters, retail")) is None, "v2's rows are read again before they are trusted"
    assert sent(None) is None


def test_a_value_kept_at_an_older_version_follows_the_feed_at_once_and_waits_for_nothing_else() -> None:
    jobs: list[Callable[[], None]] = []
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    background = KeptInBackground(kept, jobs.append, settle_seconds=3600.0)
    whole = iter([VersionedRead("v1", False, ["a", "b"]), VersionedRead("v1", False, ["a", "b"])])
    made: list[list[str]] = []

    def make(rows: list[str]) -> list[str]:
        made.append(rows)
        return list(rows)

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        return ("v2", [*rows, "c"], ["c"]) if version == "v1" else None

    assert background.current("k", "v1", lambda known: next(whole), make, wait=True, follow=follow) == ["a", "b"]
    assert background.current("k", "v2", lambda known: next(whole), make, follow=follow) is None
    assert background.following() and len(jobs) == 1, "a follow started at once, no settling time"
    jobs.pop()()
    assert background.current("k", "v2", lambda known: next(whole), make, follow=follow) == ["a", "b", "c"]
    assert jobs == [] and not background.following(), "v2's write is read again once v2 has stayed an hour"
    # A version the feed cannot reach: the whole read, once writes settle (an hour here).
    assert background.current("k", "v3", lambda known: next(whole), make, follow=follow) is None
    jobs.pop()()
    assert background.current("k", "v3", lambda known: next(whole), make, follow=follow) is None
    assert jobs == [], "no follow again for that version, and the whole read waits to settle"


def test_a_followed_value_is_given_at_once_and_its_write_read_again_by_the_next_follow() -> None:
    # A follow reads once: it may have seen part of the commit of the version it reached, so the
    # next follow from it reads that write's rows again, with the later writes' (inclusive).
    jobs: list[Callable[[], None]] = []
    background: KeptInBackground[str, list[str]] = KeptInBackground(KeptByVersion(4), jobs.append, settle_seconds=0.0)
    whole = iter([VersionedRead("v1", False, ["a"]), VersionedRead("v1", False, ["a"])])
    asked: list[tuple[str, bool]] = []
    answers = {"v1": ("v2", ["a", "b?"], ["b"]), "v2": ("v3", ["a", "b", "c"], ["b", "c"])}

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        asked.append((version, inclusive))
        return answers.get(version)

    assert background.current("k", "v1", lambda known: next(whole), list, wait=True, follow=follow) == ["a"]
    assert background.current("k", "v2", lambda known: next(whole), list, follow=follow) is None
    jobs.pop()()
    assert background.current("k", "v2", lambda known: next(whole), list, follow=follow) == ["a", "b?"], "at once"
    assert len(jobs) == 1, "and the search at v2 (no write since: it stayed) started the follow that reads v2's write again"
    assert background.current("k", "v3", lambda known: next(whole), list, follow=follow) is None
    assert len(jobs) == 1, "one follow at a time"
    jobs.pop()()
    assert asked == [("v1", False), ("v2", True)], "from confirmed rows, then from rows read once"
    assert background.current("k", "v3", lambda known: next(whole), list, follow=follow) == ["a", "b", "c"]
    jobs.pop()()  # v3 read once: the search at v3 has its write read again (the feed answers nothing: a whole read later)
    assert asked[-1] == ("v3", True)


def test_a_follow_that_writes_kept_racing_leaves_its_rows_to_be_followed_again_not_read_whole() -> None:
    # Under steady writes a follow may find a write between its requests three times over; the feed
    # can still tell what changed, so the next search follows from the same rows again. (A whole
    # read of what feedback changes is never confirmed under steady writes.)
    jobs: list[Callable[[], None]] = []
    background: KeptInBackground[str, list[str]] = KeptInBackground(KeptByVersion(4), jobs.append, settle_seconds=0.0)
    whole = iter([VersionedRead("v1", False, ["a"]), VersionedRead("v1", False, ["a"])])
    asked: list[str] = []

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        asked.append(version)
        if len(asked) == 1:
            raise WritesKeptComing(version)
        return ("v3", ["a", "b", "c"], ["b", "c"])

    assert background.current("k", "v1", lambda known: next(whole), list, wait=True, follow=follow) == ["a"]
    assert background.current("k", "v2", lambda known: next(whole), list, follow=follow) is None
    jobs.pop()()  # every attempt raced
    assert background.current("k", "v3", lambda known: next(whole), list, follow=follow) is None
    assert len(jobs) == 1, "a follow again, not a whole read"
    jobs.pop()()
    assert asked == ["v1", "v1"], "from the same rows"
    assert background.current("k", "v3", lambda known: next(whole), list, follow=follow) == ["a", "b", "c"]


def test_under_steady_writes_a_whole_read_is_confirmed_by_following_the_feed_from_its_version() -> None:
    # Each whole read lands at another version (an add between any two): a second read at the same
    # version never comes, so the first is followed from its version, the write that made it included.
    jobs: list[Callable[[], None]] = []
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    background = KeptInBackground(kept, jobs.append, settle_seconds=0.0)
    whole = iter([VersionedRead("v1", False, ["a", "b?"]), VersionedRead("v2", False, ["a", "b", "c"])])
    asked: list[tuple[str, bool]] = []

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        asked.append((version, inclusive))
        return ("v3", ["a", "b", "c", "d"], ["b", "c", "d"]) if version == "v1" and inclusive else None

    assert background.current("k", "v1", lambda known: next(whole), list, follow=follow) is None
    jobs.pop()()
    assert asked == [("v1", True)], "the unconfirmed read at v1 followed from v1, v1's own write read again"
    assert background.current("k", "v3", lambda known: next(whole), list, follow=follow) == ["a", "b", "c", "d"]
    assert next(whole).version == "v2", "no second whole read"


def test_a_followed_part_waits_to_settle_from_when_it_was_first_wanted_not_for_a_version_to_stay() -> None:
    jobs: list[Callable[[], None]] = []
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    background = KeptInBackground(kept, jobs.append, settle_seconds=0.05)

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        return None

    def read(known: str | None) -> VersionedRead[list[str]]:
        return VersionedRead("v", False, ["a"])

    assert background.current("k", "v1", read, list, follow=follow) is None
    time.sleep(0.06)
    assert background.current("k", "v2", read, list, follow=follow) is None
    assert len(jobs) == 1, "the version changed meanwhile, the read starts all the same"
    unfollowed: KeptInBackground[str, list[str]] = KeptInBackground(KeptByVersion(4), jobs.append, settle_seconds=0.05)
    assert unfollowed.current("k", "v1", read, list) is None
    time.sleep(0.06)
    assert unfollowed.current("k", "v2", read, list) is None
    assert len(jobs) == 1, "without the feed, a read waits for a version that stays"


def test_rows_the_feed_cannot_bring_forward_are_read_whole_again_whatever_the_version() -> None:
    jobs: list[Callable[[], None]] = []
    kept: KeptByVersion[str, list[str]] = KeptByVersion(4)
    background = KeptInBackground(kept, jobs.append, settle_seconds=0.0)
    reads = iter([VersionedRead("v1", False, ["a"]), VersionedRead("v1", False, ["a"]),
                  VersionedRead("v5", False, ["a", "e"]), VersionedRead("v5", False, ["a", "e"])])

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        return None  # an import between: the feed cannot tell

    assert background.current("k", "v1", lambda known: next(reads), list, wait=True, follow=follow) == ["a"]
    assert background.current("k", "v2", lambda known: next(reads), list, follow=follow) is None
    jobs.pop()()  # the follow from v1 fails
    assert background.current("k", "v3", lambda known: next(reads), list, follow=follow) is None
    jobs.pop()()  # not another follow from v1: the whole read
    assert background.current("k", "v5", lambda known: next(reads), list, follow=follow) == ["a", "e"]


def test_a_followed_part_with_nothing_kept_is_read_at_the_first_search_without_settling() -> None:
    # A process's first searches: nothing of the part is kept, and its whole read is never wasted
    # (the feed follows the writes during it), so it starts at once.
    jobs: list[Callable[[], None]] = []
    background: KeptInBackground[str, list[str]] = KeptInBackground(KeptByVersion(4), jobs.append, settle_seconds=3600.0)

    def follow(version: str, rows: list[str], inclusive: bool = False) -> tuple[str, list[str], list[str]] | None:
        return None

    def read(known: str | None) -> VersionedRead[list[str]]:
        return VersionedRead("v1", False, ["a"])

    assert background.current("k", "v1", read, list, follow=follow) is None
    assert len(jobs) == 1, "read at once"
    jobs.pop()()
    assert background.current("k", "v1", read, list, follow=follow) == ["a"]
    unfollowed: KeptInBackground[str, list[str]] = KeptInBackground(KeptByVersion(4), jobs.append, settle_seconds=3600.0)
    assert unfollowed.current("k", "v1", read, list) is None
    assert jobs == [], "a part the feed does not follow waits for its version to stay"
