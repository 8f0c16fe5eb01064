//! Exporting a conversation to JSON or YAML and loading it back.
//!
//! The shape is Swarms' JSON export: a bare list of messages, each
//! `{role, content, timestamp, message_id, …}`. agentmem adds `tool_call_id`, `tool_name` and
//! `metadata` when present, so its own exports round-trip exactly; Swarms exports (capitalized
//! roles, naive local times, no ids, non-string content) load too; a naive time is read in the
//! local zone, as Swarms writes it (see `agentmem_formats::time::parse_iso_time_in`).

use std::path::{Path, PathBuf};

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};

use agentmem_core::{now, Error, Message, MessageId, Metadata, Result, Role};
use agentmem_formats::time::parse_iso_time_in;

use crate::conversation::Conversation;

/// The file formats a conversation exports to and loads from.
///
/// The format is picked by the file's extension, in any case:
///
/// ```
/// use std::path::Path;
/// use agentmem_conversation::ExportFormat;
///
/// assert_eq!(ExportFormat::from_path(Path::new("chat.json"))?, ExportFormat::Json);
/// assert_eq!(ExportFormat::from_path(Path::new("chat.YML"))?, ExportFormat::Yaml);
/// assert!(ExportFormat::from_path(Path::new("chat.txt")).is_err());
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// JSON (`.json`), a bare list of messages.
    Json,
    /// YAML (`.yaml` or `.yml`), the same list.
    Yaml,
}

impl ExportFormat {
    /// The format a path's extension names; `InvalidInput` for any other extension.
    pub fn from_path(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("json") => Ok(ExportFormat::Json),
            Some("yaml" | "yml") => Ok(ExportFormat::Yaml),
            _ => Err(Error::invalid_input(format!(
                "{}: unknown conversation file type; use a .json, .yaml or .yml file",
                path.display()
            ))),
        }
    }
}

/// One exported message, in Swarms' field names.
#[derive(Debug, Serialize, Deserialize)]
struct Exported {
    role: Role,
    /// Swarms allows any JSON as content; anything but a string is kept as its JSON text.
    content: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_id: Option<MessageId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    metadata: Metadata,
}

impl From<&Message> for Exported {
    fn from(m: &Message) -> Self {
        Exported {
            role: m.role.clone(),
            content: serde_json::Value::String(m.content.clone()),
            timestamp: Some(m.timestamp.to_rfc3339_opts(SecondsFormat::Micros, true)),
            message_id: Some(m.id.clone()),
            tool_call_id: m.tool_call_id.clone(),
            tool_name: m.tool_name.clone(),
            metadata: m.metadata.clone(),
        }
    }
}

