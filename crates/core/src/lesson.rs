//! Lessons: ready comparisons for teaching. Each is a short text, a kernel in the kernel
//! language (one of `kernels/`), and the settings of two or more panes to put side by side
//! (`lessons/*.toml`, `docs/lessons.md`). The app opens them from its Lessons menu with the
//! text beside the panes; `warpscope lesson NAME` prints the text and the panes' results.

use serde::Deserialize;

use crate::config::{self, SimConfig};

/// The lessons, in order: (name, TOML).
pub const LESSONS: [(&str, &str); 5] = [
    (
        "coalescing",
        include_str!("../../../lessons/1-coalescing.toml"),
    ),
    ("tiling", include_str!("../../../lessons/2-tiling.toml")),
    (
        "set-conflicts",
        include_str!("../../../lessons/3-set-conflicts.toml"),
    ),
    (
        "warp-scheduling",
        include_str!("../../../lessons/4-warp-scheduling.toml"),
    ),
    (
        "latency-and-mshrs",
        include_str!("../../../lessons/5-latency-and-mshrs.toml"),
    ),
];

/// The preset a lesson's pane starts from unless its settings name another.
pub const START_PRESET: &str = "fermi-16k";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LessonFile {
    title: String,
    text: String,
    /// The kernel of every pane that names none (a file of `kernels/`).
    source: Option<String>,
    /// Its params (`key=value` words) for every pane, before the pane's own.
    params: Option<String>,
    pane: Vec<PaneFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PaneFile {
    label: String,
    source: Option<String>,
    params: Option<String>,
    /// Configuration keys as `key=value` (the CLI's flag names), applied to the preset in order.
    #[serde(default)]
    settings: Vec<String>,
}

/// One side of a lesson's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct LessonPane {
    pub label: String,
    /// The kernel file's name (of `kernels/`) and its text.
    pub source_name: String,
    pub source: &'static str,
    /// `key=value` words for the kernel's params.
    pub params: String,
    pub config: SimConfig,
    /// The preset it started from.
    pub preset: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lesson {
    pub name: String,
    pub title: String,
    pub text: String,
    pub panes: Vec<LessonPane>,
}

/// The kernel-language file `name` of `kernels/`.
fn kernel_source(name: &str) -> Option<&'static str> {
    let stem = name.strip_suffix(".wsk").unwrap_or(name);
    crate::gen::source::example(stem)
}

/// Reads lesson `name` from its TOML `text`.
pub fn parse(name: &str, text: &str) -> Result<Lesson, String> {
    let f: LessonFile = toml::from_str(text).map_err(|e| format!("lesson {name}: {e}"))?;
    if f.pane.len() < 2 {
        return Err(format!(
            "lesson {name}: it needs at least two panes to compare"
        ));
    }
    let mut panes = Vec::new();
    for p in f.pane {
        let source_name = p
            .source
            .or_else(|| f.source.clone())
            .ok_or_else(|| format!("lesson {name}, pane `{}`: no kernel source", p.label))?;
        let source = kernel_source(&source_name).ok_or_else(|| {
            format!(
                "lesson {name}, pane `{}`: no kernel `{source_name}` in kernels/",
                p.label
            )
        })?;
        let params = [f.params.as_deref(), p.params.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let mut preset = START_PRESET.to_string();
        let mut cfg = config::preset(START_PRESET).map_err(|e| e.to_string())?;
        for s in &p.settings {
            let (k, v) = s.split_once('=').ok_or_else(|| {
                format!(
                    "lesson {name}, pane `{}`: expected key=value, found `{s}`",
                    p.label
                )
            })?;
            config::keys::apply(&mut cfg, k.trim(), v.trim())
                .map_err(|e| format!("lesson {name}, pane `{}`: {e}", p.label))?;
            if k.trim() == "preset" {
                preset = v.trim().to_string();
            }
        }
        cfg.validate()
            .map_err(|e| format!("lesson {name}, pane `{}`: {e}", p.label))?;
        panes.push(LessonPane {
            label: p.label,
            source_name,
            source,
            params,
            config: cfg,
            preset,
        });
    }
    Ok(Lesson {
        name: name.to_string(),
        title: f.title,
        text: f.text.trim().to_string(),
        panes,
    })
}

/// Lesson `name` (one of [`LESSONS`]).
pub fn lesson(name: &str) -> Result<Lesson, String> {
    let (_, text) = LESSONS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        let names: Vec<&str> = LESSONS.iter().map(|l| l.0).collect();
        format!("no lesson `{name}` (the lessons: {})", names.join(", "))
    })?;
    parse(name, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lesson_reads_and_its_kernels_run() {
        for (name, _) in LESSONS {
            let l = lesson(name).unwrap_or_else(|e| panic!("{e}"));
            assert!(l.panes.len() >= 2 && !l.text.is_empty(), "{name}");
            for p in &l.panes {
                let words: Vec<String> = p.params.split_whitespace().map(String::from).collect();
                let pairs = crate::gen::parse_pairs(&words).unwrap();
                crate::gen::source::check(p.source, &p.source_name).unwrap();
                assert!(!pairs.is_empty() || p.params.is_empty());
            }
        }
        assert!(lesson("nope").unwrap_err().contains("coalescing"));
        let bad = "title = \"t\"\ntext = \"x\"\nsource = \"matmul.wsk\"\n[[pane]]\nlabel = \"a\"\nsettings = [\"ways=x\"]\n[[pane]]\nlabel = \"b\"\n";
        assert!(parse("bad", bad).unwrap_err().contains("pane `a`"));
    }

    /// A lesson's text names its panes by number: where a pane sits depends on the window
    /// (two columns, or one under the other when narrow; pane 3 of three is bottom left), so
    /// "the right pane" can point at the wrong picture.
    #[test]
    fn lesson_texts_name_panes_by_number_not_by_place() {
        for (name, _) in LESSONS {
            let l = lesson(name).unwrap();
            let text = l.text.to_lowercase();
            for place in ["left", "right", "top", "bottom", "above", "below"] {
                assert!(
                    !text
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w == place),
                    "lesson {name} says where a pane is (`{place}`): name it by number"
                );
            }
            for (i, _) in text.match_indices("pane ") {
                let n: String = text[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if let Ok(n) = n.parse::<usize>() {
                    assert!(
                        (1..=l.panes.len()).contains(&n),
                        "lesson {name} names pane {n} of {}",
                        l.panes.len()
                    );
                }
            }
        }
    }
}
