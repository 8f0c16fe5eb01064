//! What a session carries besides its messages, and the operations on a whole session's life:
//! labels for lookup ([`SessionLabels`], [`SessionQuery`]), changes to them and to the expiry
//! time ([`SessionPatch`]), and where a rewind stops ([`Rewind`]).
//!
//! Labels are lookup keys: a store may index them, so they are kept as given (the encryption
//! layer does not encrypt them; keep secrets in session metadata or messages).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::SessionInfo;
use crate::name::{MessageId, SessionId};

/// The longest title, owner, tag key or tag value, in bytes.
pub const MAX_LABEL_BYTES: usize = 1024;
/// The most tags one session may carry.
pub const MAX_TAGS: usize = 64;
/// The largest page [`SessionQuery::limit`] may ask for.
pub const MAX_PAGE: usize = 10_000;

/// A session's title, owner and tags: what sessions are looked up by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLabels {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The end user the session belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `key=value` tags, at most one value per key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

impl SessionLabels {
    /// Whether no label is set.
    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.owner.is_none() && self.tags.is_empty()
    }

    /// Checks the sizes and characters of every label (see [`check_label`]) and the tag count.
    pub fn validate(&self) -> Result<()> {
        if let Some(title) = &self.title {
            check_label("title", title)?;
        }
        if let Some(owner) = &self.owner {
            check_label("owner", owner)?;
        }
        if self.tags.len() > MAX_TAGS {
            return Err(Error::invalid_input(format!(
                "a session may carry at most {MAX_TAGS} tags, not {}",
                self.tags.len()
            )));
        }
        for (key, value) in &self.tags {
            check_tag_key(key)?;
            check_label("tag value", value)?;
        }
        Ok(())
    }
}

