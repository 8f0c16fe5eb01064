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

#[test]
fn root_readme_states_the_conformance_case_count() {
    let readme = include_str!("../README.md");
    let stated = number_before(readme, "-case conformance suite")
        .expect("README.md names the suite as \"the same N-case conformance suite\"");
    assert_eq!(
        stated,
        agentmem_testkit::CASES.len(),
        "README.md states {stated} conformance cases; agentmem_testkit::CASES has {}",
        agentmem_testkit::CASES.len()
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
    let readme = include_str!("../crates/agentmem-testkit/README.md");
    let stated = number_before(readme, " cases)\n")
        .expect("the testkit README heads its list \"## Areas covered (N cases)\"");
    assert_eq!(
        stated,
        agentmem_testkit::CASES.len(),
        "crates/agentmem-testkit/README.md states {stated} cases; CASES has {}",
        agentmem_testkit::CASES.len()
    );
}
