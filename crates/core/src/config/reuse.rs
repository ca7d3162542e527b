//! How reuse distances and miss-rate curves are measured: exactly, sampled (SHARDS, Waldspurger
//! et al. 2015), not at all, or chosen by how the trace is read (`auto`).
//!
//! Exact distances keep a record of every distinct line, which for a trace streamed from disk
//! is what grows without bound and what costs the most time on a large footprint; a sample
//! of the lines keeps a fixed number. Hits, misses, miss classes and every count stay exact in
//! every mode: only the reuse histograms and the miss-rate curve are sampled
//! (`crate::reuse::SampledTracker`).

use serde::{Deserialize, Serialize};

use super::choice::{self, Choice, Entry, Form};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReuseMode {
    /// Exact for a trace held whole, sampled for one streamed from disk.
    #[default]
    Auto,
    Exact,
    Sampled,
    Off,
}

impl ReuseMode {
    /// The mode that runs: `auto` made exact or sampled by whether the trace is `streamed`.
    pub fn resolve(self, streamed: bool) -> ReuseMode {
        match self {
            ReuseMode::Auto if streamed => ReuseMode::Sampled,
            ReuseMode::Auto => ReuseMode::Exact,
            m => m,
        }
    }

    /// Whether reuse distances are measured at all.
    pub fn is_on(self) -> bool {
        self != ReuseMode::Off
    }

    pub fn name(self) -> &'static str {
        choice::entry_of(&self).map_or("?", |e| e.name)
    }
}

impl Choice for ReuseMode {
    const WHAT: &'static str = "reuse mode";
    const ENTRIES: &'static [Entry<ReuseMode>] = &[
        Entry {
            name: "auto",
            aliases: &["on"],
            label: "auto",
            description: "exact for a trace held whole, sampled for one streamed from disk",
            form: Form::Plain(ReuseMode::Auto),
        },
        Entry {
            name: "exact",
            aliases: &[],
            label: "exact",
            description: "every distance exact; memory grows with the distinct lines",
            form: Form::Plain(ReuseMode::Exact),
        },
        Entry {
            name: "sampled",
            aliases: &["shards"],
            label: "sampled",
            description:
                "a fixed-size sample of the lines, chosen by a hash (Waldspurger et al. 2015): \
                 exact while the trace touches few lines, then an estimate with its expected error",
            form: Form::Plain(ReuseMode::Sampled),
        },
        Entry {
            name: "off",
            aliases: &[],
            label: "off",
            description: "no reuse distances or miss-rate curve (miss classes stay exact)",
            form: Form::Plain(ReuseMode::Off),
        },
    ];
}

/// A configuration file may say `true` or `false` (what `reuse` was before it had modes:
/// `auto` and `off`) or a mode's name.
impl<'de> Deserialize<'de> for ReuseMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Flag(bool),
            Name(String),
        }
        match Written::deserialize(d)? {
            Written::Flag(true) => Ok(ReuseMode::Auto),
            Written::Flag(false) => Ok(ReuseMode::Off),
            Written::Name(n) => choice::parse(&n).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_old_flag_and_the_modes() {
        let read = |s: &str| serde_json::from_str::<ReuseMode>(s).map_err(|e| e.to_string());
        assert_eq!(read("true"), Ok(ReuseMode::Auto));
        assert_eq!(read("false"), Ok(ReuseMode::Off));
        assert_eq!(read("\"sampled\""), Ok(ReuseMode::Sampled));
        assert_eq!(read("\"exact\""), Ok(ReuseMode::Exact));
        let e = read("\"nearly\"").unwrap_err();
        assert!(e.contains("expected auto, exact, sampled or off"), "{e}");
        assert_eq!(
            serde_json::to_string(&ReuseMode::Sampled).unwrap(),
            "\"sampled\""
        );
    }

    #[test]
    fn auto_is_exact_held_whole_and_sampled_streamed() {
        assert_eq!(ReuseMode::Auto.resolve(false), ReuseMode::Exact);
        assert_eq!(ReuseMode::Auto.resolve(true), ReuseMode::Sampled);
        assert_eq!(ReuseMode::Exact.resolve(true), ReuseMode::Exact);
        assert_eq!(ReuseMode::Off.resolve(true), ReuseMode::Off);
    }
}
