//! The binary format of `vectors/vectors.log`: a header, then one record a stored or deleted
//! vector. Vectors are about 1.5 KB each, so the log is binary rather than JSON lines.
//!
//! ```text
//! header:  b"AGMVECT\n"  version: u32 LE
//! record:  kind: u8  key: [u8; 32]  len: u32 LE  data: [u8; len]  crc: u32 LE
//! ```
//!
//! `kind` is 1 (put `data` under `key`) or 2 (delete `key`, `len` 0); `crc` is the CRC-32
//! (IEEE) of the record's bytes before it. The records of one call are written by one append;
//! replaying them in order through [`VectorMap`] rebuilds the vectors exactly.

use agentmem_core::vector::{VectorMap, MAX_VECTOR_BYTES, SEALING_ROOM};
use agentmem_core::{StoredVector, VectorKey};

/// The first bytes of a vector log.
const MAGIC: &[u8; 8] = b"AGMVECT\n";
/// The format version this build writes (and the newest it reads).
pub(crate) const VERSION: u32 = 1;
/// Bytes of the header.
pub(crate) const HEADER_LEN: usize = MAGIC.len() + 4;
/// Bytes of a record before its data: kind, key, length.
const PREFIX_LEN: usize = 1 + 32 + 4;
/// Bytes of a record besides its data.
pub(crate) const OVERHEAD: usize = PREFIX_LEN + 4;

const PUT: u8 = 1;
const DELETE: u8 = 2;

/// One record of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// A vector stored (replacing what its key held).
    Put(StoredVector),
    /// A vector deleted.
    Delete(VectorKey),
}

impl Record {
    /// Appends the record's bytes to `out`.
    pub(crate) fn push(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let (kind, key, data): (u8, &VectorKey, &[u8]) = match self {
            Record::Put(v) => (PUT, &v.key, &v.data),
            Record::Delete(key) => (DELETE, key, &[]),
        };
        out.push(kind);
        out.extend_from_slice(key.as_bytes());
        // At most MAX_VECTOR_BYTES + SEALING_ROOM (the validate layer checks before a backend
        // sees a put; a sealed vector may take the room).
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// Replays the record on `map`.
    pub(crate) fn apply(self, map: &mut VectorMap) {
        match self {
            Record::Put(v) => map.put(std::slice::from_ref(&v)),
            Record::Delete(key) => {
                map.delete(&[key]);
            }
        }
    }
}

/// The header of a log this build writes.
pub(crate) fn header() -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    out
}

/// What is wrong with the start of a log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BadHeader {
    /// A header of a version newer than this build reads: the log is left alone.
    Newer(u32),
    /// Not the header of a vector log (cut off, or another file): damage.
    Unreadable(String),
}

/// Checks the header at the start of the whole log `bytes`.
pub(crate) fn check_header(bytes: &[u8]) -> Result<(), BadHeader> {
    let Some(head) = bytes.get(..HEADER_LEN) else {
        return Err(BadHeader::Unreadable(format!(
            "{} bytes, less than a vector log's header",
            bytes.len()
        )));
    };
    if &head[..MAGIC.len()] != MAGIC {
        return Err(BadHeader::Unreadable("not a vector log".into()));
    }
    match le_u32(&head[MAGIC.len()..]) {
        v if v > VERSION => Err(BadHeader::Newer(v)),
        _ => Ok(()),
    }
}

/// How a scan of records ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// At the end of the bytes.
    Clean,
    /// At a last record cut off (or zeros), as a crash in the middle of an append leaves it:
    /// record number `record`, and why.
    Torn { record: u64, reason: String },
    /// At a record that cannot be read (record number `record`, and why), with more after it
    /// or a checksum that does not match: not a crash artefact. Without lengths to trust, the
    /// records after it cannot be found either.
    Damaged { record: u64, reason: String },
}

/// The records found in a part of a log.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) records: Vec<Record>,
    /// Bytes of whole records read.
    pub(crate) valid_len: usize,
    pub(crate) end: End,
}

/// Reads the records of `bytes` (record bytes only, no header), whose first is record number
/// `first` of the log.
pub(crate) fn scan(bytes: &[u8], first: u64) -> Scan {
    let mut records = Vec::new();
    let mut offset = 0usize;
    let end = loop {
        let rest = &bytes[offset..];
        if rest.is_empty() {
            break End::Clean;
        }
        let record = first + records.len() as u64;
        match parse(rest) {
            Ok((parsed, len)) => {
                records.push(parsed);
                offset += len;
            }
            Err(Bad::Torn(reason)) => break End::Torn { record, reason },
            Err(Bad::Damaged(reason)) => break End::Damaged { record, reason },
        }
    };
    Scan {
        records,
        valid_len: offset,
        end,
    }
}

/// Why a record does not parse.
enum Bad {
    Torn(String),
    Damaged(String),
}