/// Checks one label: at most [`MAX_LABEL_BYTES`] bytes, no control characters (they would
/// corrupt line-based listings and terminals).
pub fn check_label(what: &str, value: &str) -> Result<()> {
    if value.len() > MAX_LABEL_BYTES {
        return Err(Error::invalid_input(format!(
            "{what} is {} bytes; the limit is {MAX_LABEL_BYTES}",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid_input(format!(
            "{what} contains a control character"
        )));
    }
    Ok(())
}

/// Checks a tag key: a label that is not empty and holds no `=` (the CLI writes tags `k=v`).
pub fn check_tag_key(key: &str) -> Result<()> {
    check_label("tag key", key)?;
    if key.is_empty() || key.contains('=') {
        return Err(Error::invalid_input(format!(
            "tag key {key:?} must be non-empty and must not contain '='"
        )));
    }
    Ok(())
}

/// A change to a session's labels and expiry, applied atomically by
/// [`SessionStore::update_session`](crate::SessionStore::update_session). Fields left `None`
/// (and tags not named) stay as they are.
///
/// ```
/// use std::time::Duration;
/// use agentmem_core::SessionPatch;
/// let patch = SessionPatch::default()
///     .title("Trip to Kyoto")
///     .owner("ada")
///     .tag("project", "kyoto")
///     .expire_in(Duration::from_secs(7 * 86_400));
/// assert!(patch.validate().is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPatch {
    /// `Some(Some(t))` sets the title, `Some(None)` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    /// `Some(Some(o))` sets the owner, `Some(None)` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Option<String>>,
    /// Each key set to `Some(value)`, or removed with `None`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, Option<String>>,
    /// `Some(Some(t))`: the session expires at `t`; `Some(None)`: it never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Option<DateTime<Utc>>>,
}

impl SessionPatch {
    crate::setters! {
        /// Sets the title.
        pub fn title(title: impl Into<String>) { self.title = Some(Some(title.into())) }

        /// Sets the owner.
        pub fn owner(owner: impl Into<String>) { self.owner = Some(Some(owner.into())) }
    }

    /// Sets tag `key` to `value`.
    pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.insert(key.into(), Some(value.into()));
        self
    }

    /// Removes tag `key`.
    pub fn untag(mut self, key: impl Into<String>) -> Self {
        self.tags.insert(key.into(), None);
        self
    }

    /// Makes the session expire at `at`.
    pub fn expire_at(mut self, at: DateTime<Utc>) -> Self {
        self.expires_at = Some(Some(at));
        self
    }

    /// Makes the session expire `ttl` from now (saturating at the latest representable time).
    pub fn expire_in(self, ttl: Duration) -> Self {
        self.expire_at(expiry_after(ttl))
    }

    /// Makes the session never expire.
    pub fn persist(mut self) -> Self {
        self.expires_at = Some(None);
        self
    }

    /// The patch that turns labels `have` into `want`, naming only what differs (an empty
    /// patch when they are equal); the expiry is left alone. For copying labels from one
    /// session to another (a fork, a migration).
    ///
    /// ```
    /// use agentmem_core::{SessionLabels, SessionPatch};
    /// let want = SessionLabels { owner: Some("ada".into()), ..SessionLabels::default() };
    /// let patch = SessionPatch::between(&SessionLabels::default(), &want);
    /// assert_eq!(patch, SessionPatch::default().owner("ada"));
    /// assert!(SessionPatch::between(&want, &want).is_empty());
    /// ```
    pub fn between(have: &SessionLabels, want: &SessionLabels) -> Self {
        let changed = |a: &Option<String>, b: &Option<String>| (a != b).then(|| b.clone());
        let mut tags: BTreeMap<String, Option<String>> = have
            .tags
            .keys()
            .filter(|key| !want.tags.contains_key(*key))
            .map(|key| (key.clone(), None))
            .collect();
        tags.extend(
            want.tags
                .iter()
                .filter(|(key, value)| have.tags.get(*key) != Some(*value))
                .map(|(key, value)| (key.clone(), Some(value.clone()))),
        );
        SessionPatch {
            title: changed(&have.title, &want.title),
            owner: changed(&have.owner, &want.owner),
            tags,
            expires_at: None,
        }
    }

    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.owner.is_none()
            && self.tags.is_empty()
            && self.expires_at.is_none()
    }

    /// Checks every label the patch sets (the resulting tag count is checked by
    /// [`apply`](Self::apply)).
    pub fn validate(&self) -> Result<()> {
        if let Some(Some(title)) = &self.title {
            check_label("title", title)?;
        }
        if let Some(Some(owner)) = &self.owner {
            check_label("owner", owner)?;
        }
        for (key, value) in &self.tags {
            check_tag_key(key)?;
            if let Some(value) = value {
                check_label("tag value", value)?;
            }
        }
        Ok(())
    }

    /// Applies the patch to a session's labels and expiry, as a backend that reads, changes and
    /// writes them back under one lock does. Fails (changing nothing) when the result would
    /// carry more than [`MAX_TAGS`] tags.
    pub fn apply(
        &self, labels: &mut SessionLabels, expires_at: &mut Option<DateTime<Utc>>,
    ) -> Result<()> {
        let mut next = labels.clone();
        if let Some(title) = &self.title {
            next.title.clone_from(title);
        }
        if let Some(owner) = &self.owner {
            next.owner.clone_from(owner);
        }
        for (key, value) in &self.tags {
            match value {
                Some(value) => next.tags.insert(key.clone(), value.clone()),
                None => next.tags.remove(key),
            };
        }
        next.validate()?;
        *labels = next;
        if let Some(at) = self.expires_at {
            *expires_at = at;
        }
        Ok(())
    }
}

/// The time `ttl` from now, truncated to microseconds (saturating far in the future).
pub fn expiry_after(ttl: Duration) -> DateTime<Utc> {
    let now = crate::model::now();
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|ttl| now.checked_add_signed(ttl))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .min(far_future())
}

