//! Keeping secrets out of messages and logs.

use std::ops::Range;

/// The option names whose values are secrets, as drivers spell them: [`redact_url`] and
/// [`redact_secrets_in`] hide the value of each, in a URL's query or a libpq keyword string.
/// A name matches in any ASCII case, after percent-decoding in a query (`pass%77ord=` is
/// `password=` to a driver).
pub const SECRET_OPTIONS: &[&str] = &[
    "password",
    "sslpassword",
    "passfile",
    "api_key",
    "apikey",
    "access_token",
    "key",
    // MongoDB: the client key's passphrase, and credentials such as `AWS_SESSION_TOKEN:…`.
    "tlsCertificateKeyFilePassword",
    "authMechanismProperties",
    "secret",
    "token",
];

/// What a secret is replaced with.
const HIDDEN: &str = "***";

/// `url` with every password and secret option replaced by `***`, for error messages, `Debug`
/// output and logs.
///
/// It hides conservatively everything a reader could take for a secret, whether or not the
/// text is a well-formed URL (a driver may accept, or print, what a URL parser refuses):
///
/// - the password of the user info: everything between the first `:` after `scheme://` and
///   the *last* `@`, since a raw `@`, `#`, `?` or `/` in a password moves the authority's end for
///   one reader and not for another (`postgres://u:1?x@h/db` is host `u`, port `1` to the
///   `url` crate, and password `1?x` to a reader splitting at the `@`); multi-host URLs
///   (`postgres://u:pw@h1:5432,h2:5433/db`, `mongodb://u:pw@a,b/`) included;
/// - the value of every secret option (`password`, `sslpassword`,
///   `tlsCertificateKeyFilePassword`, `authMechanismProperties`, `api_key`, …) in a query,
///   in any case and percent-encoding of its name, up to the next `&`;
/// - in a libpq keyword string (`host=db password='a b'`), read as libpq reads it (quoted
///   values, backslash escapes), the values of the secret keywords.
///
/// Anything else is kept as it is; hiding more than the secret is accepted, hiding less never.
///
/// ```
/// use agentmem_core::redact_url;
/// assert_eq!(redact_url("postgres://me:hunter2@db/app"), "postgres://me:***@db/app");
/// assert_eq!(redact_url("postgres://u:pw@h1:5432,h2:5433/db"), "postgres://u:***@h1:5432,h2:5433/db");
/// assert_eq!(redact_url("redis://:a#b?c@h/0"), "redis://:***@h/0");
/// assert_eq!(redact_url("host=db user=u password=pw"), "host=db user=u password=***");
/// assert_eq!(redact_url("sqlite::memory:"), "sqlite::memory:");
/// ```
pub fn redact_url(url: &str) -> String {
    if !has_authority(url) {
        if let Some(redacted) = redact_keywords(url) {
            return redacted;
        }
    }
    // Both readings of the original text: a secret option may sit in what looks like the
    // user info, and a password may hold what looks like an option.
    let mut hidden = secret_option_values(url);
    hidden.extend(password_span(url));
    hide(url, hidden)
}

