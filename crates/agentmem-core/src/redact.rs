//! Keeping secrets out of messages and logs.

/// `url` with any password replaced by `***`, for error messages, `Debug` output and logs.
/// A string that does not parse as a URL is returned unchanged (it has no password field to hide).
///
/// ```
/// use agentmem_core::redact_url;
/// assert_eq!(redact_url("postgres://me:hunter2@db/app"), "postgres://me:***@db/app");
/// assert_eq!(redact_url("sqlite::memory:"), "sqlite::memory:");
/// ```
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // Cannot fail: a URL that has a password can have it replaced.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
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
}
