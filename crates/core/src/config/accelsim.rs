//! A GPU's L1 and L2 read from an Accel-Sim (GPGPU-Sim) configuration file, `gpgpusim.config`
//! (`--accelsim-config`): the SMs, their limits, the L1 data cache, the L2's channels,
//! slices, address map, indexing and slice cache.
//!
//! The file is one option a line (`-name value`, `#` starts a comment). Options it does not
//! need are skipped; an option it needs but cannot represent is an error naming the file,
//! the line and what was expected. What it reads approximately comes back as notes for the
//! caller to show.

use super::{
    CacheConfig, L2Config, Replacement, SetIndex, SimConfig, SliceHash, SmSelection, WritePolicy,
};

/// Why the file cannot be read into a configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: `{option}`: {message}")]
pub struct AccelsimError {
    pub file: String,
    /// From 1 (0: the file as a whole).
    pub line: usize,
    pub option: String,
    pub message: String,
}

/// A cache option's geometry and policies (`[S|N]:sets:line:ways,rep:wr:alloc:wr_alloc:index`).
struct CacheSpec {
    sectored: bool,
    sets: u64,
    line: u32,
    ways: u32,
    replacement: Replacement,
    write_back: bool,
    /// Its write-allocate policy (`N`, `W`, `F`, `L`).
    write_allocate: char,
    set_index: SetIndex,
}

fn parse_cache(v: &str) -> Result<CacheSpec, String> {
    let mut groups = v.split(',');
    let geometry: Vec<&str> = groups.next().unwrap_or("").split(':').collect();
    let (sectored, geometry) = match geometry.first() {
        Some(&"S") => (true, &geometry[1..]),
        Some(&"N") => (false, &geometry[1..]),
        _ => (false, &geometry[..]),
    };
    let [sets, line, ways] = geometry else {
        return Err("expected [S|N:]SETS:LINE:WAYS,...".into());
    };
    let num = |s: &str, what: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0 && n < 1 << 24)
            .ok_or_else(|| format!("{what} `{s}` is not a positive number"))
    };
    let (sets, line, ways) = (
        num(sets, "sets")?,
        num(line, "line size")?,
        num(ways, "ways")?,
    );
    let policy: Vec<&str> = groups.next().unwrap_or("").split(':').collect();
    let replacement = match policy.first().copied() {
        Some("L") => Replacement::Lru,
        Some("F") => Replacement::Fifo,
        other => {
            return Err(format!(
                "replacement `{}`: expected L (LRU) or F (FIFO)",
                other.unwrap_or("")
            ))
        }
    };
    let write_back = match policy.get(1).copied() {
        Some("B") => true,
        Some("T" | "R" | "W") => false,
        other => {
            return Err(format!(
                "write policy `{}`: expected B (write-back) or T (write-through)",
                other.unwrap_or("")
            ))
        }
    };
    let write_allocate = match policy.get(3).copied() {
        None => 'N',
        Some(a @ ("N" | "W" | "F" | "L")) => a.chars().next().unwrap_or('N'),
        Some(other) => {
            return Err(format!(
                "write-allocate policy `{other}`: expected N (none), W (write-allocate), F (fetch on write) or L (lazy fetch on read)"
            ))
        }
    };
    let set_index = match policy.get(4).copied() {
        None | Some("L") => SetIndex::Modulo,
        Some("H") => SetIndex::FermiHash,
        Some("P") => SetIndex::Ipoly,
        Some("X") => SetIndex::Xor,
        Some(other) => {
            return Err(format!(
                "set index function `{other}`: expected L (linear), H (Fermi hash), P (IPOLY) or X (XOR)"
            ))
        }
    };
    Ok(CacheSpec {
        sectored,
        sets,
        line: line as u32,
        ways: ways as u32,
        replacement,
        write_back,
        write_allocate,
        set_index,
    })
}

impl CacheSpec {
    fn config(&self) -> CacheConfig {
        CacheConfig {
            size_bytes: self.sets * self.ways as u64 * self.line as u64,
            line_bytes: self.line,
            ways: self.ways,
            // GPGPU-Sim's sectors are 32 bytes.
            sector_bytes: if self.sectored {
                32.min(self.line)
            } else {
                self.line
            },
            set_index: self.set_index.clone(),
            replacement: self.replacement,
            write_policy: match (self.write_back, self.write_allocate) {
                (true, _) => WritePolicy::Wbwa,
                (false, 'N') => WritePolicy::Wtna,
                (false, _) => WritePolicy::Wtwa,
            },
            bypass: false,
        }
    }
}