/// `text`, a message about `url` from elsewhere (a driver's error), with every secret of `url`
/// hidden as `***`: each text [`redact_url`] hides (the password, the secret options' values,
/// a keyword string's secret values), as written and percent-decoded, and each of their parts
/// between `,` and `:` (drivers split credential lists such as MongoDB's
/// `authMechanismProperties=AWS_SESSION_TOKEN:…,SERVICE_NAME:…` there and quote one entry).
/// A short secret may hide more of the message than itself; hiding less never.
///
/// ```
/// use agentmem_core::redact_secrets_in;
/// let url = "mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:t0k3n,x";
/// assert_eq!(
///     redact_secrets_in("bad entry x in AWS_SESSION_TOKEN:t0k3n", url),
///     "bad entry *** in ***"
/// );
/// assert_eq!(redact_secrets_in("cannot reach h", "redis://:p%40ss@h/0"), "cannot reach h");
/// assert_eq!(redact_secrets_in("bad p@ss", "redis://:p%40ss@h/0"), "bad ***");
/// ```
pub fn redact_secrets_in(text: &str, url: &str) -> String {
    /// `text`, its entries and their parts.
    fn pieces(text: &str) -> impl Iterator<Item = &str> {
        let entries = text.split(',');
        std::iter::once(text)
            .chain(entries)
            .chain(text.split([',', ':']))
    }
    let mut needles: Vec<String> = Vec::new();
    for secret in secrets(url) {
        // Decoded whole, then split, and split as written, then decoded.
        let decoded = [
            percent_decode_lossy(&secret, false),
            percent_decode_lossy(&secret, true),
        ];
        for whole in decoded.iter().map(String::as_str).chain([secret.as_str()]) {
            needles.extend(pieces(whole).map(str::to_string));
        }
        for piece in pieces(&secret) {
            needles.push(percent_decode_lossy(piece, false));
            needles.push(percent_decode_lossy(piece, true));
        }
    }
    let mut hidden = Vec::new();
    for needle in needles.iter().filter(|n| !n.is_empty()) {
        hidden.extend(
            text.match_indices(needle.as_str())
                .map(|(at, found)| at..at + found.len()),
        );
    }
    hide(text, hidden)
}

/// The texts [`redact_url`] hides in `url`, as written (a keyword string's values also
/// unquoted and unescaped, as libpq reads them).
fn secrets(url: &str) -> Vec<String> {
    if !has_authority(url) {
        if let Some(pairs) = keyword_pairs(url) {
            return pairs
                .into_iter()
                .filter(|(name, _)| is_secret_keyword(&url[name.clone()]))
                .flat_map(|(_, value)| {
                    let value = &url[value];
                    [value.to_string(), unquote_keyword_value(value)]
                })
                .collect();
        }
    }
    let mut spans = secret_option_values(url);
    spans.extend(password_span(url));
    spans
        .into_iter()
        .map(|span| url[span].to_string())
        .collect()
}

