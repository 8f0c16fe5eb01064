//! Memory items through the encryption layer: what of an item is sealed, its AAD, and the
//! stand-ins of its key (see the crate documentation).

use std::collections::HashMap;

use agentmem_core::layer::check_memory_item;
use agentmem_core::{MemoryId, MemoryItem, Metadata, Result};

use crate::cipher::{
    aad, is_envelope, presence, CryptoError, Domain, Keyring, Sealer, MEMORY_KEY_ENTRY,
};
use crate::ids::{real_id, stored_id};
use crate::layer::{open_metadata, seal_metadata};

/// An item's AAD: its scope and kind, and its key's stand-in when it has a key (upsert by key
/// keeps those, though it may change the id), else its id as stored (sealed, or as given in
/// items written before ids were sealed; upsert by id keeps it).
fn memory_aad(item: &MemoryItem, field: &str, extra: &[u8]) -> Vec<u8> {
    let (tag, anchor) = match &item.key {
        Some(token) => (&b"key"[..], token.as_str()),
        None => (&b"id"[..], item.id.as_str()),
    };
    aad(&[
        b"memory",
        item.scope.stored_form().as_bytes(),
        item.kind.as_str().as_bytes(),
        tag,
        anchor.as_bytes(),
        field.as_bytes(),
        extra,
    ])
}

/// What a key's stand-in is computed over: the scope, kind and key.
fn token_aad(item: &MemoryItem, key: &str) -> Vec<u8> {
    aad(&[
        b"memory",
        item.scope.stored_form().as_bytes(),
        item.kind.as_str().as_bytes(),
        key.as_bytes(),
    ])
}

/// The stand-ins `item`'s key has under the read keys (not the write key): what an item with
/// the same key written before a rotation holds.
pub(crate) fn older_tokens(keys: &Keyring, item: &MemoryItem) -> Result<Vec<String>> {
    let Some(key) = &item.key else {
        return Ok(Vec::new());
    };
    let mut sealer = Sealer::new(keys, Domain::memory(&item.scope));
    let aad = token_aad(item, key);
    keys.ids()
        .into_iter()
        .skip(1)
        .map(|id| sealer.key_token_under(id, &aad))
        .collect()
}

/// What a stored item's text is bound to besides its place: whether it has metadata and a key.
fn item_presence(has_metadata: bool, has_key: bool) -> [u8; 1] {
    presence(&[has_metadata, has_key])
}

/// Which form of an item text's AAD to build.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextAad {
    /// What the layer writes: also bound to the expiry time, so a writer of the backend cannot
    /// extend, remove or add an item's expiry unnoticed.
    Current,
    /// What the layer wrote before: no expiry. Read, never written; a text sealed in one form
    /// never opens in the other (the parts differ).
    Legacy,
}

/// The expiry as it is bound: microseconds since the epoch (what every backend keeps), or
/// `never`.
fn expiry_part(item: &MemoryItem) -> Vec<u8> {
    match item.expires_at {
        Some(at) => at.timestamp_micros().to_be_bytes().to_vec(),
        None => b"never".to_vec(),
    }
}

fn text_aad(item: &MemoryItem, has_metadata: bool, has_key: bool, form: TextAad) -> Vec<u8> {
    let presence = item_presence(has_metadata, has_key);
    match form {
        TextAad::Current => {
            let mut extra = presence.to_vec();
            extra.extend_from_slice(b"expires_at");
            extra.extend_from_slice(&expiry_part(item));
            memory_aad(item, "text/expiring", &extra)
        }
        TextAad::Legacy => memory_aad(item, "text", &presence),
    }
}

pub(crate) fn seal_item(keys: &Keyring, item: &MemoryItem) -> Result<MemoryItem> {
    seal_item_as(keys, item, stored_id(keys, &item.id)?)
}

/// `item` sealed to be stored under `id` (its id sealed, or, in tests, the id as given, as
/// items were stored before ids were sealed).
fn seal_item_as(keys: &Keyring, item: &MemoryItem, id: MemoryId) -> Result<MemoryItem> {
    check_memory_item(item)?;
    let mut sealer = Sealer::new(keys, Domain::memory(&item.scope));
    let mut stored = MemoryItem {
        id,
        text: String::new(),
        metadata: Metadata::new(),
        ..item.clone()
    };
    if let Some(key) = &item.key {
        stored.key = Some(sealer.key_token(&token_aad(item, key))?);
        let envelope = sealer.seal(key.as_bytes(), &memory_aad(&stored, "key", &[]))?;
        stored
            .metadata
            .insert(MEMORY_KEY_ENTRY.to_owned(), envelope.into());
    }
    let metadata = seal_metadata(
        &mut sealer,
        &item.metadata,
        &memory_aad(&stored, "metadata", &[]),
    )?;
    stored.metadata.extend(metadata);
    let text_aad = text_aad(
        &stored,
        !item.metadata.is_empty(),
        item.key.is_some(),
        TextAad::Current,
    );
    stored.text = sealer.seal(item.text.as_bytes(), &text_aad)?;
    Ok(stored)
}

/// Decrypts items, deriving each scope's key once.
pub(crate) fn open_items(keys: &Keyring, items: Vec<MemoryItem>) -> Result<Vec<MemoryItem>> {
    let mut sealers: HashMap<String, Sealer<'_>> = HashMap::new();
    items
        .into_iter()
        .map(|item| {
            let sealer = sealers
                .entry(item.scope.stored_form())
                .or_insert_with(|| Sealer::new(keys, Domain::memory(&item.scope)));
            open_item(keys, sealer, item)
        })
        .collect()
}