/// Reads `text` (the file `file`) into `c`: the options it has replace what `c` had; an L2
/// is configured when the file has one. Returns notes on what was read approximately.
pub fn read(text: &str, file: &str, c: &mut SimConfig) -> Result<Vec<String>, AccelsimError> {
    let mut options: Vec<(usize, &str, &str)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix('-') else {
            continue;
        };
        let (name, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        options.push((i + 1, name, value.trim().trim_matches('"')));
    }
    let get = |name: &str| options.iter().rev().find(|o| o.1 == name).copied();
    let err = |(line, option, _): (usize, &str, &str), message: String| AccelsimError {
        file: file.to_string(),
        line,
        option: format!("-{option}"),
        message,
    };
    let number = |name: &str| -> Result<Option<u32>, AccelsimError> {
        match get(name) {
            None => Ok(None),
            Some(o) => {
                o.2.parse::<u32>()
                    .map(Some)
                    .map_err(|_| err(o, format!("expected a whole number, found `{}`", o.2)))
            }
        }
    };
    let mut notes = Vec::new();
    let clusters = number("gpgpu_n_clusters")?;
    let per_cluster = number("gpgpu_n_cores_per_cluster")?.unwrap_or(1);
    if let Some(n) = clusters {
        c.gpu.sms = n * per_cluster;
        if let SmSelection::One(s) = c.gpu.simulate {
            if s >= c.gpu.sms {
                c.gpu.simulate = SmSelection::One(0);
            }
        }
    }
    if let Some(n) = number("gpgpu_shader_cta")? {
        c.gpu.max_ctas_per_sm = n;
    }
    if let Some(o) = get("gpgpu_shader_core_pipeline") {
        let bad = || err(o, format!("expected THREADS:WARP_SIZE, found `{}`", o.2));
        let (threads, warp) = o.2.split_once(':').ok_or_else(bad)?;
        let threads: u32 = threads.trim().parse().map_err(|_| bad())?;
        let warp: u32 = warp.trim().parse().map_err(|_| bad())?;
        c.gpu.max_threads_per_sm = threads;
        c.schedule.warp_size = warp;
        c.gpu.max_warps_per_sm = threads / warp.max(1);
    }
    if let Some(o) = get("gpgpu_cache:dl1") {
        let spec = parse_cache(o.2).map_err(|m| err(o, m))?;
        let mut l1 = spec.config();
        let unified = number("gpgpu_unified_l1d_size")?;
        let adaptive = number("gpgpu_adaptive_cache_config")?.unwrap_or(0) == 1;
        if let (Some(kb), true) = (unified, adaptive) {
            // Accel-Sim gives the L1 what the kernel's shared memory leaves of the unified
            // array, keeping the sets; taken at its largest (a kernel with no shared memory).
            let ways = (kb as u64 * 1024 / (spec.sets * spec.line as u64)) as u32;
            l1.ways = ways.max(1);
            l1.size_bytes = spec.sets * l1.ways as u64 * spec.line as u64;
            notes.push(format!(
                "the L1 is adaptive in Accel-Sim: taken at its largest, {kb} KB ({} ways), as for a kernel with no shared memory",
                l1.ways
            ));
        }
        if spec.write_back {
            notes.push("the L1 writes back: write-back with write-allocate".into());
        } else if matches!(spec.write_allocate, 'W' | 'F') {
            notes.push(
                "the L1 writes through and fetches on a write miss: read as wtwa, which allocates without the fetch".into(),
            );
        }
        c.coalescing = if spec.sectored {
            super::Coalescing::Sector
        } else {
            super::Coalescing::Line
        };
        c.cache = l1;
    }
    if let Some(o) = get("gpgpu_gmem_skip_L1D") {
        c.cache.bypass = match o.2 {
            "1" => true,
            "0" => false,
            v => return Err(err(o, format!("expected 0 or 1, found `{v}`"))),
        };
    }
    let Some(dl2) = get("gpgpu_cache:dl2") else {
        return Ok(notes);
    };
    let spec = parse_cache(dl2.2).map_err(|m| err(dl2, m))?;
    let mut l2 = L2Config {
        slice: spec.config(),
        ..L2Config::default()
    };
    if let Some(n) = number("gpgpu_n_mem")? {
        l2.channels = n;
    }
    if let Some(n) = number("gpgpu_n_sub_partition_per_mchannel")? {
        l2.slices_per_channel = n;
    }
    if let Some(o) = get("gpgpu_mem_addr_mapping") {
        l2.address_map = o.2.to_string();
    }
    if let Some(o) = get("gpgpu_memory_partition_indexing") {
        l2.slice_hash = match o.2 {
            "0" => SliceHash::Linear,
            "1" => SliceHash::Xor,
            "2" => SliceHash::Ipoly,
            v => {
                return Err(err(
                    o,
                    format!(
                        "indexing `{v}` cannot be read: expected 0 (consecutive), 1 (bitwise XOR) or 2 (IPOLY); 3 is a custom function and 4 random, which we do not model"
                    ),
                ))
            }
        };
    }
    if !spec.write_back {
        return Err(err(
            dl2,
            "the L2 writes through: expected B (write-back), the only L2 we model".into(),
        ));
    }
    l2.validate().map_err(|e| err(dl2, e.to_string()))?;
    c.l2 = Some(l2);
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QV100: &str = "\
# Volta
-gpgpu_n_clusters 80
-gpgpu_n_cores_per_cluster 1
-gpgpu_n_mem 32
-gpgpu_n_sub_partition_per_mchannel 2 
-gpgpu_shader_core_pipeline 2048:32
-gpgpu_shader_cta 32
-gpgpu_adaptive_cache_config 1
-gpgpu_unified_l1d_size 128
-gpgpu_cache:dl1  S:4:128:64,L:T:m:L:L,A:512:8,16:0,32
-gpgpu_cache:dl2 S:32:128:24,L:B:m:L:P,A:192:4,32:0,32
-gpgpu_memory_partition_indexing 2
-gpgpu_mem_addr_mapping dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCB.CCCSSSSS
";

    #[test]
    fn accel_sims_qv100_is_the_volta_preset() {
        let mut c = SimConfig::default();
        let notes = read(QV100, "gpgpusim.config", &mut c).unwrap();
        assert!(notes[0].contains("128 KB (256 ways)"), "{notes:?}");
        let volta = super::super::preset("volta").unwrap();
        assert_eq!(c.l2, volta.l2);
        assert_eq!(c.cache, volta.cache);
        assert_eq!(c.gpu.sms, 80);
        assert_eq!(c.coalescing, volta.coalescing);
        c.validate().unwrap();
    }

    #[test]
    fn what_cannot_be_read_is_named_with_its_line() {
        let mut c = SimConfig::default();
        let text = QV100.replace("indexing 2", "indexing 4");
        let e = read(&text, "v.config", &mut c).unwrap_err();
        assert_eq!(
            (e.line, e.option.as_str()),
            (12, "-gpgpu_memory_partition_indexing")
        );
        assert!(
            e.to_string().starts_with(
                "v.config:12: `-gpgpu_memory_partition_indexing`: indexing `4` cannot be read"
            ),
            "{e}"
        );
        let text = QV100.replace("L:B:m:L:P", "L:B:m:L:Q");
        let e = read(&text, "v.config", &mut c).unwrap_err();
        assert!(e.message.contains("set index function `Q`"), "{e}");
        let text = QV100.replace("-gpgpu_n_mem 32", "-gpgpu_n_mem many");
        let e = read(&text, "v.config", &mut c).unwrap_err();
        assert_eq!(e.line, 4);
        let text = QV100.replace("RBBBCCCB", "RBBBCCCX");
        let e = read(&text, "v.config", &mut c).unwrap_err();
        assert!(e.message.contains("`X` is not an address bit"), "{e}");
        let text = format!("{QV100}-gpgpu_gmem_skip_L1D yes\n");
        let e = read(&text, "v.config", &mut c).unwrap_err();
        assert_eq!((e.line, e.option.as_str()), (14, "-gpgpu_gmem_skip_L1D"));
    }

    #[test]
    fn kepler_skips_the_l1_for_global_data() {
        // SM3_KEPLER_TITAN: "-gpgpu_gmem_skip_L1D 1" (global loads are not cached in L1).
        let mut c = SimConfig::default();
        read(&format!("{QV100}-gpgpu_gmem_skip_L1D 1\n"), "k", &mut c).unwrap();
        assert!(c.cache.bypass);
        read(&format!("{QV100}-gpgpu_gmem_skip_L1D 0\n"), "k", &mut c).unwrap();
        assert!(!c.cache.bypass);
    }
}
