//! The `-key = value` header of a `.traceg`, up to its first thread block.

use std::io::BufRead;

use super::super::lex::Lines;
use super::super::model::{BuildError, Dim3};
use super::super::{Location, TraceError};
use super::paren_dim3;

/// The `-key = value` lines before the first thread block.
pub(super) struct Header {
    pub name: String,
    pub grid: Dim3,
    pub block: Dim3,
    /// Tracer versions below 3 carry the block and warp on every instruction line.
    pub legacy: bool,
    pub lineinfo: bool,
    pub attributes: Vec<(String, String)>,
    /// The line the header ended on, for errors about the header as a whole.
    pub end_line: u64,
}

/// The header up to the first `#BEGIN_TB`; true when it ended at one.
pub(super) fn read_header<R: BufRead>(
    lines: &mut Lines<R>,
    file: &str,
) -> Result<(Header, bool), TraceError> {
    let io = |e| TraceError::io(file, e);
    let mut name = "kernel".to_string();
    let (mut grid, mut block) = (None, None);
    let mut version_major = 0u32;
    let mut lineinfo = false;
    let mut attributes = Vec::new();
    let mut begun = false;
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let err = |m: String| TraceError::parse(file, Location::Line(n), m);
        let t = line.trim_ascii();
        if t.starts_with(b"#BEGIN_TB") {
            begun = true;
            break;
        }
        if t.is_empty() || t.starts_with(b"#") {
            continue;
        }
        let t = std::str::from_utf8(t).map_err(|_| err("header line is not valid UTF-8".into()))?;
        let (k, v) = t
            .strip_prefix('-')
            .and_then(|kv| kv.split_once('='))
            .ok_or_else(|| {
                err(format!(
                    "expected a `-key = value` header line or #BEGIN_TB, found `{t}`"
                ))
            })?;
        let (k, v) = (k.trim(), v.trim());
        match k {
            "kernel name" => name = v.to_string(),
            "grid dim" => {
                grid =
                    Some(paren_dim3(v).ok_or_else(|| {
                        err(format!("expected `-grid dim = (X,Y,Z)`, found `{v}`"))
                    })?)
            }
            "block dim" => {
                block =
                    Some(paren_dim3(v).ok_or_else(|| {
                        err(format!("expected `-block dim = (X,Y,Z)`, found `{v}`"))
                    })?)
            }
            "accelsim tracer version" => {
                version_major = v
                    .split('.')
                    .next()
                    .and_then(|m| m.parse().ok())
                    .ok_or_else(|| {
                        err(format!(
                            "expected a tracer version like 4 or 1.2, found `{v}`"
                        ))
                    })?
            }
            "enable lineinfo" => lineinfo = v != "0",
            _ => {}
        }
        attributes.push((k.replace(' ', "_"), v.to_string()));
    }
    let end_line = lines.line;
    let herr = |m: &str| TraceError::parse(file, Location::Line(end_line), m.to_string());
    let grid = grid.ok_or_else(|| herr("the header has no `-grid dim = (X,Y,Z)`"))?;
    let block = block.ok_or_else(|| herr("the header has no `-block dim = (X,Y,Z)`"))?;
    if grid.count().saturating_mul(block.count()) == 0
        || grid.count().saturating_mul(block.count()) > u32::MAX as u64
    {
        return Err(herr(&format!(
            "grid {grid} x block {block}: {}",
            BuildError::BadShape
        )));
    }
    Ok((
        Header {
            name,
            grid,
            block,
            legacy: version_major < 3,
            lineinfo,
            attributes,
            end_line,
        },
        begun,
    ))
}
