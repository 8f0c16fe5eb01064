//! Whose memory an item is: [`MemoryScope`] (agent, workspace, owner), and which scopes a
//! listing or search reads ([`ScopeFilter`]).
//!
//! Memory items are kept apart like histories: two agents sharing a store, or one agent in
//! two projects, each keep their own facts (a key such as `name` is unique per scope and
//! kind, not per store). An item whose scope leaves a part unset is shared along that part:
//! the global scope (nothing set) is visible to everyone, an item scoped to the agent `alice`
//! alone is visible to `alice` in every workspace.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::name::validate_name;

/// The scope of a memory item: the agent, workspace and owner (end user) it belongs to.
/// Each part is optional; [`MemoryScope::global`] sets none. Each part follows the naming
/// rules of [`validate_name`], so the [stored form](Self::stored_form) is unambiguous and
/// safe in every backend's keys.
///
/// ```
/// use agentmem_core::MemoryScope;
/// let alice = MemoryScope::agent("alice").with_workspace("git-1a2b");
/// assert!(alice.sees(&MemoryScope::global()));
/// assert!(alice.sees(&MemoryScope::agent("alice")));
/// assert!(!alice.sees(&MemoryScope::agent("bob")));
/// assert!(!MemoryScope::agent("alice").sees(&alice), "another workspace's items stay there");
/// assert_eq!(alice.stored_form(), "agent:alice/workspace:git-1a2b");
/// assert_eq!(MemoryScope::from_stored_form(&alice.stored_form())?, alice);
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemoryScope {
    /// The agent the item belongs to (every agent's when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The workspace (project) it belongs to (every workspace's when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The end user it belongs to (every user's when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// The parts of a scope in stored order, with their tags.
const PARTS: [&str; 3] = ["agent", "workspace", "owner"];

impl MemoryScope {
    /// The global scope: shared by every agent, workspace and owner.
    pub fn global() -> Self {
        MemoryScope::default()
    }

    /// The scope of one agent (in every workspace, for every owner).
    pub fn agent(name: impl Into<String>) -> Self {
        MemoryScope::global().with_agent(name)
    }

    crate::setters! {
        /// Sets the agent.
        pub fn with_agent(name: impl Into<String>) { self.agent = Some(name.into()) }

        /// Sets the workspace.
        pub fn with_workspace(workspace: impl Into<String>) { self.workspace = Some(workspace.into()) }

        /// Sets the owner.
        pub fn with_owner(owner: impl Into<String>) { self.owner = Some(owner.into()) }
    }

    /// Whether no part is set.
    pub fn is_global(&self) -> bool {
        self.parts().iter().all(Option::is_none)
    }

    fn parts(&self) -> [Option<&str>; 3] {
        [
            self.agent.as_deref(),
            self.workspace.as_deref(),
            self.owner.as_deref(),
        ]
    }

    fn from_parts(parts: [Option<String>; 3]) -> Self {
        let [agent, workspace, owner] = parts;
        MemoryScope {
            agent,
            workspace,
            owner,
        }
    }

    /// Checks each part set against the naming rules (`InvalidInput` naming the part).
    pub fn validate(&self) -> Result<()> {
        for (tag, part) in PARTS.iter().zip(self.parts()) {
            if let Some(value) = part {
                validate_name(&format!("memory scope {tag}"), value)?;
            }
        }
        Ok(())
    }

    /// Whether an item in `item_scope` is visible from this scope: every part the item sets
    /// is this scope's. The global scope is visible from everywhere.
    pub fn sees(&self, item_scope: &MemoryScope) -> bool {
        self.parts()
            .iter()
            .zip(item_scope.parts())
            .all(|(mine, theirs)| theirs.is_none() || theirs == *mine)
    }

    /// The form backends store and index: `""` for the global scope, else the parts set as
    /// `tag:value`, joined by `/`, in the order agent, workspace, owner. Valid names hold
    /// neither `:` nor `/`, so distinct scopes never share a stored form.
    pub fn stored_form(&self) -> String {
        let mut out = String::new();
        for (tag, part) in PARTS.iter().zip(self.parts()) {
            if let Some(value) = part {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(tag);
                out.push(':');
                out.push_str(value);
            }
        }
        out
    }

    /// Reads a [stored form](Self::stored_form) back; `CorruptData` when it is not one.
    pub fn from_stored_form(stored: &str) -> Result<Self> {
        let corrupt = || Error::corrupt(format!("unreadable memory scope {stored:?}"));
        let mut parts: [Option<String>; 3] = Default::default();
        let mut next = 0;
        for piece in stored.split('/').filter(|_| !stored.is_empty()) {
            let (tag, value) = piece.split_once(':').ok_or_else(corrupt)?;
            let index = PARTS[next..]
                .iter()
                .position(|t| *t == tag)
                .ok_or_else(corrupt)?
                + next;
            parts[index] = Some(value.to_string());
            next = index + 1;
        }
        let scope = MemoryScope::from_parts(parts);
        scope.validate().map_err(|_| corrupt())?;
        Ok(scope)
    }

    /// The stored forms of every scope visible from this one (see [`sees`](Self::sees)):
    /// each subset of the parts set, at most eight, this scope's own first.
    pub fn visible_stored_forms(&self) -> Vec<String> {
        let parts = self.parts();
        let mut forms: Vec<String> = Vec::with_capacity(8);
        for mask in (0u8..8).rev() {
            let subset = std::array::from_fn(|i| {
                parts[i]
                    .filter(|_| mask & (1 << i) != 0)
                    .map(str::to_string)
            });
            let form = MemoryScope::from_parts(subset).stored_form();
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        forms
    }
}

impl fmt::Display for MemoryScope {
    /// `global`, or the [stored form](Self::stored_form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_global() {
            f.write_str("global")
        } else {
            f.write_str(&self.stored_form())
        }
    }
}

