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

/// POSTs `body` as JSON to `url`, with `Authorization: Bearer {api_key}` when a key is given,
/// and returns the reply's status and text (any status: what a status means is the caller's
/// to say). Blocking; give up after `timeout`. Check the URL with [`check_transport`] first.
///
/// # Errors
///
/// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when the server cannot be reached
/// or its reply read; `shown` names the server in the message (give it redacted).
#[cfg(feature = "http-client")]
pub fn post_json(
    url: &str, shown: &str, api_key: Option<&str>, body: &serde_json::Value,
    timeout: std::time::Duration,
) -> Result<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(url).header("Content-Type", "application/json");
    if let Some(key) = api_key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request
        .send_json(body)
        .map_err(|e| Error::unavailable(format!("cannot reach {shown}")).with_source(e))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().map_err(|e| {
        Error::unavailable(format!("cannot read the reply of {shown}")).with_source(e)
    })?;
    Ok((status, text))
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
