//! After a turn ([`Agent::after_turn`]): the conversation's new messages appended to the
//! history and auto-save sessions (or saved whole through a [`ContextStore`]), the sessions
//! labelled, and the facts and insights of new user messages stored.

use std::collections::HashSet;

use agentmem_core::{
    ContextStore, ErrorKind, MemoryStore, Message, MessageId, Metadata, Operation, Result, Role,
    SessionId, SessionPatch, SessionStore,
};

use crate::auto_memory::extract_facts;
use crate::learning::{detect_insights, insight_id, record};

use super::{Agent, Memory, TurnReport};

impl Agent {
    /// After messages were appended to `session`: sets its expiry [`session_ttl`]
    /// (AgentConfig::session_ttl) ahead, and its owner the first time, in one update.
    async fn label_written(&self, session: &SessionId) -> Result<()> {
        let mut patch = SessionPatch::default();
        if let Some(ttl) = self.config.session_ttl {
            patch = patch.expire_in(ttl);
        }
        let owner = self.config.owner.as_ref();
        let unowned = owner.is_some() && !self.state().owned.contains(session);
        if let (Some(owner), true) = (owner, unowned) {
            patch = patch.owner(owner.clone());
        }
        if patch.is_empty() {
            return Ok(());
        }
        match self
            .full(Operation::UpdateSession)?
            .update_session(session, &patch)
            .await
        {
            Ok(_) => {}
            // Labelling the owner is a courtesy to lookups: a store without labels still
            // saves the turn. An expiry asked for is not optional.
            Err(e) if e.kind() == ErrorKind::Unsupported && self.config.session_ttl.is_none() => {
                return Ok(())
            }
            Err(e) => return Err(e),
        }
        if unowned {
            self.state().owned.insert(session.clone());
        }
        Ok(())
    }

    /// Runs after a turn on the whole `conversation` so far:
    ///
    /// 1. with history on, appends to the history session every message not stored there yet
    ///    (by id; system messages are never saved, since the prompt is rebuilt each run);
    /// 2. with auto-save, does the same for the auto-save session: appending, never
    ///    rewriting. The first call reads each session once to learn which ids it holds,
    ///    never whole (a turn costs the same on a session of any length): it reads the newest
    ///    messages, as many as `conversation` has to save, and twice as many again while a
    ///    message of `conversation` not found there precedes one found (so a conversation
    ///    resumed from the session is recognised even when other writers appended after it).
    ///    A message of `conversation` stored only further back than that window (none of the
    ///    conversation's stored messages being among the session's newest) is taken as new
    ///    and appended again;
    /// 3. with auto-memory, stores the facts found in new user messages;
    /// 4. with learning, records the insights found in new user messages.
    ///
    /// Concurrent calls on one `Agent` never store a message twice (ids are claimed before
    /// appending), but their appends may land in either order: call it once per turn, as an
    /// agent loop does, when the stored order must follow the conversation.
    ///
    /// On a store built [`with_context_store`](Self::with_context_store), saves the
    /// conversation without its system messages through `save_session` instead, as the history
    /// session and the auto-save session; a session whose last save held exactly these
    /// messages is not saved again.
    pub async fn after_turn(&self, conversation: &[Message]) -> Result<TurnReport> {
        let mut report = TurnReport::default();
        let mut sessions: Vec<SessionId> = Vec::new();
        if self.config.history || self.store().is_none() {
            sessions.extend(self.history_session.clone());
        }
        if let Some(auto) = &self.auto_save_session {
            if !sessions.contains(auto) {
                sessions.push(auto.clone());
            }
        }
        for session in &sessions {
            report.saved += match &self.memory {
                Memory::Protocol(store) => self.save_whole(&**store, session, conversation).await?,
                Memory::Store(_) => self.save_new(session, conversation).await?,
            };
        }
        if self.config.auto_memory || self.config.learn {
            let fresh: Vec<&Message> = {
                let mut state = self.state();
                conversation
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .filter(|m| state.processed.insert(m.id.clone()))
                    .collect()
            };
            for message in fresh {
                if self.config.auto_memory {
                    for fact in extract_facts(&message.content) {
                        let item = fact
                            .to_memory_item()
                            .in_scope(self.memory_scope.clone())
                            .with_metadata("message_id", message.id.clone());
                        self.full(Operation::PutMemory)?
                            .put_memory(&self.with_ttl(item))
                            .await?;
                        report.facts.push(fact);
                    }
                }
                if self.config.learn {
                    for insight in detect_insights(&message.content) {
                        let id = insight_id(&self.memory_scope, &insight.key);
                        let existing = self.full(Operation::GetMemory)?.get_memory(&id).await?;
                        if let Some(item) =
                            record(&insight, &self.memory_scope, &message.id, existing)
                        {
                            self.full(Operation::PutMemory)?
                                .put_memory(&self.with_ttl(item))
                                .await?;
                            report.insights.push(insight);
                        }
                    }
                }
            }
        }
        Ok(report)
    }

