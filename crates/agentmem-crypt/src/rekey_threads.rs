//! Rewriting checkpoint threads under a new key, for [`rekey`](crate::rekey) and
//! [`encrypt_existing`](crate::encrypt_existing): crash-safe and resumable, through the
//! store's own operations only.
//!
//! A thread cannot be rewritten record by record: `put_writes` does not replace an ordinary
//! pending write (index ≥ 0) in place. So each thread `T` is moved out and back through a
//! temporary thread `X` ([`rekey_thread_id`]), with `copy_thread` of the encryption layer,
//! which opens what it reads (old key, or plaintext) and seals what it writes for its target
//! under the new key:
//!
//! 1. *copy*: `X` is emptied, then `T` copied to `X`;
//! 2. *restore*: `T` is deleted, then `X` copied back to `T`;
//! 3. *clean*: `X` is deleted.
//!
//! The step under way is recorded, before its first write, in the store property
//! [`REKEY_PROPERTY`] (compare-and-set, as the marker). During *copy* `T` is untouched; a
//! step moves to *restore* only once `X` holds the whole copy, and to *clean* only once `T`
//! holds it again: at every moment each checkpoint is whole in `T` or in `X`. A run that
//! finds a step recorded resumes it at its first write (a resumed *restore* first checks
//! that `X` opens with its keys, before `T` goes).

use std::sync::Arc;

use agentmem_core::checkpoint::thread_exists;
use agentmem_core::{
    AgentMemory, CheckpointQuery, CheckpointStore, Error, ErrorKind, PropertyChange, Result,
    SessionStore, ThreadId, MAX_THREAD_KEY_BYTES,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::layer::Encrypted;

/// The store property in which a rekey records which checkpoint thread it is rewriting and
/// how far it got (JSON: `{"v":1,"thread":"<id>","phase":"copy"|"restore"|"clean"}`, and
/// `{"v":1}` between threads), so that running the same rekey again after a crash finishes
/// that thread.
pub const REKEY_PROPERTY: &str = "agentmem.encryption.rekey";

/// What the temporary thread ids of a rekey start with: `agentmem.rekey:` and the id of the
/// thread being rewritten (`agentmem.rekey:sha256:<64 hex digits of SHA-256 of the id>` when
/// the two would be longer than a thread id may be). Reserved: applications must not name
/// threads so. A rekey deletes its temporary thread once the thread is back in place.
pub const REKEY_THREAD_PREFIX: &str = "agentmem.rekey:";

/// The temporary thread a rekey moves `thread` through (see [`REKEY_THREAD_PREFIX`]).
///
/// ```
/// let thread: agentmem_core::ThreadId = "user:42/chat".parse()?;
/// let temporary = agentmem_crypt::rekey_thread_id(&thread)?;
/// assert_eq!(temporary.as_str(), "agentmem.rekey:user:42/chat");
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn rekey_thread_id(thread: &ThreadId) -> Result<ThreadId> {
    let id = thread.as_str();
    let text = if REKEY_THREAD_PREFIX.len() + id.len() <= MAX_THREAD_KEY_BYTES {
        format!("{REKEY_THREAD_PREFIX}{id}")
    } else {
        let digest = Sha256::digest(id.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("{REKEY_THREAD_PREFIX}sha256:{hex}")
    };
    // Valid by construction (not empty, no NUL, short enough): a failure would be a bug.
    text.parse()
}

/// How far the rewrite of one thread got (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Phase {
    /// The thread is being copied to its temporary thread.
    Copy,
    /// The temporary thread holds the whole copy; the thread is being rewritten from it.
    Restore,
    /// The thread holds its whole copy again; the temporary thread is being deleted.
    Clean,
}

/// The content of [`REKEY_PROPERTY`].
#[derive(Debug, Serialize, Deserialize)]
struct Progress {
    /// The format: 1.
    v: u32,
    /// The thread being rewritten; none between threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thread: Option<String>,
    /// How far its rewrite got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<Phase>,
}

impl Progress {
    fn to_json(step: Option<(&ThreadId, Phase)>) -> Result<String> {
        let progress = Progress {
            v: 1,
            thread: step.map(|(thread, _)| thread.as_str().to_owned()),
            phase: step.map(|(_, phase)| phase),
        };
        Ok(serde_json::to_string(&progress)?)
    }

    /// The step a stored value records; `CorruptData` when it is not one.
    fn parse(text: &str) -> Result<Option<(ThreadId, Phase)>> {
        let corrupt = || {
            Error::corrupt(format!(
                "the store property `{REKEY_PROPERTY}` is not a rekey's progress"
            ))
        };
        let progress: Progress = serde_json::from_str(text).map_err(|_| corrupt())?;
        match (progress.v, progress.thread, progress.phase) {
            (1, Some(thread), Some(phase)) => {
                let thread = thread.parse().map_err(|_| corrupt())?;
                Ok(Some((thread, phase)))
            }
            (1, None, None) => Ok(None),
            _ => Err(corrupt()),
        }
    }
}

/// What [`rewrite_threads`] rewrote.
#[derive(Debug, Default)]
pub(crate) struct ThreadsRewritten {
    /// Threads rewritten.
    pub(crate) threads: u64,
    /// Checkpoints in them.
    pub(crate) checkpoints: u64,
}

/// Rewrites every checkpoint thread of the store inside `layer` through `layer` (which opens
/// what is stored and seals under the new key): first the one a crashed run left midway,
/// then every thread listed.
pub(crate) async fn rewrite_threads<S: AgentMemory>(
    layer: &Encrypted<Arc<S>>,
) -> Result<ThreadsRewritten> {
    let stored = layer.inner.store_property(REKEY_PROPERTY).await?;
    let midway = stored
        .as_deref()
        .map(Progress::parse)
        .transpose()?
        .flatten();
    let mut rewriter = Rewriter {
        layer,
        progress: stored,
    };
    if let Some((thread, phase)) = midway {
        rewriter.finish(&thread, phase, true).await?;
    }
    let mut done = ThreadsRewritten::default();
    for info in layer.inner.list_threads().await? {
        if let Some(checkpoints) = rewriter.rewrite(&info.thread).await? {
            done.threads += 1;
            done.checkpoints += checkpoints;
        }
    }
    Ok(done)
}

/// Rewrites threads one at a time, keeping [`REKEY_PROPERTY`] up to date.
struct Rewriter<'a, S> {
    layer: &'a Encrypted<Arc<S>>,
    /// The property's value as this run last read or wrote it (what the next
    /// compare-and-set expects).
    progress: Option<String>,
}