/// `text` with its `%XX` escapes decoded (and, for a query's form encoding, `+` read as a
/// space), bytes that are not UTF-8 replaced.
fn percent_decode_lossy(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let hex = |at: usize| {
        let digit = |b: &u8| char::from(*b).to_digit(16);
        let high = bytes.get(at).and_then(digit)?;
        let low = bytes.get(at + 1).and_then(digit)?;
        u8::try_from(high * 16 + low).ok()
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match (b, hex(i + 1)) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a reader could end the password of `url` before its authority's last `@`: what
/// [`redact_url`] hides as the password holds a raw `/`, `?` or `#`. A parser's host, port,
/// path or options of such a URL may hold part of the password, so a message about it shows
/// [`redact_url`] of the whole URL, and neither the parsed parts nor a driver's message. (A
/// raw `@` alone is read alike by every reader that ends the user info at the last `@`; one
/// that ends it at the first `@`, as tokio-postgres does, needs a check of its own.)
///
/// ```
/// use agentmem_core::password_is_ambiguous;
/// assert!(password_is_ambiguous("redis://:a/b@h/0"));
/// assert!(!password_is_ambiguous("redis://:a@b@h/0"));
/// assert!(!password_is_ambiguous("redis://:a%2Fb@h/0"));
/// assert!(!password_is_ambiguous("redis://h/0?tls_ca=/ca@1.pem"));
/// ```
pub fn password_is_ambiguous(url: &str) -> bool {
    password_span(url).is_some_and(|span| url[span].contains(['/', '?', '#']))
}

/// `text` with each of the byte ranges `hidden` (overlapping or not) replaced by `***`.
fn hide(text: &str, mut hidden: Vec<Range<usize>>) -> String {
    hidden.sort_by_key(|range| range.start);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut ranges = hidden.into_iter().peekable();
    while let Some(mut range) = ranges.next() {
        while let Some(next) = ranges.next_if(|next| next.start <= range.end) {
            range.end = range.end.max(next.end);
        }
        out.push_str(&text[copied..range.start]);
        out.push_str(HIDDEN);
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether `text` starts with `scheme://`.
fn has_authority(text: &str) -> bool {
    scheme_len(text).is_some_and(|len| text[len + 1..].starts_with("//"))
}

/// The length of the scheme `text` starts with (`[A-Za-z][A-Za-z0-9+.-]*` before a `:`).
fn scheme_len(text: &str) -> Option<usize> {
    let len = text.find(':')?;
    let scheme = &text.as_bytes()[..len];
    let valid = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
    valid.then_some(len)
}

/// Where the password may be: between the first `:` after `scheme://` (the first `:` of the
/// text without one) and the last `@` of the text.
fn password_span(text: &str) -> Option<Range<usize>> {
    let start = match has_authority(text) {
        true => text.find("://").map_or(0, |i| i + 3),
        false => 0,
    };
    let rest = &text[start..];
    let at = rest.rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some(start + colon + 1..start + at)
}

/// Whether the option or keyword name `raw` (percent-encoded in a query) names a secret.
fn is_secret(raw: &str) -> bool {
    let name: String = url::form_urlencoded::parse(raw.as_bytes())
        .map(|(key, _)| key.into_owned())
        .collect();
    SECRET_OPTIONS
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret))
}

/// Where the values of secret options written `name=value` are, where a name starts the text
/// or follows white space, `?`, `&` or `;`. A value ends at the next `&` in a URL (a `#` or
/// `;` may be part of it), and at the end of the text otherwise (a keyword string libpq would
/// refuse, so where a value ends is unknown).
fn secret_option_values(text: &str) -> Vec<Range<usize>> {
    let value_ends_at_ampersand = has_authority(text);
    let mut values = Vec::new();
    let mut name_start = 0;
    while name_start < text.len() {
        let name_end = text[name_start..]
            .find(|c: char| c == '=' || is_separator(c))
            .map_or(text.len(), |i| name_start + i);
        let next = if text[name_end..].starts_with('=') && is_secret(&text[name_start..name_end]) {
            let value_start = name_end + 1;
            let value_end = match value_ends_at_ampersand {
                true => text[value_start..]
                    .find('&')
                    .map_or(text.len(), |i| value_start + i),
                false => text.len(),
            };
            values.push(value_start..value_end);
            value_end
        } else {
            name_end
        };
        // The next name starts after the next separator.
        name_start = match text[next..].find(is_separator) {
            Some(i) => next + i + text[next + i..].chars().next().map_or(1, char::len_utf8),
            None => text.len(),
        };
    }
    values
}

/// Whether `c` separates options (`?`, `&`, `;` in a URL; white space in a keyword string).
fn is_separator(c: char) -> bool {
    matches!(c, '?' | '&' | ';') || c.is_whitespace()
}

/// A libpq keyword string (`host=db password='a b'`) with the values of its secret keywords
/// hidden, read as libpq reads it (see [`keyword_pairs`]). `None` when the text is not one.
fn redact_keywords(text: &str) -> Option<String> {
    let hidden = keyword_pairs(text)?
        .into_iter()
        .filter(|(name, _)| is_secret_keyword(&text[name.clone()]))
        .map(|(_, value)| value)
        .collect();
    Some(hide(text, hidden))
}

/// Where the names and values of a libpq keyword string are, read as libpq reads it:
/// `name = value` pairs separated by white space, a value either quoted with `'` or ending at
/// white space, `\` escaping the next character in both. `None` when the text is not one (no
/// pair, or a name without `=`).
fn keyword_pairs(text: &str) -> Option<Vec<(Range<usize>, Range<usize>)>> {
    let mut pairs = Vec::new();
    let mut at = 0;
    loop {
        at = text.len() - text[at..].trim_start().len();
        let rest = &text[at..];
        if rest.is_empty() {
            break;
        }
        let name_len = rest.find(|c: char| c == '=' || c.is_whitespace())?;
        if name_len == 0 {
            return None;
        }
        let after_name = rest[name_len..].trim_start();
        let after_equals = after_name.strip_prefix('=')?.trim_start();
        let value_start = text.len() - after_equals.len();
        let value_end = value_start + keyword_value_len(after_equals);
        pairs.push((at..at + name_len, value_start..value_end));
        at = value_end;
    }
    (!pairs.is_empty()).then_some(pairs)
}

/// Whether the keyword `name` of a keyword string names a secret.
fn is_secret_keyword(name: &str) -> bool {
    SECRET_OPTIONS
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret))
}