/// Which scopes a memory listing or search reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeFilter {
    /// Every scope (an administrator's view of the whole store).
    #[default]
    All,
    /// Items of exactly this scope.
    Exactly(MemoryScope),
    /// Items visible from this scope (see [`MemoryScope::sees`]): what an agent in it reads.
    VisibleFrom(MemoryScope),
}

impl ScopeFilter {
    /// Whether an item in `scope` passes.
    pub fn matches(&self, scope: &MemoryScope) -> bool {
        match self {
            ScopeFilter::All => true,
            ScopeFilter::Exactly(wanted) => wanted == scope,
            ScopeFilter::VisibleFrom(viewer) => viewer.sees(scope),
        }
    }

    /// The stored forms an item's scope must have to pass; `None` for [`ScopeFilter::All`].
    /// Backends that index the stored form select with these (`scope IN (…)`).
    pub fn stored_forms(&self) -> Option<Vec<String>> {
        match self {
            ScopeFilter::All => None,
            ScopeFilter::Exactly(scope) => Some(vec![scope.stored_form()]),
            ScopeFilter::VisibleFrom(scope) => Some(scope.visible_stored_forms()),
        }
    }

    /// Checks the scope given (see [`MemoryScope::validate`]).
    pub fn validate(&self) -> Result<()> {
        match self {
            ScopeFilter::All => Ok(()),
            ScopeFilter::Exactly(scope) | ScopeFilter::VisibleFrom(scope) => scope.validate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> MemoryScope {
        MemoryScope::agent("alice")
            .with_workspace("git-abc")
            .with_owner("ada@example.com")
    }

    #[test]
    fn stored_forms_round_trip_and_stay_distinct() {
        let scopes = [
            MemoryScope::global(),
            MemoryScope::agent("alice"),
            MemoryScope::global().with_workspace("alice"),
            MemoryScope::global().with_owner("alice"),
            full(),
        ];
        let forms: Vec<String> = scopes.iter().map(MemoryScope::stored_form).collect();
        for (scope, form) in scopes.iter().zip(&forms) {
            assert_eq!(&MemoryScope::from_stored_form(form).unwrap(), scope);
            assert_eq!(forms.iter().filter(|f| *f == form).count(), 1, "{form}");
        }
        assert_eq!(forms[0], "");
        for bad in [
            "agent",
            "x:y",
            "workspace:a/agent:b",
            "agent:a/agent:b",
            "agent:",
            "agent:a b/",
        ] {
            assert!(MemoryScope::from_stored_form(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn visibility_follows_the_parts_set() {
        let scope = full();
        let forms = scope.visible_stored_forms();
        assert_eq!(forms.len(), 8);
        assert_eq!(forms[0], scope.stored_form());
        for form in &forms {
            assert!(scope.sees(&MemoryScope::from_stored_form(form).unwrap()));
        }
        assert!(!scope.sees(&MemoryScope::agent("bob")));
        assert!(!scope.sees(&full().with_owner("someone-else")));
        assert_eq!(MemoryScope::global().visible_stored_forms(), [""]);
        assert_eq!(
            MemoryScope::agent("a").visible_stored_forms(),
            ["agent:a", ""]
        );
    }

    #[test]
    fn filters_match_as_their_forms_select() {
        let items = [
            MemoryScope::global(),
            MemoryScope::agent("alice"),
            full(),
            MemoryScope::agent("bob"),
        ];
        for filter in [
            ScopeFilter::All,
            ScopeFilter::Exactly(MemoryScope::agent("alice")),
            ScopeFilter::VisibleFrom(full()),
        ] {
            for item in &items {
                let by_form = filter
                    .stored_forms()
                    .is_none_or(|forms| forms.contains(&item.stored_form()));
                assert_eq!(filter.matches(item), by_form, "{filter:?} {item}");
            }
        }
        assert!(ScopeFilter::Exactly(MemoryScope::agent("a:b"))
            .validate()
            .is_err());
    }
}