fn open_item(keys: &Keyring, sealer: &mut Sealer<'_>, item: MemoryItem) -> Result<MemoryItem> {
    if sealer.accepts_plaintext() && !is_envelope(&item.text) {
        return Ok(item);
    }
    let MemoryItem {
        id,
        kind,
        scope,
        key,
        text,
        mut metadata,
        created_at,
        updated_at,
        expires_at,
    } = item;
    let mut out = MemoryItem {
        id,
        kind,
        scope,
        key,
        text: String::new(),
        metadata: Metadata::new(),
        created_at,
        updated_at,
        expires_at,
    };
    let key_envelope = metadata.remove(MEMORY_KEY_ENTRY);
    let opened = (|| {
        let key = match (&out.key, key_envelope) {
            (None, None) => None,
            (Some(_), Some(serde_json::Value::String(envelope))) => {
                let bytes = sealer.open(&envelope, &memory_aad(&out, "key", &[]))?;
                Some(String::from_utf8(bytes).map_err(|_| CryptoError::Malformed)?)
            }
            (Some(_), None) => return Err(CryptoError::NotEncrypted),
            _ => return Err(CryptoError::Malformed),
        };
        let metadata = open_metadata(sealer, metadata, &memory_aad(&out, "metadata", &[]))?;
        let (has_metadata, has_key) = (!metadata.is_empty(), key.is_some());
        let current = text_aad(&out, has_metadata, has_key, TextAad::Current);
        let bytes = match sealer.open(&text, &current) {
            // Sealed before the expiry was bound: the legacy AAD.
            Err(CryptoError::Tampered) => sealer.open(
                &text,
                &text_aad(&out, has_metadata, has_key, TextAad::Legacy),
            )?,
            opened => opened?,
        };
        let text = String::from_utf8(bytes).map_err(|_| CryptoError::Malformed)?;
        // Last: a record under a key not held says so above, with the key it names.
        let id = real_id(keys, &out.id)?;
        Ok::<_, CryptoError>((id, key, metadata, text))
    })();
    let (id, key, metadata, text) =
        opened.map_err(|e| e.at(format!("memory item `{}`", out.id)))?;
    out.id = id;
    out.key = key;
    out.metadata = metadata;
    out.text = text;
    Ok(out)
}

pub(crate) fn open_one_item(keys: &Keyring, item: MemoryItem) -> Result<MemoryItem> {
    let mut sealer = Sealer::new(keys, Domain::memory(&item.scope));
    open_item(keys, &mut sealer, item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::MasterKey;
    use agentmem_core::MemoryKind;

    #[test]
    fn an_item_sealed_before_its_expiry_was_bound_still_opens() {
        let keys = Keyring::new(&MasterKey::from_bytes([5; 32]));
        let item = MemoryItem::new(MemoryKind::Fact, "the sky is blue")
            .with_key("sky")
            .with_metadata("source", "test")
            .expiring_at(agentmem_core::now() + std::time::Duration::from_secs(86_400));
        let mut old = seal_item(&keys, &item).unwrap();
        // As the layer sealed text before: no expiry in the AAD.
        let legacy = text_aad(&old, true, true, TextAad::Legacy);
        assert_ne!(legacy, text_aad(&old, true, true, TextAad::Current));
        let mut sealer = Sealer::new(&keys, Domain::memory(&item.scope));
        old.text = sealer.seal(item.text.as_bytes(), &legacy).unwrap();
        assert_eq!(open_one_item(&keys, old).unwrap(), item);
    }

    /// Items stored before ids were sealed (under their id as given) are read, replaced and
    /// deleted by that id through the layer, and a put leaves one item, under the sealed id.
    #[tokio::test]
    async fn items_stored_under_their_plain_id_still_work() {
        use agentmem_core::layer::Layer as _;
        use agentmem_core::{InMemoryStore, MemoryFilter, MemoryStore};
        use std::sync::Arc;

        let master = MasterKey::from_bytes([6; 32]);
        let keys = Keyring::new(&master);
        let raw = Arc::new(InMemoryStore::new());
        let store = crate::EncryptLayer::new(&master).layer(raw.clone());
        let raw_ids = || async {
            raw.list_memories(&MemoryFilter::default())
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.id)
                .collect::<Vec<_>>()
        };
        let old = MemoryItem::new(MemoryKind::Fact, "written by an older version");
        let legacy = seal_item_as(&keys, &old, old.id.clone()).unwrap();
        raw.put_memory(&legacy).await.unwrap();
        assert_eq!(store.get_memory(&old.id).await.unwrap(), Some(old.clone()));
        assert_eq!(
            store.list_memories(&MemoryFilter::default()).await.unwrap(),
            std::slice::from_ref(&old)
        );

        let newer = MemoryItem {
            text: "replaced through the layer".into(),
            ..old.clone()
        };
        assert_eq!(store.put_memory(&newer).await.unwrap(), newer);
        assert_eq!(raw_ids().await, [stored_id(&keys, &old.id).unwrap()]);
        assert_eq!(store.get_memory(&old.id).await.unwrap(), Some(newer));

        let other = MemoryItem::new(MemoryKind::Fact, "also older");
        raw.put_memory(&seal_item_as(&keys, &other, other.id.clone()).unwrap())
            .await
            .unwrap();
        assert!(store.delete_memory(&other.id).await.unwrap());
        assert!(store.get_memory(&other.id).await.unwrap().is_none());
        assert!(store.delete_memory(&old.id).await.unwrap());
        assert!(raw_ids().await.is_empty());
    }
}