/// A keyword value as libpq reads it: without its quotes, each `\` escape replaced by the
/// character it escapes.
fn unquote_keyword_value(value: &str) -> String {
    let inner = match value.strip_prefix('\'') {
        Some(quoted) => quoted.strip_suffix('\'').unwrap_or(quoted),
        None => value,
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.extend(match c {
            '\\' => chars.next(),
            c => Some(c),
        });
    }
    out
}

/// The length of the keyword value `text` starts with: a quoted value up to its closing `'`
/// (the whole text when there is none), or up to the first unescaped white space.
fn keyword_value_len(text: &str) -> usize {
    let quoted = text.starts_with('\'');
    let mut chars = text.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return i + 1,
            c if !quoted && c.is_whitespace() => return i,
            _ => {}
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `given` redacts to `shown`, in which no `pw` (every secret of these cases) is left.
    fn assert_redacts(given: &str, shown: &str) {
        let redacted = redact_url(given);
        assert_eq!(redacted, shown, "{given:?}");
        assert!(!redacted.contains("pw"), "{redacted}");
    }

    #[test]
    fn passwords_are_hidden_and_the_rest_kept() {
        assert_eq!(
            redact_url("redis://:s3cret@127.0.0.1:6379/0?prefix=a"),
            "redis://:***@127.0.0.1:6379/0?prefix=a"
        );
        assert_eq!(redact_url("redis://user@h/"), "redis://user@h/");
        assert_eq!(redact_url("file:///tmp/x"), "file:///tmp/x");
        assert_eq!(
            redact_url("sqlite:///tmp/a b/x.db"),
            "sqlite:///tmp/a b/x.db"
        );
        assert_eq!(redact_url("sqlite:relative.db"), "sqlite:relative.db");
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(redact_url(""), "");
    }

    #[test]
    fn every_form_the_backends_accept_is_redacted() {
        for (given, shown) in [
            (
                "postgres://u:pw@h1:5432,h2:5433/db",
                "postgres://u:***@h1:5432,h2:5433/db",
            ),
            (
                "mongodb://u:p%40ss@a:27017,b:27018/db?replicaSet=rs",
                "mongodb://u:***@a:27017,b:27018/db?replicaSet=rs",
            ),
            ("rediss://:pw/with/slash@h:6380/0", "rediss://:***@h:6380/0"),
            (
                "host=db user=u password=pw dbname=x",
                "host=db user=u password=*** dbname=x",
            ),
            (
                "host=db password='a b c' user=u",
                "host=db password=*** user=u",
            ),
            (
                "postgres://db/app?user=u&password=pw&sslmode=require",
                "postgres://db/app?user=u&password=***&sslmode=require",
            ),
            (
                "postgres://db/app?PASSWORD=pw&sslpassword=k",
                "postgres://db/app?PASSWORD=***&sslpassword=***",
            ),
            ("user=u mypassword=x", "user=u mypassword=x"),
            (
                "https://gw.example/v1?api_key=pw1&key=pw2&sslkey=/k",
                "https://gw.example/v1?api_key=***&key=***&sslkey=/k",
            ),
        ] {
            assert_redacts(given, shown);
        }
    }

    /// A raw `#`, `?`, `/` or `@` in a password hides everything up to the last `@`, however
    /// a parser would split the text.
    #[test]
    fn raw_delimiters_in_a_password_are_hidden() {
        for (given, shown) in [
            ("redis://:a#pw@h/0", "redis://:***@h/0"),
            (
                "redis+cluster://u:a?pw@h:1,g:2/",
                "redis+cluster://u:***@h:1,g:2/",
            ),
            ("postgres://u:1?pw@h/db", "postgres://u:***@h/db"),
            ("postgresql://u:a/pw@b@h/db", "postgresql://u:***@h/db"),
            (
                "mongodb+srv://u:#?/@pw@c.example/",
                "mongodb+srv://u:***@c.example/",
            ),
            ("mongodb://u: pw #@h/", "mongodb://u:***@h/"),
            ("postgres:/u:pw@h/db", "postgres:***@h/db"),
            ("u:pw@h", "u:***@h"),
        ] {
            assert_redacts(given, shown);
        }
    }

    #[test]
    fn secret_options_are_hidden_in_any_spelling() {
        for (given, shown) in [
            (
                "mongodb://h/?tlsCertificateKeyFilePassword=pw&tls=true",
                "mongodb://h/?tlsCertificateKeyFilePassword=***&tls=true",
            ),
            (
                "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:pw",
                "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=***",
            ),
            ("postgres://h/db?pass%77ord=pw", "postgres://h/db?pass%77ord=***"),
            ("postgres://h/db?password=a#pw;pw&x=1", "postgres://h/db?password=***&x=1"),
            ("postgres://h/db?x=1;Password=pw", "postgres://h/db?x=1;Password=***"),
            // A raw `@` in an option's value: the option is hidden as well as the "user info".
            (
                "postgres://u@h:1/db?password=pw@pw&x=1",
                "postgres://u@h:***&x=1",
            ),
            ("redis://u:pw?password=pw@h/", "redis://u:***"),
        ] {
            assert_redacts(given, shown);
        }
    }

    /// The MongoDB driver refuses `authMechanismProperties=D05pw` quoting the entry ("each
    /// entry in authMechanismProperties must be a colon-separated key-value pair, got D05pw"):
    /// a driver's message loses every secret of the URL, whole or an entry of it, as written
    /// or decoded.
    #[test]
    fn driver_messages_lose_every_secret_of_the_url() {
        for (url, message, shown) in [
            (
                "mongodb://h/?authMechanismProperties=D05pw1",
                "each entry in authMechanismProperties must be a colon-separated key-value pair, got D05pw1",
                "each entry in authMechanismProperties must be a colon-separated key-value pair, got ***",
            ),
            (
                "mongodb://h/?AUTHMECHANISMPROPERTIES=AWS_SESSION_TOKEN:pw%2C1,pw2",
                "got pw2; token pw,1; entry AWS_SESSION_TOKEN:pw,1",
                "got ***; token ***; entry ***",
            ),
            (
                "mongodb://u:p%20w@h/?tlsCertificateKeyFilePassword=a+pw",
                "bad password p w for key a pw or a+pw",
                "bad password *** for key *** or ***",
            ),
            (
                r"host=h password='a\'pw'",
                r"password a'pw or 'a\'pw' refused",
                "password *** or *** refused",
            ),
            ("redis://h/0?prefix=pw", "prefix pw", "prefix pw"),
        ] {
            let redacted = redact_secrets_in(message, url);
            assert_eq!(redacted, shown, "{url}");
        }
    }

    #[test]
    fn keyword_strings_are_read_as_libpq_reads_them() {
        for (given, shown) in [
            (
                r"host=db password = 'a\' pw b' user=u",
                "host=db password = *** user=u",
            ),
            (r"password=a\ pw user=u", "password=*** user=u"),
            ("password='pw", "password=***"),
            ("sslpassword=pw\tdbname=x  ", "sslpassword=***\tdbname=x  "),
            // Not a keyword string libpq accepts: everything after the secret's name is hidden.
            ("password=pw user", "password=***"),
        ] {
            assert_redacts(given, shown);
        }
    }
}