    /// Appends the messages of `conversation` that `session` does not hold yet.
    async fn save_new(&self, session: &SessionId, conversation: &[Message]) -> Result<usize> {
        let _in_order = self.save_order.lock().await;
        let known = self.state().stored.contains_key(session);
        if !known {
            // Read the session once: the conversation may hold messages an earlier run saved.
            let ids = self.stored_tail(session, conversation).await?;
            let mut state = self.state();
            state.processed.extend(ids.iter().cloned());
            state.stored.entry(session.clone()).or_default().extend(ids);
        }
        // Claim the new ids before the await, so a concurrent call cannot append them too;
        // they are released again if the append fails.
        let new: Vec<Message> = {
            let mut state = self.state();
            let stored = state.stored.entry(session.clone()).or_default();
            conversation
                .iter()
                .filter(|m| m.role != Role::System)
                .filter(|m| stored.insert(m.id.clone()))
                .cloned()
                .collect()
        };
        if new.is_empty() {
            return Ok(0);
        }
        if let Err(e) = self.full(Operation::Append)?.append(session, &new).await {
            let mut state = self.state();
            if let Some(stored) = state.stored.get_mut(session) {
                for m in &new {
                    stored.remove(&m.id);
                }
            }
            return Err(e);
        }
        self.label_written(session).await?;
        Ok(new.len())
    }

    /// The ids of the newest messages of `session`, enough of them to hold every message of
    /// `conversation` it stored (see [`after_turn`](Self::after_turn)), never a whole load of
    /// a session longer than that: first as many as the conversation has messages to save,
    /// then twice as many each time a message not found precedes, in the conversation, one
    /// found (the conversation's stored part reaches further back than the window).
    async fn stored_tail(
        &self, session: &SessionId, conversation: &[Message],
    ) -> Result<HashSet<MessageId>> {
        let saved: Vec<&Message> = conversation
            .iter()
            .filter(|m| m.role != Role::System)
            .collect();
        let mut limit = saved.len().max(1);
        loop {
            let Some(stored) = self
                .full(Operation::Load)?
                .load(session, Some(limit))
                .await?
            else {
                return Ok(HashSet::new());
            };
            let ids: HashSet<MessageId> = stored.messages.into_iter().map(|m| m.id).collect();
            // A window as long as the session is the whole session: nothing is further back.
            let whole = u64::try_from(limit).map_or(true, |l| l >= stored.total_messages);
            let last_found = saved.iter().rposition(|m| ids.contains(&m.id));
            let gap =
                last_found.is_some_and(|last| saved[..last].iter().any(|m| !ids.contains(&m.id)));
            if whole || !gap {
                return Ok(ids);
            }
            limit = limit.saturating_mul(2);
        }
    }

    /// Saves `conversation` without its system messages as `session` through `store`, unless
    /// the last save of `session` held the same messages; returns how many are new since then.
    async fn save_whole(
        &self, store: &dyn ContextStore, session: &SessionId, conversation: &[Message],
    ) -> Result<usize> {
        let _in_order = self.save_order.lock().await;
        let history: Vec<Message> = conversation
            .iter()
            .filter(|m| m.role != Role::System)
            .cloned()
            .collect();
        let ids: Vec<MessageId> = history.iter().map(|m| m.id.clone()).collect();
        let new = match self.state().saved_whole.get(session) {
            Some(last) if *last == ids => return Ok(0),
            Some(last) => ids.iter().filter(|id| !last.contains(id)).count(),
            None => ids.len(),
        };
        let mut metadata = Metadata::new();
        if let Some(name) = &self.name {
            metadata.insert("agent".to_string(), name.clone().into());
        }
        store.save_session(session, &history, &metadata).await?;
        self.state().saved_whole.insert(session.clone(), ids);
        Ok(new)
    }
}
