//! Checks a stored transcript against the acknowledgements its writers printed.

use std::collections::{HashMap, HashSet};

use agentmem_core::Message;

use crate::tagged;

/// What [`audit`] found in a transcript that passed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Tagged messages checked (intact, in order, unique).
    pub checked: usize,
    /// Messages without tags (compaction summaries), passed over.
    pub untagged: usize,
    /// Tagged messages present although never acknowledged (an append cut by a kill after
    /// it reached the store but before its acknowledgement reached the parent), in stored
    /// order.
    pub unacknowledged: Vec<String>,
}

/// Audits `stored` (for instance every archive, oldest first, then the session) against
/// `acked`, the acknowledged message ids:
///
/// - every tagged message is intact (content, role and id match its tags);
/// - no message id appears twice (no duplicate from a compaction that half happened);
/// - each writer's messages are in that writer's order;
/// - every acknowledged id is present (nothing acknowledged was lost).
///
/// Returns the first violation as a message naming the message id.
pub fn audit<'a>(
    stored: impl IntoIterator<Item = &'a Message>, acked: &[String],
) -> Result<Audit, String> {
    let mut report = Audit::default();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut last_seq: HashMap<String, u64> = HashMap::new();
    let mut tagged_ids: Vec<&str> = Vec::new();
    for m in stored {
        if !seen.insert(m.id.as_str()) {
            return Err(format!("message {} is stored twice", m.id));
        }
        let Some((writer, seq)) = tagged::decode(m)? else {
            report.untagged += 1;
            continue;
        };
        if let Some(prev) = last_seq.get(&writer) {
            if *prev >= seq {
                return Err(format!(
                    "message {} of writer {writer} comes after its message #{prev}: out of order",
                    m.id
                ));
            }
        }
        last_seq.insert(writer, seq);
        tagged_ids.push(m.id.as_str());
        report.checked += 1;
    }
    let acked_set: HashSet<&str> = acked.iter().map(String::as_str).collect();
    for id in acked {
        if !seen.contains(id.as_str()) {
            return Err(format!("acknowledged message {id} is missing: LOST"));
        }
    }
    report.unacknowledged = tagged_ids
        .into_iter()
        .filter(|id| !acked_set.contains(*id))
        .map(str::to_string)
        .collect();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tagged::message;

    fn ids(ms: &[Message]) -> Vec<String> {
        ms.iter().map(|m| m.id.to_string()).collect()
    }

    #[test]
    fn a_faithful_transcript_passes() {
        let ms = vec![message("a", 0), message("b", 0), message("a", 1)];
        let a = audit(&ms, &ids(&ms)).unwrap();
        assert_eq!(a.checked, 3);
        assert!(a.unacknowledged.is_empty());
    }

    #[test]
    fn every_kind_of_damage_is_caught() {
        let ms = vec![message("a", 0), message("a", 1)];
        // lost
        assert!(audit(&ms[..1], &ids(&ms)).unwrap_err().contains("LOST"));
        // out of order
        let swapped = vec![ms[1].clone(), ms[0].clone()];
        assert!(audit(&swapped, &ids(&ms)).unwrap_err().contains("order"));
        // duplicated
        let dup = vec![ms[0].clone(), ms[0].clone()];
        assert!(audit(&dup, &[]).unwrap_err().contains("twice"));
        // garbled
        let mut bad = ms[0].clone();
        bad.content.push('!');
        assert!(audit(&[bad], &[]).unwrap_err().contains("intact"));
        // present but not acknowledged: reported, not an error
        let a = audit(&ms, &ids(&ms[..1])).unwrap();
        assert_eq!(a.unacknowledged, vec![ms[1].id.to_string()]);
    }
}