impl Exported {
    /// The message; `index` (0-based) names the entry in errors.
    fn into_message(self, index: usize) -> Result<Message> {
        let content = match self.content {
            serde_json::Value::String(s) => s,
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        let mut m = Message::new(self.role, content);
        if let Some(id) = self.message_id {
            m.id = id;
        }
        if let Some(t) = self.timestamp {
            let time = parse_iso_time_in(&t, &chrono::Local).ok_or_else(|| {
                Error::corrupt(format!(
                    "message {}: timestamp {t:?} is not an ISO time",
                    index + 1
                ))
            })?;
            m = m.with_timestamp(time);
        } else {
            m.timestamp = now();
        }
        m.tool_call_id = self.tool_call_id;
        m.tool_name = self.tool_name;
        m.metadata = self.metadata;
        m.validate()
            .map_err(|e| Error::corrupt(format!("message {}: {}", index + 1, e.message())))?;
        Ok(m)
    }
}

/// `messages` as JSON text: a pretty-printed bare list.
///
/// ```
/// use agentmem_conversation::export::messages_to_json;
/// use agentmem_core::Message;
/// use chrono::{TimeZone, Utc};
///
/// let time = Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, 4).unwrap();
/// let hi = Message::user("Hi").with_id("m1".parse()?).with_timestamp(time);
/// assert_eq!(messages_to_json(&[hi])?, r#"[
///   {
///     "role": "user",
///     "content": "Hi",
///     "timestamp": "2026-04-20T18:35:04.000000Z",
///     "message_id": "m1"
///   }
/// ]"#);
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn messages_to_json(messages: &[Message]) -> Result<String> {
    let list: Vec<Exported> = messages.iter().map(Exported::from).collect();
    serde_json::to_string_pretty(&list)
        .map_err(|e| Error::backend("cannot serialize messages as JSON").with_source(e))
}

/// `messages` as YAML text.
///
/// ```
/// use agentmem_conversation::export::messages_to_yaml;
/// use agentmem_core::Message;
/// use chrono::{TimeZone, Utc};
///
/// let time = Utc.with_ymd_and_hms(2026, 4, 20, 18, 35, 4).unwrap();
/// let hi = Message::user("Hi").with_id("m1".parse()?).with_timestamp(time);
/// assert_eq!(
///     messages_to_yaml(&[hi])?,
///     "- role: user\n  content: Hi\n  timestamp: 2026-04-20T18:35:04.000000Z\n  message_id: m1\n"
/// );
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn messages_to_yaml(messages: &[Message]) -> Result<String> {
    let list: Vec<Exported> = messages.iter().map(Exported::from).collect();
    serde_norway::to_string(&list)
        .map_err(|e| Error::backend("cannot serialize messages as YAML").with_source(e))
}

/// Messages from JSON text (`CorruptData` naming the problem when malformed).
///
/// Swarms' exports load too:
///
/// ```
/// use agentmem_conversation::export::messages_from_json;
/// use agentmem_core::{ErrorKind, Role};
///
/// // As Swarms writes it: capitalized roles, naive times, no ids, non-string content.
/// let messages = messages_from_json(r#"[
///     {"role": "User", "content": "Hi", "timestamp": "2026-04-20T18:35:04.123456"},
///     {"role": "ResearchAgent", "content": {"answer": 42}}
/// ]"#)?;
/// assert_eq!(messages[0].role, Role::User);
/// assert_eq!(messages[1].role, Role::Agent("ResearchAgent".into()));
/// assert_eq!(messages[1].content, r#"{"answer":42}"#);
/// let err = messages_from_json(r#"[{"role": "user", "con"#).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::CorruptData);
/// # Ok::<(), agentmem_core::Error>(())
/// ```
pub fn messages_from_json(text: &str) -> Result<Vec<Message>> {
    into_messages(serde_json::from_str(text), "JSON")
}

/// Messages from YAML text (`CorruptData` naming the problem when malformed).
pub fn messages_from_yaml(text: &str) -> Result<Vec<Message>> {
    agentmem_formats::yaml::check_expansion(text)?;
    into_messages(serde_norway::from_str(text), "YAML")
}

/// The messages of a parsed `format` list, or `CorruptData` naming the parse error.
fn into_messages<E>(
    parsed: std::result::Result<Vec<Exported>, E>, format: &str,
) -> Result<Vec<Message>>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let list = parsed.map_err(|e| {
        Error::corrupt(format!("not a {format} list of messages ({e})")).with_source(e)
    })?;
    list.into_iter()
        .enumerate()
        .map(|(i, m)| m.into_message(i))
        .collect()
}

/// Reads messages from an export file, in the format its extension names. Errors name the
/// file and the problem: `NotFound` when it does not exist, `CorruptData` when malformed,
/// `InvalidInput` for an unknown extension.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use agentmem_conversation::export::read_messages;
/// use agentmem_core::ErrorKind;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("chat.yml");
/// std::fs::write(&path, "- role: user\n  content: Hi\n- role: assistant\n  content: Hello!\n")?;
/// let messages = read_messages(&path).await?;
/// assert_eq!(messages[1].content, "Hello!");
/// let err = read_messages(dir.path().join("chat.txt")).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidInput);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn read_messages(path: impl AsRef<Path>) -> Result<Vec<Message>> {
    let path = path.as_ref();
    let format = ExportFormat::from_path(path)?;
    let text = tokio::fs::read_to_string(path).await.map_err(|e| {
        let err = Error::from(e);
        let why = match err.kind() {
            agentmem_core::ErrorKind::NotFound => "no such file".to_string(),
            agentmem_core::ErrorKind::CorruptData => "not UTF-8 text".to_string(),
            _ => "cannot read it".to_string(),
        };
        Error::new(err.kind(), format!("{}: {why}", path.display())).with_source(err)
    })?;
    let parsed = match format {
        ExportFormat::Json => messages_from_json(&text),
        ExportFormat::Yaml => messages_from_yaml(&text),
    };
    parsed.map_err(|e| {
        Error::new(e.kind(), format!("{}: {}", path.display(), e.message())).with_source(e)
    })
}

