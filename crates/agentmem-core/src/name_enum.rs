//! [`name_enum!`](crate::name_enum): fieldless enums that are named by a fixed spelling per
//! variant (memory kinds, backends, URL options), declared once with their spellings instead of
//! a hand-written `ALL`, `as_str` match, `Display` and `FromStr` each.

use crate::error::{Error, Result};

/// Declares a fieldless enum whose variants each have a name, with
///
/// - `pub const ALL: [Enum; N]`: every variant, in declaration order;
/// - `pub fn as_str(self) -> &'static str`: the variant's name;
/// - `Display`, writing `as_str`;
/// - `FromStr` (only with a `from_str(...)` line after the enum), reading a name back:
///   `from_str("what")` takes the exact spellings, `from_str("what", ignore_ascii_case)` any
///   ASCII case. Anything else is an [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) error naming
///   `what`, the input (its first 40 characters) and the valid names.
///
/// Each variant is written `Variant = "name"`, optionally followed by aliases that `FromStr`
/// also accepts (`On = "on" | "true" | "yes"`); `as_str` and `Display` give the first name.
/// The enum's attributes (derives, `serde`, `non_exhaustive`) and the variants' doc comments
/// and attributes (`#[default]`) are kept as written. A type that parses differently keeps a
/// hand-written `FromStr` and leaves out the `from_str` line.
///
/// ```
/// use agentmem_core::ErrorKind;
///
/// agentmem_core::name_enum! {
///     /// How a light is set.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Light {
///         /// Always off.
///         Off = "off" | "0",
///         /// Always on.
///         On = "on" | "1",
///         /// On when someone is there.
///         Motion = "motion",
///     }
///     from_str("light setting", ignore_ascii_case);
/// }
///
/// assert_eq!(Light::ALL, [Light::Off, Light::On, Light::Motion]);
/// assert_eq!(Light::On.as_str(), "on");
/// assert_eq!(Light::Motion.to_string(), "motion");
/// assert_eq!("MOTION".parse::<Light>()?, Light::Motion);
/// assert_eq!("1".parse::<Light>()?, Light::On);
/// let err = "dim".parse::<Light>().unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidInput);
/// assert_eq!(
///     err.message(),
///     r#"unknown light setting "dim"; valid values are off, on, motion"#
/// );
/// # Ok::<(), agentmem_core::Error>(())
/// ```
#[macro_export]
macro_rules! name_enum {
    (
        $(#[$attr:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_attr:meta])*
                $variant:ident = $spelling:literal $(| $alias:literal)*
            ),+ $(,)?
        }
        $(from_str $from_str_args:tt;)?
    ) => {
        $(#[$attr])*
        $vis enum $name {
            $(
                $(#[$variant_attr])*
                $variant,
            )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($name::$variant),+].len()] = [$($name::$variant),+];

            /// The variant's name, as `Display` writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $spelling,)+
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $crate::name_enum!(
            @from_str $name [$($variant = $spelling $(| $alias)*),+] $($from_str_args)?
        );
    };
    // Without a `from_str(...)` line: no `FromStr`.
    (@from_str $name:ident [$($variants:tt)*]) => {};
    (
        @from_str $name:ident [$($variant:ident = $spelling:literal $(| $alias:literal)*),+]
        ($what:literal $(, $case:ident)?)
    ) => {
        impl ::core::str::FromStr for $name {
            type Err = $crate::Error;

            fn from_str(input: &str) -> $crate::Result<Self> {
                $crate::name_enum::parse_name(
                    $what,
                    input,
                    &[$(($spelling, $name::$variant), $(($alias, $name::$variant),)*)+],
                    &[$($spelling),+],
                    $crate::name_enum!(@ignore_ascii_case $($case)?),
                )
            }
        }
    };
    (@ignore_ascii_case) => {
        false
    };
    (@ignore_ascii_case ignore_ascii_case) => {
        true
    };
}

/// What `FromStr` from [`name_enum!`](crate::name_enum) does: the value of the first of
/// `spellings` that `input` matches (exactly, or in any ASCII case), else an `InvalidInput`
/// error naming `what`, the input and the `valid` names.
#[doc(hidden)]
pub fn parse_name<T: Copy>(
    what: &str, input: &str, spellings: &[(&str, T)], valid: &[&str], ignore_ascii_case: bool,
) -> Result<T> {
    spellings
        .iter()
        .find(|(spelling, _)| {
            if ignore_ascii_case {
                spelling.eq_ignore_ascii_case(input)
            } else {
                *spelling == input
            }
        })
        .map(|&(_, value)| value)
        .ok_or_else(|| {
            // The input may be a whole hostile URL parameter: quote only its start.
            let shown: String = input.chars().take(40).collect();
            Error::invalid_input(format!(
                "unknown {what} {shown:?}; valid values are {}",
                valid.join(", ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use crate::ErrorKind;

    crate::name_enum! {
        /// Exact spellings only.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Mode {
            /// The first.
            VerifyCa = "verify-ca",
            /// The second.
            Off = "off" | "0",
        }
        from_str("mode");
    }

    #[test]
    fn exact_spellings_and_aliases_parse_case_matters() {
        assert_eq!(Mode::ALL, [Mode::VerifyCa, Mode::Off]);
        assert_eq!("verify-ca".parse::<Mode>().ok(), Some(Mode::VerifyCa));
        assert_eq!("0".parse::<Mode>().ok(), Some(Mode::Off));
        assert_eq!(Mode::Off.to_string(), "off");
        let err = "OFF".parse::<Mode>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            err.message(),
            r#"unknown mode "OFF"; valid values are verify-ca, off"#
        );
    }

    #[test]
    fn a_long_input_is_quoted_only_in_part() {
        let long = "x".repeat(1000);
        let err = long.parse::<Mode>().unwrap_err();
        assert!(err.message().contains(&format!("{:?}", "x".repeat(40))));
        assert!(!err.message().contains(&"x".repeat(41)));
    }
}
