//! Porter's suffix-stripping algorithm (M. F. Porter, 1980), with the details of SQLite
//! FTS5's `porter` tokenizer, so that the SQLite backend (which stems inside FTS5) and every
//! other backend (which stem here) index and search the same terms.
//!
//! Those details, where FTS5 departs from the paper: words under 3 or over 64 bytes are left
//! as they are; `*v*` counts a `y` anywhere but first as a vowel; a rule's suffix must be
//! shorter than the word; step 5b measures the word without its last `l`. Bytes outside ASCII
//! are consonants, as in FTS5, except that a doubled one is never undoubled (that would split
//! a UTF-8 character).

use std::borrow::Cow;

/// Words shorter than this (bytes) are not stemmed.
const MIN_STEM_BYTES: usize = 3;
/// Words longer than this (bytes) are not stemmed.
const MAX_STEM_BYTES: usize = 64;

/// The Porter stem of `word` (lowercase), as FTS5's `porter` tokenizer computes it.
///
/// ```
/// use agentmem_core::search::stem;
/// for word in ["adopt", "adopted", "adopting", "adoption", "adopts"] {
///     assert_eq!(stem(word), "adopt");
/// }
/// assert_eq!(stem("ponies"), "poni");
/// assert_eq!(stem("happy"), "happi");
/// assert_eq!(stem("東京"), "東京");
/// ```
pub fn stem(word: &str) -> Cow<'_, str> {
    if !(MIN_STEM_BYTES..=MAX_STEM_BYTES).contains(&word.len()) {
        return Cow::Borrowed(word);
    }
    let mut w = Stem(word.as_bytes().to_vec());
    w.step1();
    w.step1c();
    w.replace_first(STEP2, Stem::m_gt0);
    w.replace_first(STEP3, Stem::m_gt0);
    w.replace_first(STEP4, Stem::m_gt1);
    w.step5();
    if w.0 == word.as_bytes() {
        return Cow::Borrowed(word);
    }
    // Only ASCII suffixes are removed or added, so the bytes stay UTF-8; never panic anyway.
    String::from_utf8(w.0).map_or(Cow::Borrowed(word), Cow::Owned)
}

/// A suffix rule: `(suffix, replacement)`, applied when the condition holds for the rest.
type Rule = (&'static str, &'static str);

