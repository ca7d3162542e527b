//! Configuration files, read and written the same way by the CLI (`--config`) and the app
//! (File > Open configuration): TOML for files named `.toml`, JSON otherwise (the shape
//! `sim --json` prints under "config"). A file that does not parse, or parses to a
//! configuration that [`SimConfig::validate`] refuses, is an error naming the file, and for
//! syntax the line and column.

use std::path::{Path, PathBuf};

use super::{Invalid, SimConfig};

/// The two file formats of a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFormat {
    Toml,
    Json,
}

impl ConfigFormat {
    /// TOML for a `.toml` name, JSON otherwise.
    pub fn of(path: &Path) -> Self {
        match path.extension() {
            Some(e) if e.eq_ignore_ascii_case("toml") => ConfigFormat::Toml,
            _ => ConfigFormat::Json,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ConfigFormat::Toml => "TOML",
            ConfigFormat::Json => "JSON",
        }
    }
}

/// Why a configuration file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The io error's and the refusal's texts are in the messages, so neither is also given
    /// as the source (an error chain would show it twice).
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The text is not a configuration in `format` (line and column from 1, where known).
    #[error("{}: {} configuration{}: {message}", path.display(), format.name(), at(*line, *column))]
    Syntax {
        path: PathBuf,
        format: ConfigFormat,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// The file parses, but to a configuration that cannot be simulated.
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: Invalid },
    /// The configuration cannot be written in `format`.
    #[error("{}: cannot write the configuration as {}: {message}", path.display(), format.name())]
    Write {
        path: PathBuf,
        format: ConfigFormat,
        message: String,
    },
}

fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(", line {l}, column {c}"),
        (Some(l), None) => format!(", line {l}"),
        _ => String::new(),
    }
}

/// Reads and validates the configuration in `path` ([`ConfigFormat::of`] its name).
pub fn load(path: &Path) -> Result<SimConfig, ConfigFileError> {
    valid(read(path)?, path)
}

/// Parses and validates the configuration `text` of the file `path` ([`ConfigFormat::of`]
/// its name): [`load`] for a file's text handed over (the web build's file picker).
pub fn load_text(text: &str, path: &Path) -> Result<SimConfig, ConfigFileError> {
    valid(parse(text, ConfigFormat::of(path), path)?, path)
}

fn valid(cfg: SimConfig, path: &Path) -> Result<SimConfig, ConfigFileError> {
    cfg.validate().map_err(|reason| ConfigFileError::Invalid {
        path: path.to_path_buf(),
        reason,
    })?;
    Ok(cfg)
}

/// Reads the configuration in `path` without validating it, for a caller that changes it
/// further (the CLI's flags) and validates the result.
pub fn read(path: &Path) -> Result<SimConfig, ConfigFileError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigFileError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    parse(&text, ConfigFormat::of(path), path)
}

/// Parses a configuration (without validating it); `path` names it in errors.
pub fn parse(text: &str, format: ConfigFormat, path: &Path) -> Result<SimConfig, ConfigFileError> {
    let syntax = |line, column, message: String| ConfigFileError::Syntax {
        path: path.to_path_buf(),
        format,
        line,
        column,
        message,
    };
    let cfg: SimConfig = match format {
        ConfigFormat::Toml => toml::from_str(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => {
                    let (l, c) = line_column(text, span.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            syntax(line, column, e.message().to_string())
        })?,
        ConfigFormat::Json => serde_json::from_str(text)
            .map_err(|e| syntax(Some(e.line()), Some(e.column()), json_message(&e)))?,
    };
    Ok(cfg)
}

/// The message of a JSON error without the " at line L column C" that it appends.
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    }
}

/// Line and column, from 1, of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, column)
}

/// The text of `cfg` in `format` (the serializer's message if it cannot be written, which
/// [`save`] reports as [`ConfigFileError::Write`]); the web build offers it as a download.
pub fn to_text(cfg: &SimConfig, format: ConfigFormat) -> Result<String, String> {
    match format {
        ConfigFormat::Toml => toml::to_string_pretty(cfg).map_err(|e| e.to_string()),
        ConfigFormat::Json => serde_json::to_string_pretty(cfg).map_err(|e| e.to_string()),
    }
}