/// The record at the start of `rest` and its length in bytes.
fn parse(rest: &[u8]) -> Result<(Record, usize), Bad> {
    if rest.iter().all(|&b| b == 0) {
        // A hole the file system filled with zeros at the end.
        return Err(Bad::Torn(format!("{} zero bytes at the end", rest.len())));
    }
    let Some(prefix) = rest.get(..PREFIX_LEN) else {
        return Err(Bad::Torn(format!(
            "{} bytes, less than a record",
            rest.len()
        )));
    };
    let (kind, len) = (prefix[0], le_u32(&prefix[33..]) as usize);
    let known = match kind {
        PUT => (1..=MAX_VECTOR_BYTES + SEALING_ROOM).contains(&len),
        DELETE => len == 0,
        _ => false,
    };
    if !known {
        return Err(Bad::Damaged(format!(
            "not a vector record (kind {kind}, {len} bytes)"
        )));
    }
    let total = OVERHEAD + len;
    let Some(whole) = rest.get(..total) else {
        return Err(Bad::Torn(format!("a record of {total} bytes cut off")));
    };
    let body = &whole[..PREFIX_LEN + len];
    if crc32(body) != le_u32(&whole[PREFIX_LEN + len..]) {
        let reason = "a record whose checksum does not match".to_string();
        // Last in the log: an append the crash cut short (its length written, not its bytes).
        return Err(match rest.len() == total {
            true => Bad::Torn(reason),
            false => Bad::Damaged(reason),
        });
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&prefix[1..33]);
    let key = VectorKey(key);
    let record = match kind {
        PUT => Record::Put(StoredVector {
            key,
            data: body[PREFIX_LEN..].to_vec(),
        }),
        _ => Record::Delete(key),
    };
    Ok((record, total))
}

/// The little-endian `u32` at the start of `bytes` (at least four).
fn le_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_le_bytes(word)
}

/// A whole log holding `map`: the header, then one put a vector.
pub(crate) fn encode_log(map: &VectorMap) -> Vec<u8> {
    let mut out = header();
    out.reserve(encoded_len(map) - out.len());
    for (key, data) in map.iter() {
        Record::Put(StoredVector {
            key: *key,
            data: data.clone(),
        })
        .push(&mut out);
    }
    out
}

/// The length of [`encode_log`]'s answer for `map`.
pub(crate) fn encoded_len(map: &VectorMap) -> usize {
    HEADER_LEN + map.iter().map(|(_, d)| OVERHEAD + d.len()).sum::<usize>()
}

/// CRC-32 (IEEE 802.3, reflected, as zlib's) lookup table.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The CRC-32 of `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(n: u8, len: usize) -> Record {
        Record::Put(StoredVector {
            key: VectorKey([n; 32]),
            data: vec![n; len],
        })
    }

    fn bytes(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            r.push(&mut out);
        }
        out
    }

    #[test]
    fn the_checksum_is_crc32() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn records_read_back_and_replay() {
        let records = [put(1, 1), put(2, 1536), Record::Delete(VectorKey([1; 32]))];
        let out = bytes(&records);
        assert_eq!(out.len(), 3 * OVERHEAD + 1537);
        let scan = scan(&out, 1);
        assert_eq!((scan.valid_len, scan.end), (out.len(), End::Clean));
        assert_eq!(scan.records, records);
        let mut map = VectorMap::default();
        scan.records.into_iter().for_each(|r| r.apply(&mut map));
        assert_eq!(map.len(), 1);
        let log = encode_log(&map);
        assert_eq!(log.len(), encoded_len(&map));
        assert_eq!(check_header(&log), Ok(()));
        assert_eq!(super::scan(&log[HEADER_LEN..], 1).records, [put(2, 1536)]);
    }

    #[test]
    fn a_cut_or_zeroed_end_is_torn_and_damage_in_the_middle_is_not() {
        let whole = bytes(&[put(1, 8), put(2, 8)]);
        let one = OVERHEAD + 8;
        for cut in [one + 1, one + PREFIX_LEN + 3, whole.len() - 1] {
            let scan = scan(&whole[..cut], 5);
            assert_eq!(scan.records.len(), 1);
            assert_eq!(scan.valid_len, one);
            assert!(matches!(scan.end, End::Torn { record: 6, .. }), "{cut}");
        }
        let mut zeros = whole.clone();
        zeros[one..].fill(0);
        assert!(matches!(scan(&zeros, 1).end, End::Torn { record: 2, .. }));
        let mut flipped = whole.clone();
        flipped[one - 2] ^= 1; // the first record's checksum, with a record after it
        let scan_flipped = scan(&flipped, 1);
        assert!(matches!(scan_flipped.end, End::Damaged { record: 1, .. }));
        assert_eq!(scan_flipped.valid_len, 0);
        let mut last = whole.clone();
        last[one + 40] ^= 1; // the last record's data
        assert!(matches!(scan(&last, 1).end, End::Torn { record: 2, .. }));
        let mut kind = whole;
        kind[one] = 9;
        assert!(matches!(scan(&kind, 1).end, End::Damaged { record: 2, .. }));
    }

    #[test]
    fn headers_are_checked() {
        assert_eq!(check_header(&header()), Ok(()));
        assert!(matches!(
            check_header(&header()[..5]),
            Err(BadHeader::Unreadable(_))
        ));
        assert!(matches!(
            check_header(b"{\"op\":\"header\"}"),
            Err(BadHeader::Unreadable(_))
        ));
        let mut newer = MAGIC.to_vec();
        newer.extend_from_slice(&2u32.to_le_bytes());
        assert_eq!(check_header(&newer), Err(BadHeader::Newer(2)));
    }
}
