//! Tokenising user messages into clauses of words, shared by auto-memory and learning.
//!
//! Hand-written rather than regular expressions: the matchers need word positions, the original
//! spelling (for capitalisation and values such as `Node.js` or `C++`) and expanded contractions
//! (`I'm` → `i am`), which is simpler to get right on a token list than in one pattern.

/// One word of a clause.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    /// Lowercase form; contractions are expanded into several words (`don't` → `do`, `not`).
    pub lower: String,
    /// Byte range of the word in the original text (shared by the parts of a contraction).
    pub start: usize,
    pub end: usize,
    /// Whether this word came from expanding a contraction (never used as a value).
    pub synthetic: bool,
    /// Whether a comma, colon or similar pause separates this word from the previous one.
    pub pause_before: bool,
}

/// A clause: the words between two sentence boundaries (`.`, `!`, `?`, `;`, a line break, a dash).
#[derive(Debug, Clone)]
pub(crate) struct Clause<'a> {
    pub text: &'a str,
    pub words: Vec<Word>,
    /// Byte offset where the clause ends in `text` (before its boundary character).
    pub end: usize,
}

impl<'a> Clause<'a> {
    /// The lowercase word at `i`, or `""` past the end.
    pub fn lower(&self, i: usize) -> &str {
        self.words.get(i).map_or("", |w| w.lower.as_str())
    }

    /// The original spelling of word `i` (or `""`).
    pub fn original(&self, i: usize) -> &'a str {
        self.words
            .get(i)
            .and_then(|w| self.text.get(w.start..w.end))
            .unwrap_or("")
    }

    /// Whether the words from `i` on are `seq`.
    pub fn has_at(&self, i: usize, seq: &[&str]) -> bool {
        seq.iter().enumerate().all(|(k, s)| self.lower(i + k) == *s)
    }

    /// Whether word `i` is a real word starting with an uppercase letter.
    pub fn is_capitalised(&self, i: usize) -> bool {
        self.words.get(i).is_some_and(|w| !w.synthetic)
            && self
                .original(i)
                .chars()
                .next()
                .is_some_and(char::is_uppercase)
    }

    /// Whether word `i` exists and begins a new phrase (a pause before it).
    pub fn pause_before(&self, i: usize) -> bool {
        self.words.get(i).is_some_and(|w| w.pause_before)
    }

    /// The original text spanning words `from..to` (exclusive), trimmed.
    pub fn span(&self, from: usize, to: usize) -> &'a str {
        if from >= to || to > self.words.len() {
            return "";
        }
        let start = self.words[from].start;
        let end = self.words[to - 1].end;
        self.text.get(start..end).unwrap_or("").trim()
    }

    /// The original text from word `from` to the end of the clause, trimmed of punctuation.
    pub fn rest(&self, from: usize) -> &'a str {
        match self.words.get(from) {
            Some(w) => self
                .text
                .get(w.start..self.end)
                .unwrap_or("")
                .trim()
                .trim_end_matches([',', ':', ')', '"', '\'']),
            None => "",
        }
    }
}

/// Whether `c` can be part of a word (letters, digits and the inner punctuation of names such as
/// `C++`, `C#`, `Node.js`, `o'brien`, `x-ray`, `snake_case`).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '\'' | '’' | '-' | '+' | '#' | '_' | '.')
}