/// Step 2 (condition `m > 0`). A longer suffix comes before a shorter one it ends with.
const STEP2: &[Rule] = &[
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("logi", "log"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
];

/// Step 3 (condition `m > 0`).
const STEP3: &[Rule] = &[
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
];

/// Step 4 (condition `m > 1`; `ion` also needs the rest to end in `s` or `t`).
const STEP4: &[Rule] = &[
    ("al", ""),
    ("ance", ""),
    ("ence", ""),
    ("er", ""),
    ("ic", ""),
    ("able", ""),
    ("ible", ""),
    ("ant", ""),
    ("ement", ""),
    ("ment", ""),
    ("ent", ""),
    ("ion", ""),
    ("ou", ""),
    ("ism", ""),
    ("ate", ""),
    ("iti", ""),
    ("ous", ""),
    ("ive", ""),
    ("ize", ""),
];

/// The word being stemmed, as bytes.
struct Stem(Vec<u8>);

impl Stem {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the byte at `i` is a consonant: not `aeiou`, and not a `y` after a consonant.
    fn consonant(&self, i: usize) -> bool {
        match self.0[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.consonant(i - 1),
            _ => true,
        }
    }

    /// Porter's measure `m` of the first `n` bytes: how many vowel-consonant sequences.
    fn measure(&self, n: usize) -> usize {
        (1..n)
            .filter(|&i| self.consonant(i) && !self.consonant(i - 1))
            .count()
    }

    fn m_gt0(&self, n: usize) -> bool {
        self.measure(n) > 0
    }

    fn m_gt1(&self, n: usize) -> bool {
        self.measure(n) > 1
    }

    /// `*v*` as FTS5 has it: a vowel in the first `n` bytes, `y` counting after the first.
    fn has_vowel(&self, n: usize) -> bool {
        self.0[..n]
            .iter()
            .enumerate()
            .any(|(i, &c)| matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (c == b'y' && i > 0))
    }

    /// `*o`: the first `n` bytes end consonant-vowel-consonant, the last not `w`, `x`, `y`.
    fn cvc(&self, n: usize) -> bool {
        n >= 3
            && !matches!(self.0[n - 1], b'w' | b'x' | b'y')
            && self.consonant(n - 1)
            && !self.consonant(n - 2)
            && self.consonant(n - 3)
    }

    /// Whether the word ends with `suffix` and is longer than it.
    fn ends(&self, suffix: &str) -> bool {
        self.len() > suffix.len() && self.0.ends_with(suffix.as_bytes())
    }

    fn replace_end(&mut self, cut: usize, with: &str) {
        self.0.truncate(self.len() - cut);
        self.0.extend_from_slice(with.as_bytes());
    }

    /// Applies the first rule of `rules` whose suffix the word ends with, when `condition`
    /// holds for the word without it; either way, no later rule is tried.
    fn replace_first(&mut self, rules: &[Rule], condition: fn(&Self, usize) -> bool) {
        let Some(&(suffix, with)) = rules.iter().find(|(suffix, _)| self.ends(suffix)) else {
            return;
        };
        let rest = self.len() - suffix.len();
        let s_or_t = suffix != "ion" || matches!(self.0[rest - 1], b's' | b't');
        if s_or_t && condition(self, rest) {
            self.replace_end(suffix.len(), with);
        }
    }

    /// Steps 1a and 1b: plurals, `-ed` and `-ing`.
    fn step1(&mut self) {
        let n = self.len();
        if self.0[n - 1] == b's' {
            if self.0[n - 2] == b'e' {
                let sses = n > 4 && self.0[n - 4] == b's' && self.0[n - 3] == b's';
                let ies = n > 3 && self.0[n - 3] == b'i';
                self.0.truncate(if sses || ies { n - 2 } else { n - 1 });
            } else if self.0[n - 2] != b's' {
                self.0.truncate(n - 1);
            }
        }
        let removed = if self.ends("eed") {
            if self.m_gt0(self.len() - 3) {
                self.replace_end(3, "ee");
            }
            false
        } else if self.ends("ed") && self.has_vowel(self.len() - 2) {
            self.replace_end(2, "");
            true
        } else if self.ends("ing") && self.has_vowel(self.len() - 3) {
            self.replace_end(3, "");
            true
        } else {
            false
        };
        if !removed {
            return;
        }
        if let Some(&(suffix, with)) = [("at", "ate"), ("bl", "ble"), ("iz", "ize")]
            .iter()
            .find(|(suffix, _)| self.ends(suffix))
        {
            self.replace_end(suffix.len(), with);
            return;
        }
        let n = self.len();
        let last = self.0[n - 1];
        let doubled = n >= 2
            && last.is_ascii()
            && !matches!(last, b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z')
            && last == self.0[n - 2];
        if doubled {
            self.0.truncate(n - 1);
        } else if self.measure(n) == 1 && self.cvc(n) {
            self.0.push(b'e');
        }
    }

    /// Step 1c: a final `y` after a vowel becomes `i`.
    fn step1c(&mut self) {
        let n = self.len();
        if self.0[n - 1] == b'y' && self.has_vowel(n - 1) {
            self.0[n - 1] = b'i';
        }
    }

    /// Step 5: a final `e`, and a final `ll`.
    fn step5(&mut self) {
        let n = self.len();
        if self.0[n - 1] == b'e' {
            let m = self.measure(n - 1);
            if m > 1 || (m == 1 && !self.cvc(n - 1)) {
                self.0.truncate(n - 1);
            }
        }
        let n = self.len();
        if n > 1 && self.0[n - 1] == b'l' && self.0[n - 2] == b'l' && self.m_gt1(n - 1) {
            self.0.truncate(n - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn porter_examples() {
        // Examples from Porter's paper, each step.
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
        ];
        for (word, expected) in cases {
            assert_eq!(stem(word), expected, "{word}");
        }
    }

    #[test]
    fn short_long_and_foreign_words_are_kept_whole() {
        assert_eq!(stem("is"), "is");
        let longest = format!("a{}ing", "x".repeat(60));
        assert_eq!(stem(&longest), format!("a{}", "x".repeat(59)));
        let too_long = format!("a{}ing", "x".repeat(61));
        assert_eq!(stem(&too_long), too_long);
        assert_eq!(stem("grüßes"), "grüße");
        // U+5AAA is E5 AA AA in UTF-8: its doubled last byte is not undoubled, which would
        // cut the character in two.
        assert_eq!(stem("a\u{5aaa}ed"), "a\u{5aaa}");
    }
}
