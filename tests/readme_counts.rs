//! The README states how many conformance cases every backend runs; the number comes from
//! the code (`agentmem_testkit::CASES`), so this test fails when a case is added or removed
//! and the sentence is not updated with it.

/// The number written just before `marker` in `text` ("the same 82-case conformance suite"
/// with marker `-case conformance suite` gives 82). `None` when the marker is missing or has
/// no number in front of it.
fn number_before(text: &str, marker: &str) -> Option<usize> {
    let head = &text[..text.find(marker)?];
    let digits_from = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[digits_from..].parse().ok()
}

/// Asserts that `readme` (at `path`) states the number of conformance cases before `marker`,
/// which `form` shows in context.
fn assert_states_the_case_count(path: &str, readme: &str, marker: &str, form: &str) {
    let stated = number_before(readme, marker)
        .unwrap_or_else(|| panic!("{path} states the case count as {form}"));
    assert_eq!(
        stated,
        agentmem_testkit::CASES.len(),
        "{path} states {stated} conformance cases; agentmem_testkit::CASES has {}",
        agentmem_testkit::CASES.len()
    );
}

#[test]
fn root_readme_states_the_conformance_case_count() {
    assert_states_the_case_count(
        "README.md",
        include_str!("../README.md"),
        "-case conformance suite",
        "\"the same N-case conformance suite\"",
    );
}

#[test]
fn number_before_reads_the_digits_next_to_the_marker() {
    assert_eq!(number_before("the same 82-case suite", "-case"), Some(82));
    assert_eq!(number_before("100-case", "-case"), Some(100));
    assert_eq!(number_before("the same N-case suite", "-case"), None);
    assert_eq!(number_before("no marker here", "-case"), None);
}

#[test]
fn testkit_readme_states_the_conformance_case_count() {
    assert_states_the_case_count(
        "crates/agentmem-testkit/README.md",
        include_str!("../crates/agentmem-testkit/README.md"),
        " cases)\n",
        "the heading \"## Areas covered (N cases)\"",
    );
}