/// Splits `text` into clauses of words.
pub(crate) fn clauses(text: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut pause = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if word_char(c) && !(c == '.' || c == '\'' || c == '’' || c == '-') {
            // A word: take word characters, but a `.`, `'` or `-` only when a letter or digit
            // follows, so "Node.js" and "don't" stay whole and "end." or "'quoted'" do not.
            let start = i;
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !word_char(d) {
                    break;
                }
                if matches!(d, '.' | '\'' | '’' | '-') {
                    let next = text[j + d.len_utf8()..].chars().next();
                    if !next.is_some_and(char::is_alphanumeric) {
                        break;
                    }
                }
                end = j + d.len_utf8();
                chars.next();
            }
            push_word(&mut words, text, start, end, pause);
            pause = false;
            continue;
        }
        let boundary = match c {
            '!' | '?' | ';' | '\n' | '—' | '–' => true,
            '.' => text[i + 1..]
                .chars()
                .next()
                .is_none_or(|n| n.is_whitespace() || n == '"' || n == ')'),
            '-' => text[i + 1..].starts_with(' ') && text[..i].ends_with(' '),
            _ => false,
        };
        if boundary {
            if !words.is_empty() {
                out.push(Clause {
                    text,
                    words: std::mem::take(&mut words),
                    end: i,
                });
            }
            pause = false;
        } else if matches!(c, ',' | ':' | '(' | ')' | '"' | '“' | '”' | '/' | '&') {
            pause = true;
        }
    }
    if !words.is_empty() {
        out.push(Clause {
            text,
            words,
            end: text.len(),
        });
    }
    out
}

fn push_word(words: &mut Vec<Word>, text: &str, start: usize, end: usize, pause: bool) {
    let lower = text[start..end].to_lowercase().replace('’', "'");
    let expanded: &[&str] = match lower.as_str() {
        "i'm" | "im" => &["i", "am"],
        "i've" => &["i", "have"],
        "i'd" => &["i", "would"],
        "i'll" => &["i", "will"],
        "don't" | "dont" => &["do", "not"],
        "doesn't" => &["does", "not"],
        "didn't" => &["did", "not"],
        "can't" | "cant" | "cannot" => &["can", "not"],
        "won't" => &["will", "not"],
        "name's" => &["name", "is"],
        "that's" => &["that", "is"],
        "it's" => &["it", "is"],
        "we're" => &["we", "are"],
        "you're" => &["you", "are"],
        "what's" => &["what", "is"],
        _ => &[],
    };
    if expanded.is_empty() {
        words.push(Word {
            lower,
            start,
            end,
            synthetic: false,
            pause_before: pause,
        });
    } else {
        for (k, part) in expanded.iter().enumerate() {
            words.push(Word {
                lower: (*part).to_string(),
                start,
                end,
                synthetic: true,
                pause_before: pause && k == 0,
            });
        }
    }
}

/// Lowercase letters and digits of `text`, words joined by single spaces: the form used for
/// de-duplication keys, so "Always use tabs!" and "always use  tabs" are one key.
pub(crate) fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#')))
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A stable 128-bit hash of `text` as 32 hex digits (two FNV-1a passes with different offsets),
/// for ids derived from keys. Stable across Rust releases, unlike `DefaultHasher`.
pub(crate) fn stable_hash(text: &str) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    for byte in text.bytes() {
        a = (a ^ u64::from(byte)).wrapping_mul(PRIME);
        b = (b ^ u64::from(byte.rotate_left(3))).wrapping_mul(PRIME);
    }
    format!("{a:016x}{b:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<String>> {
        clauses(text)
            .iter()
            .map(|c| c.words.iter().map(|w| w.lower.clone()).collect())
            .collect()
    }

    #[test]
    fn splits_clauses_and_keeps_inner_punctuation() {
        assert_eq!(
            words("I'm Bob. I use Node.js and C++! Don't"),
            vec![
                vec!["i", "am", "bob"],
                vec!["i", "use", "node.js", "and", "c++"],
                vec!["do", "not"]
            ]
        );
        let c = &clauses("I use Node.js, C# and x-ray.")[0];
        assert_eq!(c.span(2, 3), "Node.js");
        assert!(c.pause_before(3));
        assert_eq!(c.rest(2), "Node.js, C# and x-ray");
    }

    #[test]
    fn normalises_for_keys() {
        assert_eq!(normalise("  Always use TABS!! "), "always use tabs");
        assert_eq!(normalise("C++ / C#"), "c++ c#");
        assert_eq!(stable_hash("a"), stable_hash("a"));
        assert_ne!(stable_hash("a"), stable_hash("b"));
        assert_eq!(truncate("héllo", 2), "h");
    }
}
