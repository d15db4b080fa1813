"""The guess of a chat's language from its words, and the server's choice (no database)."""

from __future__ import annotations

import pytest

from memory.text.language import LANGUAGES, SIMPLE, config_for, guess_language, valid_language

ENGLISH = "what do you think about the new schedule, it was not that bad but I have to check with them"
SWEDISH = "vad tycker du om det nya schemat, det var inte så illa men jag måste kolla med dem"
GERMAN = "was denkst du über den neuen Plan, es war nicht so schlimm aber ich muss das mit ihnen klären"
CODE = "ERROR 0x7f3a segfault at 0000 ip 00007f sp 00007ffd error 4 in libc.so.6"


@pytest.mark.parametrize(
    ("line", "language"), [(ENGLISH, "english"), (SWEDISH, "swedish"), (GERMAN, "german")]
)
def test_a_chat_of_one_language_is_guessed(line: str, language: str) -> None:
    assert guess_language([line] * 20) == language


def test_too_few_words_or_no_language_ahead_is_no_guess() -> None:
    assert guess_language([ENGLISH]) is None  # 20 words: under MIN_WORDS
    assert guess_language([CODE] * 40) is None  # words, but no function words
    assert guess_language([ENGLISH, SWEDISH] * 20) is None  # two languages, neither twice the other


def test_the_configuration_of_a_language_and_the_servers_choice() -> None:
    assert config_for("swedish") == "eva_swedish" and config_for(None) == SIMPLE
    assert config_for("klingon") == SIMPLE
    assert valid_language(" Swedish ") == "swedish" and valid_language("auto") is None
    assert valid_language("") is None
    with pytest.raises(ValueError, match="choose one of"):
        valid_language("klingon")
    assert len(LANGUAGES) == 12
