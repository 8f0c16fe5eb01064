//! agentmem's own format as one YAML document, with the same content as [`crate::json`].
//!
//! ```
//! use agentmem_core::Message;
//! use agentmem_formats::{yaml, ExportDocument, SessionExport};
//!
//! let mut session = SessionExport::new("demo".parse()?);
//! session.messages.push(Message::user("Hello"));
//! let mut doc = ExportDocument::new();
//! doc.sessions.push(session);
//!
//! let text = yaml::to_string(&doc)?;
//! assert!(text.starts_with("agentmem_export: 1\n"));
//! assert_eq!(yaml::parse(&text, "export.yaml")?, doc);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use agentmem_core::{Error, Result};

use crate::document::parsed;
use crate::ExportDocument;

/// The document as YAML (metadata keys sorted, see [`canonicalize`](crate::canonicalize)).
pub fn to_string(doc: &ExportDocument) -> Result<String> {
    let mut doc = doc.clone();
    crate::canonicalize(&mut doc);
    serde_norway::to_string(&doc)
        .map_err(|e| Error::backend("cannot serialize the export as YAML").with_source(e))
}

/// Parses a YAML export; `source` (a file name) prefixes every error, with line and column.
/// The document is checked as [`ExportDocument::validate`] does.
///
/// ```
/// use agentmem_formats::yaml;
/// let doc = yaml::parse("agentmem_export: 1\nsessions: []\n", "in.yaml").unwrap();
/// assert!(doc.sessions.is_empty());
/// assert!(yaml::parse("agentmem_export: [", "in.yaml").is_err());
/// ```
pub fn parse(text: &str, source: &str) -> Result<ExportDocument> {
    check_expansion(text)
        .map_err(|e| Error::new(e.kind(), format!("{source}: {}", e.message())))?;
    parsed(serde_norway::from_str(text), source)
}

/// The most bytes of scalars a YAML text may expand to: 4 times its size, and at least
/// 64 MiB. Anchors and aliases let a small file stand for a huge document (a 1 MB message
/// referenced 10,000 times is 10 GB).
pub fn expansion_limit(text: &str) -> u64 {
    (text.len() as u64).saturating_mul(4).max(64 << 20)
}

/// Refuses YAML whose aliases would expand it beyond [`expansion_limit`], before anything is
/// allocated for it: a first pass walks the document, aliases included, and only adds up the
/// sizes of its scalars (borrowed from the parser, never copied). Other errors are left to
/// the real parse, which reports them with their position.
///
/// ```
/// use agentmem_formats::yaml::check_expansion;
/// assert!(check_expansion("a: &x [1, 2]\nb: *x\n").is_ok());
/// let big = "x".repeat(1 << 20);
/// let mut bomb = format!("m: &m \"{big}\"\nl: [");
/// bomb.push_str(&vec!["*m"; 100].join(", "));
/// bomb.push_str("]\n");
/// let err = check_expansion(&bomb).unwrap_err();
/// assert_eq!(err.kind(), agentmem_core::ErrorKind::InvalidInput);
/// ```
pub fn check_expansion(text: &str) -> Result<()> {
    use serde::de::DeserializeSeed;
    let limit = expansion_limit(text);
    let remaining = std::cell::Cell::new(limit);
    let measured = Measure {
        remaining: &remaining,
    }
    .deserialize(serde_norway::Deserializer::from_str(text));
    match measured {
        Err(e) if remaining.get() == 0 => Err(Error::invalid_input(format!(
            "the YAML expands beyond {limit} bytes through its aliases ({e}); refusing to load it"
        ))),
        _ => Ok(()),
    }
}

/// Walks any YAML value, charging the size of each scalar to `remaining`; fails (with
/// `remaining` at 0) once the charges exceed it.
#[derive(Clone, Copy)]
struct Measure<'a> {
    remaining: &'a std::cell::Cell<u64>,
}

impl Measure<'_> {
    fn charge<E: serde::de::Error>(self, bytes: usize) -> std::result::Result<(), E> {
        let bytes = bytes as u64 + 1;
        match self.remaining.get().checked_sub(bytes) {
            Some(left) => {
                self.remaining.set(left);
                Ok(())
            }
            None => {
                self.remaining.set(0);
                Err(E::custom("expansion limit reached"))
            }
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Measure<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Measure<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> std::result::Result<(), E> {
        self.charge(1)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> std::result::Result<(), E> {
        self.charge(8)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> std::result::Result<(), E> {
        self.charge(8)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<(), E> {
        self.charge(8)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.charge(v.len())
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> std::result::Result<(), E> {
        self.charge(v.len())
    }
    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.charge(0)
    }
    fn visit_none<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.charge(0)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self, mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self, mut map: A,
    ) -> std::result::Result<(), A::Error> {
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(
        self, data: A,
    ) -> std::result::Result<(), A::Error> {
        use serde::de::VariantAccess;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

crate::fs::text_io!(ExportDocument, "document": read, import, write, export);
