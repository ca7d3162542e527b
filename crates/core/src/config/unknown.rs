//! A name that is not one of those a setting takes: a preset, a compatibility mode, a
//! timing rule or one of its values. Like [`Invalid`](super::Invalid), typed so that the CLI,
//! the app and configuration files report the same thing and tests can match on it.

/// A name the configuration does not know, with the names it expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unknown {
    #[error("unknown preset `{found}`: expected one of {}", expected.join(", "))]
    Preset {
        found: String,
        expected: Vec<&'static str>,
    },
    #[error("unknown compatibility mode `{found}`: expected {}", expected.join(", "))]
    Compat {
        found: String,
        expected: Vec<&'static str>,
    },
    #[error("unknown rule `{found}`: expected one of {}", expected.join(", "))]
    Rule {
        found: String,
        expected: Vec<&'static str>,
    },
    #[error("rule {rule}: unknown value `{found}`: expected {}", expected.join(" or "))]
    RuleValue {
        rule: &'static str,
        found: String,
        expected: Vec<&'static str>,
    },
}

/// For the setters that report a message (the CLI's flags and `sweep --vary` keys).
impl From<Unknown> for String {
    fn from(e: Unknown) -> String {
        e.to_string()
    }
}