/// The latest expiry a store is asked to keep: year 9999 (every backend can store it).
fn far_future() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Which sessions to list: every filter set must match; ordered by id, one page at a time.
///
/// ```
/// use agentmem_core::SessionQuery;
/// let query = SessionQuery::default().owner("ada").tag("project", "kyoto").limit(50);
/// assert!(query.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionQuery {
    /// Only sessions of this owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Only sessions carrying every one of these tags with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// Only sessions written at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_since: Option<DateTime<Utc>>,
    /// Only sessions last written before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_before: Option<DateTime<Utc>>,
    /// The cursor: only sessions whose id sorts after this one (the previous page's
    /// [`SessionPage::next`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<SessionId>,
    /// At most this many sessions a page (1 to [`MAX_PAGE`]).
    pub limit: usize,
}

impl Default for SessionQuery {
    fn default() -> Self {
        SessionQuery {
            owner: None,
            tags: BTreeMap::new(),
            updated_since: None,
            updated_before: None,
            after: None,
            limit: 100,
        }
    }
}

impl SessionQuery {
    /// Only sessions of `owner`.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Only sessions tagged `key=value` (with the other tags asked for).
    pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.insert(key.into(), value.into());
        self
    }

    crate::setters! {
        /// At most `limit` sessions a page.
        pub fn limit(limit: usize) { self.limit = limit }

        /// The page after the one that ended with `cursor`.
        pub fn after(cursor: SessionId) { self.after = Some(cursor) }
    }

    /// Checks the limit and labels.
    pub fn validate(&self) -> Result<()> {
        if self.limit == 0 || self.limit > MAX_PAGE {
            return Err(Error::invalid_input(format!(
                "a session page holds 1 to {MAX_PAGE} sessions, not {}",
                self.limit
            )));
        }
        if let Some(owner) = &self.owner {
            check_label("owner", owner)?;
        }
        for (key, value) in &self.tags {
            check_tag_key(key)?;
            check_label("tag value", value)?;
        }
        Ok(())
    }

    /// Whether `info` passes every filter, the cursor included (for backends that filter in
    /// the client). Expiry is the backend's to check.
    pub fn matches(&self, info: &SessionInfo) -> bool {
        self.after.as_ref().is_none_or(|after| info.id > *after)
            && self
                .owner
                .as_ref()
                .is_none_or(|owner| info.labels.owner.as_ref() == Some(owner))
            && self
                .tags
                .iter()
                .all(|(key, value)| info.labels.tags.get(key) == Some(value))
            && self.updated_since.is_none_or(|t| info.updated_at >= t)
            && self.updated_before.is_none_or(|t| info.updated_at < t)
    }

    /// Cuts `matching` (every session passing the filters, sorted by id) to one page.
    pub fn page(&self, mut matching: Vec<SessionInfo>) -> SessionPage {
        if matching.len() > self.limit {
            matching.truncate(self.limit);
            let next = matching.last().map(|info| info.id.clone());
            SessionPage {
                sessions: matching,
                next,
            }
        } else {
            SessionPage {
                sessions: matching,
                next: None,
            }
        }
    }
}

/// One page of sessions, ordered by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionPage {
    /// The sessions of this page.
    pub sessions: Vec<SessionInfo>,
    /// The cursor for the next page ([`SessionQuery::after`]); `None` on the last page.
    pub next: Option<SessionId>,
}

