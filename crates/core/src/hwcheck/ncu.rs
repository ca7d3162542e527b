//! Nsight Compute's raw CSV export of a user's own kernels (`ncu --csv --page raw`, as it
//! prints it or writes it with `--log-file`): a header row of metric names, a row of units,
//! then one row per kernel launch with its name, block and grid. Lines before the header
//! (ncu's `==PROF==` lines, the program's own output) are skipped. What `hwcheck --ncu`
//! needs: the L1's load and store requests, sectors and sector hits, the sectors the L1 read
//! from the L2, and where the report has them the L2's sectors from the L1s and their hits.

use super::counters::{number, CountersError, LOAD, STORE};
use super::{CaseCounts, L2Counts, MeasuredLaunch, OpCounts};
use crate::trace::Dim3;
use polars::prelude::*;
use std::path::Path;

/// Sectors the L1 read from the L2 (its fills).
pub const L1_FILL: &str = "l1tex__m_xbar2l1tex_read_sectors.sum";
/// The L2's sectors asked for by the L1s, and those it found.
pub const L2_SECTORS: [&str; 2] = [
    "lts__t_sectors_srcunit_tex.sum",
    "lts__t_sectors_srcunit_tex_lookup_hit.sum",
];

/// Reads the launches of the report at `path`, in the order they ran.
pub fn read(path: &Path) -> Result<Vec<MeasuredLaunch>, CountersError> {
    let file = path.display().to_string();
    let whole = |message: String| CountersError::File {
        file: file.clone(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| whole(e.to_string()))?;
    let Some(start) = text.lines().position(|l| l.starts_with("\"ID\",")) else {
        return Err(whole(
            "no header row starting \"ID\": expected the output of `ncu --csv --page raw`".into(),
        ));
    };
    let body: String = text.lines().skip(start).collect::<Vec<_>>().join("\n");
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .into_reader_with_file_handle(std::io::Cursor::new(body.into_bytes()))
        .finish()
        .map_err(|e| whole(format!("not a readable CSV file: {e}")))?;
    let column = |name: &str| -> Option<Vec<String>> {
        let s = df.column(name).ok()?.as_materialized_series().clone();
        let s = s.str().ok()?.clone();
        Some(
            s.iter()
                .map(|v| v.unwrap_or("").trim().to_string())
                .collect(),
        )
    };
    let needed = |name: &str| {
        column(name).ok_or_else(|| {
            whole(format!(
                "no column `{name}`: profile with the metrics docs/hardware.md lists"
            ))
        })
    };
    let ids = needed("ID")?;
    let names = needed("Kernel Name")?;
    let blocks = column("Block Size");
    let grids = column("Grid Size");
    let load: Vec<Vec<String>> = LOAD.iter().map(|n| needed(n)).collect::<Result<_, _>>()?;
    let store: Vec<Vec<String>> = STORE.iter().map(|n| needed(n)).collect::<Result<_, _>>()?;
    let fill = column(L1_FILL);
    let l2: Option<Vec<Vec<String>>> = L2_SECTORS.iter().map(|n| column(n)).collect();
    let mut out = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        // The units row has no ID.
        if id.is_empty() {
            continue;
        }
        let line = start + 2 + i;
        let at = |message: String| CountersError::Line {
            file: file.clone(),
            line,
            message,
        };
        let count = |col: &[String], name: &str| {
            let text = col[i].as_str();
            number(text).ok_or_else(|| {
                at(format!(
                    "column `{name}`: expected a whole number, found `{text}`"
                ))
            })
        };
        let op = |cols: &[Vec<String>], names: &[&str; 3]| -> Result<OpCounts, CountersError> {
            Ok(OpCounts {
                requests: count(&cols[0], names[0])?,
                sectors: count(&cols[1], names[1])?,
                sector_hits: Some(count(&cols[2], names[2])?),
            })
        };
        let dim = |col: &Option<Vec<String>>, what: &str| -> Result<Option<Dim3>, CountersError> {
            match col {
                None => Ok(None),
                Some(c) => dim3(&c[i])
                    .map(Some)
                    .ok_or_else(|| at(format!("{what} `{}`: expected (x, y, z)", c[i]))),
            }
        };
        out.push(MeasuredLaunch {
            line,
            name: names[i].clone(),
            block: dim(&blocks, "Block Size")?,
            grid: dim(&grids, "Grid Size")?,
            counts: CaseCounts {
                load: op(&load, &LOAD)?,
                store: op(&store, &STORE)?,
            },
            l1_fill_sectors: match &fill {
                Some(c) => Some(count(c, L1_FILL)?),
                None => None,
            },
            l2: match &l2 {
                Some(c) => Some(L2Counts {
                    sectors: count(&c[0], L2_SECTORS[0])?,
                    sector_hits: count(&c[1], L2_SECTORS[1])?,
                }),
                None => None,
            },
        });
    }
    if out.is_empty() {
        return Err(whole("no kernel launches after the header".into()));
    }
    Ok(out)
}

/// `(256, 1, 1)` as ncu writes a block or grid size.
fn dim3(text: &str) -> Option<Dim3> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    let v: Vec<u32> = inner
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match v[..] {
        [x, y, z] => Some(Dim3 { x, y, z }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[&str]) -> String {
        values
            .iter()
            .map(|v| format!("\"{v}\""))
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn launches_are_read_after_ncus_own_lines_and_the_units_row() {
        let mut header = vec!["ID", "Kernel Name", "Block Size", "Grid Size"];
        header.extend(LOAD);
        header.extend(STORE);
        header.push(L1_FILL);
        let text = [
            "==PROF== Connected to process 1".to_string(),
            "ok".to_string(),
            row(&header),
            row(&["", "", "", "", "", "", "", "", "", "", "sector"]),
            row(&[
                "0",
                "k(float*)",
                "(256, 1, 1)",
                "(4, 2, 1)",
                "1,024",
                "4096",
                "0",
                "8",
                "32",
                "0",
                "4,096",
            ]),
        ]
        .join("\n");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        std::fs::write(&p, &text).unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.len(), 1);
        let l = &r[0];
        assert_eq!((l.line, l.name.as_str()), (5, "k(float*)"));
        assert_eq!(l.block, Some(Dim3 { x: 256, y: 1, z: 1 }));
        assert_eq!(l.grid, Some(Dim3 { x: 4, y: 2, z: 1 }));
        assert_eq!((l.counts.load.requests, l.counts.store.sectors), (1024, 32));
        assert_eq!((l.l1_fill_sectors, l.l2), (Some(4096), None));
        // A count that is not one is named with its line and column.
        std::fs::write(&p, text.replace("\"4096\"", "\"n/a\"")).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("line 5") && e.contains(LOAD[1]) && e.contains("n/a"),
            "{e}"
        );
        std::fs::write(&p, "Kernel,x\n1,2\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("ncu --csv --page raw"), "{e}");
    }
}
