"""A question asking how long, how many, when or which version is answered only by a fact stating a
number: real sentences of machine-id(5) and the e2fsprogs README, as a run would verify them."""

from __future__ import annotations

from research_mcp.contracts import Fact
from research_mcp.roles.evidence import NOT_ESTABLISHED, judge_evidence

MACHINE_ID = "How long is the machine ID in /etc/machine-id?"


def fact(ident: int, quote: str, question: str, source: int = 1) -> Fact:
    return Fact(
        id=ident,
        statement=quote,
        quote=quote,
        source_id=source,
        location=(0, len(quote)),
        confidence=0.9,
        verified=True,
        question=question,
        corroborations=2,
    )


def test_a_quantity_question_whose_facts_state_no_number_is_a_low_gap() -> None:
    said = [
        fact(1, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID),
        fact(2, "This ID uniquely identifies the host.", MACHINE_ID, source=2),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" in evidence.gaps
    assert ("low", next(why for level, why in evidence.caps if "states a number" in why)) in evidence.caps


def test_a_fact_stating_the_number_answers_it() -> None:
    said = [
        fact(
            1,
            "The machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID.",
            MACHINE_ID,
        ),
        fact(
            2, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID, 2
        ),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert not any("states a number" in why for _, why in evidence.caps)
    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" not in evidence.gaps


def test_a_name_with_a_digit_is_not_a_number() -> None:
    question = "Which version of e2fsprogs does its README describe?"
    said = [fact(1, "From time to time, I release new versions of e2fsprogs, to fix bugs in ext4.", question)]
    evidence = judge_evidence([question], said, in_scope=1, read=1)

    assert any(level == "low" and "states a number" in why for level, why in evidence.caps)


def test_a_man_page_reference_is_not_a_number() -> None:
    # machine-id(5)'s SEE ALSO line names sections of other pages, not the ID's length.
    said = [
        fact(1, "systemd(1), systemd-machine-id-setup(1), gethostid(3), hostname(5),", MACHINE_ID),
        fact(
            2, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID, 2
        ),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert any(level == "low" and "states a number" in why for level, why in evidence.caps)
    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" in evidence.gaps
