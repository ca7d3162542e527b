//! One registry per configuration choice (replacement policy, write policy, set index,
//! coalescer, warp-issue policy): each option declares itself once, in the file that
//! implements it, as an [`Entry`] (name, aliases, menu label, one-line description, and the
//! syntax of its parameters if it has any). The configuration parser ([`parse`]), the CLI's
//! `--help` ([`names`]), the app's menus (`app/config_panel`) and the docs table
//! (checked by `the_docs_list_every_choice`) all read these lists, so a new option is
//! added in one place.

/// One option of a choice.
pub struct Entry<T: 'static> {
    /// The name the CLI, `sweep --vary` and the docs use.
    pub name: &'static str,
    /// Other names the parser accepts.
    pub aliases: &'static [&'static str],
    /// What the app's menus show.
    pub label: &'static str,
    /// One line saying what it does (the menus' hover text, the docs).
    pub description: &'static str,
    pub form: Form<T>,
}

/// How an option is written.
pub enum Form<T: 'static> {
    /// Its name alone.
    Plain(T),
    /// `name:PARAMETERS`.
    Param {
        /// How the parameters are written, e.g. `LO-HI`.
        syntax: &'static str,
        /// Reads the parameters (the text after `name:`); the error says what was expected.
        parse: fn(&str) -> Result<T, String>,
        /// Whether a value is this option.
        is: fn(&T) -> bool,
        /// Writes a value's parameters (what `parse` reads back).
        params: fn(&T) -> String,
        /// The value the app's menu gives when this option is picked.
        default: fn() -> T,
    },
}

impl<T: Clone + PartialEq> Entry<T> {
    /// Whether `value` is this option.
    pub fn is(&self, value: &T) -> bool {
        match &self.form {
            Form::Plain(v) => v == value,
            Form::Param { is, .. } => is(value),
        }
    }

    /// This option's value (for an option with parameters, its default).
    pub fn value(&self) -> T {
        match &self.form {
            Form::Plain(v) => v.clone(),
            Form::Param { default, .. } => default(),
        }
    }

    /// How the option is written: `name`, or `name:SYNTAX`.
    pub fn usage(&self) -> String {
        match &self.form {
            Form::Plain(_) => self.name.to_string(),
            Form::Param { syntax, .. } => format!("{}:{syntax}", self.name),
        }
    }
}

/// A configuration choice and its registry.
pub trait Choice: Clone + PartialEq + Sized + 'static {
    /// What the choice is called in messages, e.g. `replacement`.
    const WHAT: &'static str;
    /// Every option, in the order menus and docs list them.
    const ENTRIES: &'static [Entry<Self>];
}

/// Why a name does not read as an option.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// No option has this name.
    #[error("unknown {what} `{found}`: expected {expected}")]
    Unknown {
        what: &'static str,
        found: String,
        expected: String,
    },
    /// The option is known but its parameters are not as its syntax says.
    #[error("{why} in `{found}`")]
    Parameters { found: String, why: String },
}

/// For the setters that report a message (the CLI's flags and `sweep --vary` keys).
impl From<ChoiceError> for String {
    fn from(e: ChoiceError) -> String {
        e.to_string()
    }
}

/// The entry of `value`.
pub fn entry_of<T: Choice>(value: &T) -> Option<&'static Entry<T>> {
    T::ENTRIES.iter().find(|e| e.is(value))
}

/// How `value` is written: its option's name, and `:PARAMETERS` for an option that has
/// them (what [`parse`] reads back).
pub fn name_of<T: Choice>(value: &T) -> String {
    match entry_of(value) {
        Some(Entry {
            name,
            form: Form::Param { params, .. },
            ..
        }) => format!("{name}:{}", params(value)),
        Some(e) => e.name.to_string(),
        None => "?".to_string(),
    }
}

