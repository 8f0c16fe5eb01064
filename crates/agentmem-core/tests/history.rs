//! History windows on the tool-call conversations the conformance suite stores
//! (`agentmem_testkit::tool_calls`): here the window functions alone, at every edge.

use agentmem_core::history::{complete_from, tail, tail_start, trim_orphans};
use agentmem_testkit::tool_calls::{
    conversation, first_orphaned_result, part, INTERLEAVED, PARALLEL, SEQUENTIAL,
};

#[test]
fn whole_history_when_limit_is_large() {
    let m = part(SEQUENTIAL);
    assert_eq!(tail_start(&m, 100), 0);
    assert_eq!(tail(&m, m.len()).len(), m.len());
}

#[test]
fn never_starts_with_orphaned_results() {
    // system, user, c1, its two results, c2, its result, answer, c3, its result.
    let m = part(SEQUENTIAL);
    assert_eq!(tail_start(&m, 7), 5); // both results of c1 dropped
    assert_eq!(tail_start(&m, 6), 5);
    assert_eq!(tail_start(&m, 8), 2); // c1 kept with both results
    assert_eq!(tail_start(&m, 1), 10); // the result of c3 without its call
    assert_eq!(tail_start(&m, 2), 8);
    assert_eq!(tail_start(&m, 0), 10);
    for n in 0..=m.len() + 2 {
        let w = tail(&m, n);
        assert!(w.len() <= n);
        assert!(w.first().is_none_or(|f| !f.is_tool_result()), "n={n}");
    }
}

#[test]
fn parallel_calls_stay_with_their_results_at_every_window_edge() {
    let m = part(PARALLEL);
    // The case: the last five would hold result_kyoto without its call.
    assert_eq!(tail_start(&m, 5), 5);
    assert_eq!(tail(&m, 5).len(), 2);
    assert_eq!(tail_start(&m, 6), 1);
    for convo in [
        part(PARALLEL),
        part(INTERLEAVED),
        part(SEQUENTIAL),
        conversation(),
    ] {
        for n in 0..=convo.len() + 1 {
            let window = tail(&convo, n);
            assert!(window.len() <= n, "n={n}");
            assert_eq!(first_orphaned_result(window), None, "n={n}: {window:?}");
            // The longest complete window: one more message would break it or exceed n.
            let start = tail_start(&convo, n);
            if start > 0 && start > convo.len().saturating_sub(n) {
                assert!(
                    first_orphaned_result(&convo[start - 1..]).is_some(),
                    "n={n}: {start} is not the first"
                );
            }
            let cut = convo[convo.len().saturating_sub(n)..].to_vec();
            let whole = n >= convo.len();
            assert_eq!(trim_orphans(cut, whole), window.to_vec(), "n={n}");
        }
    }
}

#[test]
fn interleaved_calls_are_cut_as_a_group() {
    // user, t1, t2, t1's result, t3, t2's and t3's results, answer, a call without an id,
    // its two results, answer.
    let m = part(INTERLEAVED);
    // Starting at t2's call leaves t1's result orphaned; at t1's result, t3's call is fine
    // but t2's result is orphaned: the first complete start is after t3's result.
    assert_eq!(complete_from(&m, 2), 7);
    assert_eq!(complete_from(&m, 1), 1);
    // A result without an id pairs with the message before it.
    assert_eq!(complete_from(&m, 9), 11);
    assert_eq!(complete_from(&m, 8), 8);
    assert_eq!(complete_from(&m, 7), 7);
    assert_eq!(complete_from(&m, m.len()), m.len());
}

#[test]
fn trim_orphans_matches_tail() {
    let m = part(SEQUENTIAL);
    for n in 1..=m.len() {
        let cut = m[m.len() - n..].to_vec();
        assert_eq!(
            trim_orphans(cut, n == m.len()),
            tail(&m, n).to_vec(),
            "n={n}"
        );
    }
}