/// Writes `cfg` to `path` ([`ConfigFormat::of`] its name).
pub fn save(path: &Path, cfg: &SimConfig) -> Result<(), ConfigFileError> {
    let format = ConfigFormat::of(path);
    let text = to_text(cfg, format).map_err(|message| ConfigFileError::Write {
        path: path.to_path_buf(),
        format,
        message,
    })?;
    std::fs::write(path, text).map_err(|error| ConfigFileError::Io {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{preset, TimingConfig};

    fn both(cfg: &SimConfig) {
        let dir = tempfile::tempdir().unwrap();
        for name in ["c.toml", "c.json"] {
            let path = dir.path().join(name);
            save(&path, cfg).unwrap();
            assert_eq!(&load(&path).unwrap(), cfg, "{name}");
        }
    }

    #[test]
    fn every_preset_and_the_timing_model_round_trip_in_both_formats() {
        for p in crate::config::PRESETS {
            both(&preset(p.name).unwrap());
        }
        both(&SimConfig {
            timing: Some(TimingConfig::default()),
            ..SimConfig::default()
        });
    }

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(ConfigFormat::of(Path::new("a/b.toml")), ConfigFormat::Toml);
        assert_eq!(ConfigFormat::of(Path::new("a/b.TOML")), ConfigFormat::Toml);
        assert_eq!(ConfigFormat::of(Path::new("b.json")), ConfigFormat::Json);
        assert_eq!(ConfigFormat::of(Path::new("config")), ConfigFormat::Json);
    }

    #[test]
    fn syntax_errors_name_the_file_line_and_column() {
        let e = parse(
            "[cache]\nways = \"four\"\n",
            ConfigFormat::Toml,
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.toml: TOML configuration, line 2, column 8: "),
            "{e}"
        );
        let e = parse(
            "{\"cache\": {\n \"ways\": -1}}",
            ConfigFormat::Json,
            Path::new("c.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("c.json: JSON configuration, line 2, column "),
            "{e}"
        );
        assert!(!e.contains(" at line "), "{e}");
    }

    #[test]
    fn a_configuration_that_cannot_be_simulated_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[cache]\nways = 3\n").unwrap();
        // Read as it is (the CLI's flags may still change it), refused when loaded.
        assert_eq!(read(&path).unwrap().cache.ways, 3);
        let e = load(&path).unwrap_err();
        assert!(matches!(
            e,
            ConfigFileError::Invalid {
                reason: Invalid::Ways { ways: 3, .. },
                ..
            }
        ));
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}: associativity 3 ", path.display())),
            "{shown}"
        );
    }

    #[test]
    fn a_key_the_configuration_does_not_have_is_an_error_at_its_place() {
        // Every level: the top, each section, and the timing model's rules.
        for (text, key) in [
            (
                "{\"cache\": {\"ways\": 8,\n \"line_size\": 64}}",
                "line_size",
            ),
            (
                "{\"seed\": 2,\n \"reuse_distances\": false}",
                "reuse_distances",
            ),
            (
                "{\"schedule\": {\n\"policy\": \"gto\", \"warps\": 4}}",
                "warps",
            ),
            ("{\"gpu\": {\n\"sm\": 2}}", "sm"),
            ("{\"timing\": {\n\"rules\": {\"clip\": 1}}}", "clip"),
        ] {
            let e = parse(text, ConfigFormat::Json, Path::new("c.json"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("c.json: JSON configuration, line 2, column "),
                "{e}"
            );
            assert!(e.contains(&format!("unknown field `{key}`")), "{e}");
        }
    }

    #[test]
    fn a_missing_file_names_it() {
        let e = load(Path::new("/nonexistent/c.toml")).unwrap_err();
        assert!(matches!(e, ConfigFileError::Io { .. }));
        assert!(e.to_string().starts_with("/nonexistent/c.toml: "), "{e}");
    }
}
