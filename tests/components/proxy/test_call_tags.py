"""Side calls and retries as the tagger sees them: which attempt of a repeated request counts."""

from __future__ import annotations

from components.proxy.call_tags import CallTagger, side_call_rule

TITLE_CALL = {"model": "m", "messages": [], "tools": [], "output_config": {"format": {"type": "json_schema"}}}


def test_claude_code_title_call_is_a_side_call_and_a_turn_is_not() -> None:
    assert side_call_rule("anthropic.messages", TITLE_CALL) is not None
    assert side_call_rule("anthropic.messages", {**TITLE_CALL, "tools": [{"name": "Bash"}]}) is None
    assert side_call_rule("anthropic.messages", {**TITLE_CALL, "output_config": {"effort": "high"}}) is None
    assert side_call_rule("chat.completions", TITLE_CALL) is None


def test_repeated_digest_is_a_retry_of_the_latest_recorded_attempt() -> None:
    tagger = CallTagger()
    first = tagger.arrive("s", "chat.completions", {}, "d1", {})
    first.recorded(0)
    other = tagger.arrive("s", "chat.completions", {}, "d2", {})
    other.recorded(1)
    retry = tagger.arrive("s", "chat.completions", {}, "d1", {"x-stainless-retry-count": "1"})
    assert first.tags() == {} and other.tags() == {}
    assert retry.tags() == {"retry_of": 0, "retry_count": 1}


def test_same_digest_in_another_session_is_not_a_retry() -> None:
    tagger = CallTagger()
    tagger.arrive("a", "chat.completions", {}, "d1", {}).recorded(0)
    assert tagger.arrive("b", "chat.completions", {}, "d1", {}).tags() == {}


def test_call_overtaken_by_its_retry_is_superseded() -> None:
    tagger = CallTagger()
    original = tagger.arrive("s", "chat.completions", {}, "d1", {})
    retry = tagger.arrive("s", "chat.completions", {}, "d1", {})
    assert retry.tags() == {}  # the original is still running: nothing recorded to repeat yet
    retry.recorded(4)
    assert original.tags() == {"superseded_by": 4}


def test_sdk_retry_header_without_a_known_original_is_only_noted() -> None:
    tags = CallTagger().arrive("s", "chat.completions", {}, "d1", {"x-stainless-retry-count": "2"}).tags()
    assert tags == {"retry_count": 2}
