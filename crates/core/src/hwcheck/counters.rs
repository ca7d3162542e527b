//! Reading the CSV that `hw/run.sh` writes (`hw/collect.py`): a `case` column, then Nsight
//! Compute's metrics by name, one row per case. Only the columns below are needed; the
//! others (times, launch figures) are kept for the reader of the file.

use super::{CaseCounts, OpCounts};
use polars::prelude::*;
use std::path::Path;

/// The column with the case line.
pub const CASE: &str = "case";
/// Per kind of access: requests, sectors, sectors found in the L1.
pub const LOAD: [&str; 3] = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
];
pub const STORE: [&str; 3] = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st_lookup_hit.sum",
];

#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    #[error("{file}: {message}")]
    File { file: String, message: String },
    #[error("{file}, line {line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
}

/// Reads the measured cases of `path`, in file order.
pub fn read(path: &Path) -> Result<Vec<(String, CaseCounts)>, CountersError> {
    let file = path.display().to_string();
    let whole = |message: String| CountersError::File {
        file: file.clone(),
        message,
    };
    // What is wrong with the path itself, said once (polars' own message repeats the path).
    match std::fs::metadata(path) {
        Err(e) => return Err(whole(e.to_string())),
        Ok(m) if m.is_dir() => {
            return Err(whole(
                "a folder, not a CSV file (expected hw/run.sh's counters.csv)".into(),
            ))
        }
        Ok(_) => {}
    }
    let df = CsvReadOptions::default()
        .with_has_header(true)
        // Every column as text: the numbers are parsed here, with the line they are on.
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| whole(format!("not a readable CSV file: {e}")))?;
    let column = |name: &str| -> Result<Vec<Option<String>>, CountersError> {
        let c = df.column(name).map_err(|_| {
            whole(format!(
                "no column `{name}` (expected hw/run.sh's counters.csv)"
            ))
        })?;
        let s = c.as_materialized_series();
        let s = s
            .str()
            .map_err(|e| whole(format!("column `{name}`: {e}")))?;
        Ok(s.iter().map(|v| v.map(str::to_string)).collect())
    };
    let cases = column(CASE)?;
    let load: Vec<_> = LOAD.iter().map(|n| column(n)).collect::<Result<_, _>>()?;
    let store: Vec<_> = STORE.iter().map(|n| column(n)).collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        // Line 1 is the header.
        let line = i + 2;
        let at = |message: String| CountersError::Line {
            file: file.clone(),
            line,
            message,
        };
        let case = case
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| at("empty `case`".into()))?;
        let op = |cols: &[Vec<Option<String>>],
                  names: &[&str; 3]|
         -> Result<OpCounts, CountersError> {
            let mut v = [0u64; 3];
            for (k, (col, name)) in cols.iter().zip(names).enumerate() {
                let text = col[i].as_deref().unwrap_or("").trim();
                v[k] = number(text).ok_or_else(|| {
                    at(format!(
                        "column `{name}`: expected a whole number, found `{text}` (did ncu measure this case?)"
                    ))
                })?;
            }
            Ok(OpCounts {
                requests: v[0],
                sectors: v[1],
                sector_hits: Some(v[2]),
            })
        };
        out.push((
            case.to_string(),
            CaseCounts {
                load: op(&load, &LOAD)?,
                store: op(&store, &STORE)?,
            },
        ));
    }
    if out.is_empty() {
        return Err(whole("no cases".into()));
    }
    Ok(out)
}

/// A count as ncu prints it: digits, maybe with thousands separators or a `.0`.
pub(super) fn number(text: &str) -> Option<u64> {
    let t: String = text.chars().filter(|c| *c != ',').collect();
    let t = t.strip_suffix(".0").unwrap_or(&t);
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_as_ncu_prints_them_and_bad_rows_are_named_by_line() {
        assert_eq!(number("1,024"), Some(1024));
        assert_eq!(number("12.0"), Some(12));
        assert_eq!(number("12.5"), None);
        assert_eq!(number(""), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        let header = format!("case,{},{}", LOAD.join(","), STORE.join(","));
        std::fs::write(&p, format!("{header}\nvecadd n=64,2,8,0,2,8,1\n")).unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r[0].0, "vecadd n=64");
        assert_eq!(r[0].1.store.sector_hits, Some(1));
        std::fs::write(
            &p,
            format!("{header}\nvecadd n=64,2,8,0,2,8,1\nmatmul,,,,,,\n"),
        )
        .unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains(LOAD[0]), "{e}");
        std::fs::write(&p, "case,x\nvecadd,1\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("no column"), "{e}");
        // A missing file or a folder: the path once, then why.
        let missing = dir.path().join("none.csv");
        let e = read(&missing).unwrap_err().to_string();
        let why = std::fs::metadata(&missing).unwrap_err();
        assert_eq!(e, format!("{}: {why}", missing.display()));
        let e = read(dir.path()).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: a folder, not a CSV file (expected hw/run.sh's counters.csv)",
                dir.path().display()
            )
        );
    }
}
