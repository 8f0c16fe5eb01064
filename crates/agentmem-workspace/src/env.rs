//! The `AGENTMEM_GLOBAL_SESSIONS` switch.

/// The environment variable that turns workspace scoping off: when it is `1`, `true` or `yes`
/// (in any case), every workspace is [`WorkspaceId::Global`](crate::WorkspaceId::Global) and
/// same-named agents share one history everywhere, as before workspace scoping.
pub const GLOBAL_SESSIONS_ENV: &str = "AGENTMEM_GLOBAL_SESSIONS";

/// Whether `value` switches a flag on: `1`, `true` or `yes`, compared case-insensitively.
///
/// Anything else, including `on`, ` true` (with a space) and the empty string, is off; this is
/// the set PraisonAI accepts for `PRAISONAI_GLOBAL_SESSIONS`, so a value means the same to both.
///
/// ```
/// use agentmem_workspace::is_truthy;
/// assert!(is_truthy("TRUE") && is_truthy("Yes") && is_truthy("1"));
/// assert!(!is_truthy("0") && !is_truthy("on") && !is_truthy(""));
/// ```
pub fn is_truthy(value: &str) -> bool {
    ["1", "true", "yes"]
        .iter()
        .any(|on| value.eq_ignore_ascii_case(on))
}

/// Whether [`GLOBAL_SESSIONS_ENV`] is set to a [truthy](is_truthy) value in this process.
///
/// A value that is not valid Unicode counts as off.
pub fn global_sessions_requested() -> bool {
    std::env::var(GLOBAL_SESSIONS_ENV)
        .map(|v| is_truthy(&v))
        .unwrap_or(false)
}
