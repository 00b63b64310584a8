from research_mcp.core.citations import QuoteLocator, check_report_citations

SOURCE = "The “Golden Gate”   Bridge\nopened in 1937. It is 2,737 metres long."


def test_a_verbatim_quote_is_found_at_its_span() -> None:
    span = QuoteLocator(SOURCE).find("It is 2,737 metres long.")
    assert span is not None and SOURCE[span[0] : span[1]] == "It is 2,737 metres long."


def test_a_quote_differing_only_in_typography_whitespace_or_case_is_found() -> None:
    locator = QuoteLocator(SOURCE)
    span = locator.find('the "golden gate" bridge opened in 1937')
    assert span is not None and SOURCE[span[0] : span[1]].startswith("The “Golden Gate”")
    assert SOURCE[span[0] : span[1]].endswith("1937")


def test_a_changed_number_is_not_found() -> None:
    assert QuoteLocator(SOURCE).find("The Golden Gate Bridge opened in 1938.") is None


def test_citations_outside_the_inputs_are_dropped_and_unverified_ones_marked() -> None:
    check = check_report_citations("A [F1]. B [F2]. C [F3].", allowed={1, 2}, verified={1})
    assert check.report == "A [F1]. B [F2, unverified]. C ."
    assert (check.made, check.verified, check.dropped, check.cited) == (2, 1, 1, [1, 2])