/// Where [`SessionStore::rewind`](crate::SessionStore::rewind) stops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Rewind {
    /// Remove the last `n` messages (all of them when the session holds fewer).
    Last(usize),
    /// Remove every message after this one, keeping it.
    After(MessageId),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> SessionInfo {
        SessionInfo {
            id: id.parse().expect("id"),
            message_count: 0,
            created_at: crate::now(),
            updated_at: crate::now(),
            labels: SessionLabels::default(),
            expires_at: None,
        }
    }

    #[test]
    fn patches_set_and_remove_labels_and_expiry() {
        let mut labels = SessionLabels::default();
        let mut expires = None;
        let at = crate::now();
        SessionPatch::default()
            .title("t")
            .owner("ada")
            .tag("a", "1")
            .tag("b", "2")
            .expire_at(at)
            .apply(&mut labels, &mut expires)
            .expect("apply");
        assert_eq!(labels.title.as_deref(), Some("t"));
        assert_eq!(labels.owner.as_deref(), Some("ada"));
        assert_eq!(labels.tags.len(), 2);
        assert_eq!(expires, Some(at));
        let mut patch = SessionPatch::default().untag("a").persist();
        patch.owner = Some(None);
        patch.apply(&mut labels, &mut expires).expect("apply");
        assert_eq!(labels.owner, None);
        assert_eq!(labels.title.as_deref(), Some("t"));
        assert_eq!(labels.tags.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(expires, None);
    }

    #[test]
    fn a_patch_between_labels_turns_one_into_the_other() {
        let mut have = SessionLabels {
            title: Some("old".into()),
            owner: Some("ada".into()),
            ..SessionLabels::default()
        };
        have.tags.insert("keep".into(), "1".into());
        have.tags.insert("change".into(), "a".into());
        have.tags.insert("drop".into(), "x".into());
        let mut want = have.clone();
        want.title = None;
        want.tags.remove("drop");
        want.tags.insert("change".into(), "b".into());
        want.tags.insert("new".into(), "n".into());
        let patch = SessionPatch::between(&have, &want);
        assert_eq!(patch.owner, None, "an unchanged owner is not named");
        assert_eq!(
            patch.tags.len(),
            3,
            "only changed tags are named: {patch:?}"
        );
        let mut labels = have.clone();
        let mut expires = None;
        patch.apply(&mut labels, &mut expires).expect("apply");
        assert_eq!(labels, want);
    }

    #[test]
    fn too_many_tags_change_nothing() {
        let mut labels = SessionLabels::default();
        let mut expires = None;
        let mut patch = SessionPatch::default().title("kept out");
        for i in 0..=MAX_TAGS {
            patch = patch.tag(format!("k{i}"), "v");
        }
        assert!(patch.validate().is_ok());
        assert!(patch.apply(&mut labels, &mut expires).is_err());
        assert!(labels.is_empty());
    }

    #[test]
    fn bad_labels_are_refused() {
        for patch in [
            SessionPatch::default().tag("", "v"),
            SessionPatch::default().tag("a=b", "v"),
            SessionPatch::default().title("line\nbreak"),
            SessionPatch::default().owner("x".repeat(MAX_LABEL_BYTES + 1)),
        ] {
            assert!(patch.validate().is_err(), "{patch:?}");
        }
        assert!(SessionQuery::default().limit(0).validate().is_err());
        assert!(SessionQuery::default()
            .limit(MAX_PAGE + 1)
            .validate()
            .is_err());
    }

    #[test]
    fn queries_filter_and_page_by_id() {
        let mut a = info("a");
        a.labels.owner = Some("ada".into());
        a.labels.tags.insert("p".into(), "k".into());
        let b = info("b");
        let mut c = info("c");
        c.labels.owner = Some("ada".into());
        let query = SessionQuery::default().owner("ada");
        assert!(query.matches(&a) && !query.matches(&b) && query.matches(&c));
        assert!(!SessionQuery::default().tag("p", "x").matches(&a));
        assert!(SessionQuery::default().tag("p", "k").matches(&a));
        let page = query.clone().limit(1).page(vec![a.clone(), c.clone()]);
        assert_eq!(page.sessions, vec![a.clone()]);
        assert_eq!(page.next.as_ref().map(SessionId::as_str), Some("a"));
        let rest = query.limit(1).after(page.next.expect("next"));
        assert!(!rest.matches(&a) && rest.matches(&c));
        assert_eq!(rest.page(vec![c.clone()]).next, None);
    }

    #[test]
    fn expiry_saturates() {
        assert!(expiry_after(Duration::MAX) <= far_future());
        assert!(expiry_after(Duration::from_secs(1)) > crate::now());
    }
}