impl<S: AgentMemory> Rewriter<'_, S> {
    /// Rewrites `thread`; returns how many checkpoints it holds, or `None` when it held none
    /// any more.
    async fn rewrite(&mut self, thread: &ThreadId) -> Result<Option<u64>> {
        let temporary = rekey_thread_id(thread)?;
        // Only a thread this run made is ever deleted as temporary: a thread under the
        // reserved name that holds a checkpoint is an application's, and stops the rekey.
        if self.holds_checkpoint(&temporary).await? {
            return Err(Error::conflict(format!(
                "{}: thread ids starting with `{REKEY_THREAD_PREFIX}` are reserved for \
                 rekey's temporary threads; move that thread elsewhere and run the rekey again",
                thread_exists(&temporary).message()
            )));
        }
        self.record(Some((thread, Phase::Copy))).await?;
        self.finish(thread, Phase::Copy, false).await
    }

    /// Does the rewrite of `thread` from the start of `phase` on, which the progress property
    /// already records (`resumed`: a previous run recorded it).
    async fn finish(
        &mut self, thread: &ThreadId, phase: Phase, resumed: bool,
    ) -> Result<Option<u64>> {
        let temporary = rekey_thread_id(thread)?;
        let raw = &self.layer.inner;
        if phase == Phase::Copy {
            // A crashed copy may have left part of one.
            raw.delete_thread(&temporary).await?;
            if let Err(e) = self.layer.copy_thread_resealed(thread, &temporary).await {
                if e.kind() != ErrorKind::NotFound {
                    return Err(e);
                }
                // Deleted since it was listed: nothing to rewrite, and `thread` untouched.
                raw.delete_thread(&temporary).await?;
                self.record(None).await?;
                return Ok(None);
            }
            self.record(Some((thread, Phase::Restore))).await?;
        }
        let mut copied = None;
        if phase <= Phase::Restore {
            if resumed && phase == Phase::Restore {
                self.check_copy(thread, &temporary).await?;
            }
            raw.delete_thread(thread).await?;
            copied = Some(self.layer.copy_thread_resealed(&temporary, thread).await?);
            self.record(Some((thread, Phase::Clean))).await?;
        }
        raw.delete_thread(&temporary).await?;
        self.record(None).await?;
        Ok(copied)
    }

    /// Refuses to delete `thread` unless its copy in `temporary` (made by an earlier run)
    /// holds a checkpoint and opens with this run's keys.
    async fn check_copy(&self, thread: &ThreadId, temporary: &ThreadId) -> Result<()> {
        let all = CheckpointQuery::thread(temporary.clone());
        if self.layer.list_opened_checkpoints(&all).await?.is_empty() {
            return Err(Error::corrupt(format!(
                "an interrupted rekey was rewriting checkpoint thread {:?} through the \
                 temporary thread {:?}, which holds nothing: the thread was left as it is",
                thread.as_str(),
                temporary.as_str()
            )));
        }
        Ok(())
    }

    async fn holds_checkpoint(&self, thread: &ThreadId) -> Result<bool> {
        let one = CheckpointQuery {
            limit: Some(1),
            ..CheckpointQuery::thread(thread.clone())
        };
        Ok(!self.layer.inner.list_checkpoints(&one).await?.is_empty())
    }

    /// Records `step` (none: between threads) in the progress property, if it still holds
    /// what this run last recorded; `Conflict` when someone else changed it.
    async fn record(&mut self, step: Option<(&ThreadId, Phase)>) -> Result<()> {
        let value = Progress::to_json(step)?;
        let change = PropertyChange::replace(REKEY_PROPERTY, self.progress.as_deref(), &value);
        if !self.layer.inner.set_store_property(&change).await? {
            return Err(Error::conflict(format!(
                "the store property `{REKEY_PROPERTY}` changed while checkpoints were being \
                 rekeyed: is another rekey running? Run it again when nothing else writes the \
                 store"
            )));
        }
        self.progress = Some(value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_id_holds_the_thread_id_or_its_hash_when_too_long() {
        let short: ThreadId = "user:42/chat ü*".parse().unwrap();
        assert_eq!(
            rekey_thread_id(&short).unwrap().as_str(),
            "agentmem.rekey:user:42/chat ü*"
        );
        let fits: ThreadId = "a"
            .repeat(MAX_THREAD_KEY_BYTES - REKEY_THREAD_PREFIX.len())
            .parse()
            .unwrap();
        assert!(rekey_thread_id(&fits)
            .unwrap()
            .as_str()
            .ends_with(fits.as_str()));
        let long: ThreadId = "a".repeat(MAX_THREAD_KEY_BYTES).parse().unwrap();
        let hashed = rekey_thread_id(&long).unwrap();
        assert!(hashed.as_str().starts_with("agentmem.rekey:sha256:"));
        assert_eq!(hashed.as_str().len(), REKEY_THREAD_PREFIX.len() + 7 + 64);
        let other: ThreadId = "b".repeat(MAX_THREAD_KEY_BYTES).parse().unwrap();
        assert_ne!(rekey_thread_id(&other).unwrap(), hashed);
    }

    #[test]
    fn progress_round_trips_and_anything_else_is_corrupt() {
        let thread: ThreadId = "t \"quoted\"\u{1}".parse().unwrap();
        for phase in [Phase::Copy, Phase::Restore, Phase::Clean] {
            let text = Progress::to_json(Some((&thread, phase))).unwrap();
            assert_eq!(
                Progress::parse(&text).unwrap(),
                Some((thread.clone(), phase))
            );
        }
        assert_eq!(Progress::to_json(None).unwrap(), r#"{"v":1}"#);
        assert_eq!(Progress::parse(r#"{"v":1}"#).unwrap(), None);
        for bad in [
            "",
            "{}",
            r#"{"v":2}"#,
            r#"{"v":1,"thread":"t"}"#,
            r#"{"v":1,"thread":"t","phase":"later"}"#,
            r#"{"v":1,"thread":"","phase":"copy"}"#,
        ] {
            let err = Progress::parse(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::CorruptData, "{bad}");
        }
    }
}
