//! Keeping secrets out of messages and logs.

/// The keys whose values are secrets in a query string or a libpq keyword string.
const SECRET_KEYS: [&str; 7] = [
    "password",
    "sslpassword",
    "passfile",
    "api_key",
    "apikey",
    "access_token",
    "key",
];

/// `url` with every password replaced by `***`, for error messages, `Debug` output and logs.
///
/// It works on the text, so it also covers what a URL parser refuses: the user info of
/// multi-host URLs (`postgres://u:pw@h1:5432,h2:5433/db`, `mongodb://u:pw@a,b/`), a
/// `password=` query parameter, and libpq keyword strings (`host=db password=pw`, quoted
/// values too). Anything else is kept as it is.
///
/// ```
/// use agentmem_core::redact_url;
/// assert_eq!(redact_url("postgres://me:hunter2@db/app"), "postgres://me:***@db/app");
/// assert_eq!(redact_url("postgres://u:pw@h1:5432,h2:5433/db"), "postgres://u:***@h1:5432,h2:5433/db");
/// assert_eq!(redact_url("host=db user=u password=pw"), "host=db user=u password=***");
/// assert_eq!(redact_url("sqlite::memory:"), "sqlite::memory:");
/// ```
pub fn redact_url(url: &str) -> String {
    redact_parameters(&redact_user_info(url))
}

/// Hides what follows the first `:` of the user info: everything between `://` and the last
/// `@` before the query.
fn redact_user_info(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let before_query = rest.find(['?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..before_query].rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end + 3],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

/// Hides the values of [`SECRET_KEYS`] written `key=value`, after the start, a space, `?`, `&`
/// or `;`; a value ends at `&`, `;` or white space, or is quoted with `'`.
fn redact_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, key_len)) = next_secret(rest) {
        let value_start = start + key_len + 1;
        out.push_str(&rest[..value_start]);
        out.push_str("***");
        let value = &rest[value_start..];
        let value_len = match value.strip_prefix('\'') {
            Some(quoted) => quoted.find('\'').map_or(value.len(), |end| end + 2),
            None => value
                .find(|c: char| c == '&' || c == ';' || c.is_whitespace())
                .unwrap_or(value.len()),
        };
        rest = &value[value_len..];
    }
    out.push_str(rest);
    out
}

/// Where the next `secret=` starts in `text`, and the key's length.
fn next_secret(text: &str) -> Option<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    SECRET_KEYS
        .iter()
        .filter_map(|key| {
            let pattern = format!("{key}=");
            lower.match_indices(&pattern).find_map(|(i, _)| {
                let after_separator = i == 0
                    || lower[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| matches!(c, '?' | '&' | ';') || c.is_whitespace());
                after_separator.then_some((i, key.len()))
            })
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_the_rest_kept() {
        assert_eq!(
            redact_url("redis://:s3cret@127.0.0.1:6379/0?prefix=a"),
            "redis://:***@127.0.0.1:6379/0?prefix=a"
        );
        assert_eq!(redact_url("redis://user@h/"), "redis://user@h/");
        assert_eq!(redact_url("file:///tmp/x"), "file:///tmp/x");
        assert_eq!(redact_url("not a url"), "not a url");
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
            let redacted = redact_url(given);
            assert_eq!(redacted, shown, "{given}");
            assert!(!redacted.contains("pw"), "{redacted}");
        }
    }
}
