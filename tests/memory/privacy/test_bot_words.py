"""The pure rules of what the bot wrote about an erased person (memory/privacy/bot_words.py,
memory/text/mentions.py): which of its words quote the person, which names are taken out of its
text, and when a copy differs only where a name was taken out. Expected texts are written out
by hand."""

from __future__ import annotations

from memory.privacy.bot_words import quotes, word_runs
from memory.text.mentions import redact_names, same_but_redacted

HERS = ["my flat is on Birch Lane 12, second floor (reply to #4)", "keys under the mat", "ok thanks"]


def test_a_run_of_five_of_her_words_is_a_quote_whatever_the_case_and_punctuation() -> None:
    runs = word_runs(HERS)
    assert quotes('She told me: "My flat is on Birch Lane 12."', runs)  # five words of the first
    assert not quotes("The keys are under the mat", runs)  # her four words, not in a row
    assert quotes("The keys? Under the mat!", runs)  # a message of four words, quoted whole
    assert not quotes("ok thanks, see you", runs), "two words are too common to be hers"
    assert not quotes("her place is on Birch Lane", runs), "four words of a longer message: a paraphrase"
    # The log's reply note is not her words: a bot reply to #4 does not quote her by it.
    assert not quotes("second floor (reply to #4)", runs)


def test_her_names_leave_the_bot_words_as_whole_words_only() -> None:
    names = ["Zephyrine", "zephyq", "Al", "Z"]
    text = "Zephyrine's flat? ask ZEPHYRINE or @zephyq. Alice and AL stay; Al goes, Zephyrines stays."
    assert redact_names(text, names) == (
        "@unknown-user's flat? ask @unknown-user or @unknown-user. Alice and AL stay; @unknown-user goes,"
        " Zephyrines stays."
    )
    # A name inside "@unknown-user" is left alone; a one-letter name is never a name to find.
    assert redact_names("@unknown-user said z", ["unknown", "user", "z"]) == "@unknown-user said z"


def test_a_copy_differs_only_where_a_name_was_taken_out() -> None:
    logged = "@unknown-user lives on Birch Lane; ask @unknown-user."
    assert same_but_redacted(logged, "Zephyrine lives on Birch Lane; ask zephyq.")
    assert not same_but_redacted(logged, "Zephyrine lives on Oak Street; ask zephyq.")
    assert not same_but_redacted(logged, "Zephyrine lives on Birch Lane; ask zephyq. Bye!")
    # At most a name's length (33 characters with its @), never a line break.
    assert not same_but_redacted("hi @unknown-user", "hi " + "x" * 34)
    assert not same_but_redacted("hi @unknown-user", "hi a\nb")
    assert same_but_redacted("no name here", "no name here")
