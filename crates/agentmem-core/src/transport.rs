//! The transport rule of clients that send texts and an API key to a model server (an
//! embedding server, a summarizer): `https://`, or plain `http://` only to the local machine.

use url::{Host, Url};

use crate::{redact_url, Error, Result};

/// Refuses to send `payload` and the API key in clear text: `url` must use `https://`,
/// except to a loopback address (`localhost`, `127.0.0.0/8`, `[::1]`: a local model
/// server), which may use plain `http://`.
///
/// `what` names the URL in errors (`"embedding server URL"`) and `payload` says what would
/// travel (`"the texts"`). Errors show `url` with its credentials hidden ([`redact_url`]).
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when `url` does not parse or
/// its scheme is neither `https` nor `http` to a loopback address.
pub fn check_transport(url: &str, what: &str, payload: &str) -> Result<()> {
    let parsed = Url::parse(url).map_err(|e| {
        Error::invalid_input(format!("invalid {what} {}", redact_url(url))).with_source(e)
    })?;
    let loopback = match parsed.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(Error::invalid_input(format!(
            "the {what} {} must use https:// (plain http:// only to a loopback address): \
             {payload} and the API key would travel in clear text",
            redact_url(url)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::check_transport;
    use crate::ErrorKind;

    fn check(url: &str) -> crate::Result<()> {
        check_transport(url, "server URL", "the texts")
    }

    #[test]
    fn https_anywhere_and_http_only_to_loopback() {
        for url in [
            "https://api.example.com/v1",
            "http://localhost:8080/v1",
            "http://LOCALHOST/v1",
            "http://127.0.0.1:11434",
            "http://127.8.9.10",
            "http://[::1]:8080/v1",
        ] {
            assert!(check(url).is_ok(), "{url}");
        }
        for url in [
            "http://api.example.com/v1",
            "http://10.1.2.3:8080",
            "http://[::2]/v1",
            "http://localhost.example.com",
            "ftp://localhost/v1",
        ] {
            let err = check(url).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
            assert!(err.to_string().contains("must use https://"), "{err}");
        }
    }

    #[test]
    fn errors_name_the_url_without_credentials() {
        let err = check("http://user:hunter2@10.1.2.3/v1").unwrap_err();
        assert!(err.to_string().contains("the server URL"), "{err}");
        assert!(
            err.to_string().contains("the texts and the API key"),
            "{err}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = check("not a url").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.message().starts_with("invalid server URL"), "{err}");
    }
}