/// Reads an option by name or alias, or `name:PARAMETERS`.
pub fn parse<T: Choice>(s: &str) -> Result<T, ChoiceError> {
    for e in T::ENTRIES {
        match &e.form {
            Form::Plain(v) => {
                if e.name == s || e.aliases.contains(&s) {
                    return Ok(v.clone());
                }
            }
            Form::Param { parse, .. } => {
                let params = std::iter::once(&e.name)
                    .chain(e.aliases)
                    .find_map(|n| s.strip_prefix(n)?.strip_prefix(':'));
                if let Some(p) = params {
                    return parse(p).map_err(|why| ChoiceError::Parameters {
                        found: s.to_string(),
                        why,
                    });
                }
            }
        }
    }
    Err(ChoiceError::Unknown {
        what: T::WHAT,
        found: s.to_string(),
        expected: names::<T>(" or "),
    })
}

/// Every option's usage, joined with commas and `last` before the last one.
pub fn names<T: Choice>(last: &str) -> String {
    let all: Vec<String> = T::ENTRIES.iter().map(Entry::usage).collect();
    match all.split_last() {
        Some((tail, [])) => tail.clone(),
        Some((tail, init)) => format!("{}{last}{tail}", init.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Coalescing, IssuePolicy, Replacement, SetIndex, WritePolicy};

    /// Every option parses back from its usage and from each alias, and names its entry.
    fn round_trips<T: Choice + std::fmt::Debug>() {
        for e in T::ENTRIES {
            let v = e.value();
            assert!(e.is(&v), "{}", e.name);
            assert_eq!(entry_of(&v).unwrap().name, e.name);
            assert_eq!(parse::<T>(&name_of(&v)).unwrap(), v, "{}", e.name);
            if let Form::Plain(_) = e.form {
                for n in std::iter::once(&e.name).chain(e.aliases) {
                    assert_eq!(parse::<T>(n).unwrap(), v, "{n}");
                }
            }
        }
        let err = parse::<T>("no-such-option").unwrap_err();
        assert!(matches!(err, ChoiceError::Unknown { what, .. } if what == T::WHAT));
        let err = err.to_string();
        assert!(err.starts_with(&format!("unknown {} `no-such-option`: expected ", T::WHAT)));
    }

    #[test]
    fn every_choice_parses_its_names_and_aliases() {
        round_trips::<Replacement>();
        round_trips::<WritePolicy>();
        round_trips::<SetIndex>();
        round_trips::<Coalescing>();
        round_trips::<IssuePolicy>();
        round_trips::<crate::config::ReuseMode>();
        round_trips::<crate::trace::Format>();
        assert_eq!(parse::<IssuePolicy>("2lvl").unwrap(), IssuePolicy::TwoLevel);
        assert_eq!(
            parse::<Coalescing>("bits:3-5").unwrap(),
            Coalescing::Bits { lo: 3, hi: 5 }
        );
        assert_eq!(
            parse::<SetIndex>("bits:7,8").unwrap(),
            SetIndex::Bits(vec![7, 8])
        );
        assert_eq!(
            parse::<Coalescing>("bits:9-3").unwrap_err().to_string(),
            "expected LO-HI with 0 <= LO <= HI < 64 in `bits:9-3`"
        );
    }

    /// The docs' flag table lists each choice's options as the registry does.
    #[test]
    fn the_docs_list_every_choice() {
        let docs = include_str!("../../../../docs/cli.md");
        for (flag, list) in [
            ("--replacement", names::<Replacement>(", ")),
            ("--write-policy", names::<WritePolicy>(", ")),
            ("--set-index", names::<SetIndex>(", ")),
            ("--coalescing", names::<Coalescing>(", ")),
            ("--schedule", names::<IssuePolicy>(", ")),
            ("--reuse", names::<crate::config::ReuseMode>(", ")),
        ] {
            let row = format!("| `{flag}` | {list} |");
            assert!(docs.contains(&row), "docs/cli.md should have the row {row}");
        }
        let formats: Vec<&str> = crate::trace::Format::ENTRIES
            .iter()
            .map(|e| e.name)
            .collect();
        let line = format!("`F` is one of `{}`", formats.join(" "));
        assert!(docs.contains(&line), "docs/cli.md should say {line}");
    }
}
