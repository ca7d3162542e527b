//! The L2's part of the readable report: its geometry, totals, traffic on both sides, the
//! busiest and idlest slices, and its per-instruction table; or why it was not simulated.

use std::io::Write;

use super::text::pct;
use super::Report;

/// Writes the L2 section, when the configuration has an L2.
pub(super) fn write(w: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    let Some(cfg) = &r.config.l2 else {
        return Ok(());
    };
    let s = &cfg.slice;
    writeln!(
        w,
        "\nL2 {} in {} slices ({} channels x {}), each {} sets x {}-way of {} B lines, {} B sectors ({} sets, {}), {} slices",
        super::text::size_words(cfg.size_bytes()),
        cfg.slices(),
        cfg.channels,
        cfg.slices_per_channel,
        s.sets(),
        s.ways_effective(),
        s.line_bytes,
        s.sector_bytes,
        s.set_index.name(),
        s.replacement.name(),
        cfg.slice_hash.name()
    )?;
    let Some(l2) = &r.l2 else {
        let why = "it sees every SM's misses, so it needs every SM simulated: --all-sms";
        return writeln!(w, "  not simulated: {why}");
    };
    let c = &l2.totals;
    writeln!(
        w,
        "  requests          {:>12}   reads / writes {} / {}",
        c.requests, c.reads, c.writes
    )?;
    writeln!(w, "  hits              {:>12}", c.hits)?;
    writeln!(
        w,
        "  misses            {:>12}   miss rate {}",
        c.misses,
        pct(c.misses, c.requests)
    )?;
    let m = &c.miss_classes;
    for (name, n) in [
        ("compulsory", m.compulsory),
        ("capacity", m.capacity),
        ("conflict", m.conflict),
    ] {
        writeln!(w, "    {name:<15} {n:>12}   {}", pct(n, c.misses))?;
    }
    writeln!(
        w,
        "  sectors / missed  {:>12} / {}",
        c.sectors, c.sector_misses
    )?;
    writeln!(
        w,
        "  bytes L2 -> L1 / L1 -> L2   {} / {}",
        l2.bytes_l2_to_l1, l2.bytes_l1_to_l2
    )?;
    writeln!(
        w,
        "  bytes from / to DRAM        {} / {}   (dirty in the L2 at the end: {})",
        c.bytes_from_dram, c.bytes_to_dram, l2.dirty_bytes_at_end
    )?;
    let busiest = l2
        .per_slice
        .iter()
        .max_by_key(|s| (s.counters.requests, u32::MAX - s.slice));
    let idlest = l2
        .per_slice
        .iter()
        .min_by_key(|s| (s.counters.requests, s.slice));
    match (busiest, idlest) {
        (Some(b), Some(i)) if b.counters.requests == i.counters.requests => {
            writeln!(w, "  every slice {} requests", b.counters.requests)?
        }
        (Some(b), Some(i)) => writeln!(
            w,
            "  requests per slice: most {} (slice {}), fewest {} (slice {})",
            b.counters.requests, b.slice, i.counters.requests, i.slice
        )?,
        _ => {}
    }
    writeln!(w, "\nper instruction in the L2")?;
    writeln!(
        w,
        "  {:<16} {:>10} {:>10} {:>9} {:>12}",
        "instruction", "requests", "misses", "rate", "DRAM bytes"
    )?;
    for i in &l2.instructions {
        writeln!(
            w,
            "  {:<16} {:>10} {:>10} {:>9} {:>12}",
            i.name,
            i.counters.requests,
            i.counters.misses,
            pct(i.counters.misses, i.counters.requests),
            i.counters.bytes_from_dram
        )?;
    }
    Ok(())
}