/// Writes `text` to `path` atomically: a temporary file beside it, flushed, then renamed over
/// it, so an interrupted export never leaves a truncated file (Swarms' interrupted JSON save
/// reloads as an empty conversation); then the folder is synced, so the rename survives a
/// crash too. Readable by the owner only on Unix.
///
/// The temporary name is random and created exclusively (`O_EXCL`, which never follows a
/// symbolic link), so nobody can point it at another file beforehand.
async fn write_atomically(path: &Path, text: String) -> Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid_input(format!("{}: not a file path", path.display())))?;
    let tmp: PathBuf = path.with_file_name(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        agentmem_core::new_id()
    ));
    let context = |e: std::io::Error, what: &str| {
        let err = Error::from(e);
        Error::new(err.kind(), format!("{}: cannot {what}", path.display())).with_source(err)
    };
    let write = async {
        use tokio::io::AsyncWriteExt;
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(&tmp).await?;
        file.write_all(text.as_bytes()).await?;
        file.sync_all().await?;
        tokio::fs::rename(&tmp, path).await?;
        let target = path.to_path_buf();
        tokio::task::spawn_blocking(move || agentmem_formats::sync_parent_folder(&target))
            .await
            .map_err(std::io::Error::other)?
    };
    if let Err(e) = write.await {
        // Best effort: the temporary file is garbage whatever happened.
        let _ = tokio::fs::remove_file(&tmp).await;
        return Err(context(e, "write it"));
    }
    Ok(())
}

impl Conversation {
    /// The history (preamble included) as JSON text, Swarms' export shape.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use agentmem_conversation::Conversation;
    /// use agentmem_core::Role;
    ///
    /// let convo = Conversation::builder("ResearchAgent".parse()?)
    ///     .system_prompt("Be brief.")
    ///     .build()
    ///     .await?;
    /// convo.add(Role::User, "Hi").await?;
    /// let list: serde_json::Value = serde_json::from_str(&convo.to_json()?)?;
    /// assert_eq!(list[0]["role"], "system");
    /// assert_eq!(list[0]["content"], "Be brief.");
    /// assert_eq!(list[1]["content"], "Hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn to_json(&self) -> Result<String> {
        messages_to_json(&self.messages())
    }

    /// The history (preamble included) as YAML text.
    pub fn to_yaml(&self) -> Result<String> {
        messages_to_yaml(&self.messages())
    }

    /// Exports the history to `path` as JSON or YAML, by its extension, replacing the file
    /// atomically.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use agentmem_conversation::Conversation;
    /// use agentmem_core::Role;
    ///
    /// let convo = Conversation::builder("ResearchAgent".parse()?).system_prompt("Be brief.").build().await?;
    /// convo.add(Role::User, "Compare BigQuery and AlloyDB.").await?;
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("research.yaml"); // or .yml, .json
    /// convo.export(&path).await?;
    /// let text = std::fs::read_to_string(&path)?;
    /// assert!(text.starts_with("- role: system\n  content: Be brief.\n"));
    ///
    /// // Loading it back gives exactly the same history.
    /// let copy = Conversation::builder("Copy".parse()?).build().await?;
    /// assert_eq!(copy.load(&path).await?, 2);
    /// assert_eq!(copy.messages(), convo.messages());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn export(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = match ExportFormat::from_path(path)? {
            ExportFormat::Json => self.to_json()?,
            ExportFormat::Yaml => self.to_yaml()?,
        };
        write_atomically(path, text).await
    }

    /// Loads an export (JSON or YAML, by extension) as the whole history, as Swarms' `load`
    /// does, so `export` then `load` gives back exactly the same messages. Nothing is written
    /// to the store. Returns how many messages were loaded; on error the history is unchanged.
    pub async fn load(&self, path: impl AsRef<Path>) -> Result<usize> {
        let messages = read_messages(path).await?;
        Ok(self.replace_history(messages).await)
    }
}
