//! The communication patterns of the multi-launch generators.

use super::*;

fn generated(name: &str, params: &[(&str, &str)]) -> CommReport {
    let pairs: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let t = crate::gen::generate(name, &pairs).unwrap();
    whole_and_in_pieces(&t)
}

#[test]
fn hotspot_talks_to_itself_and_its_four_neighbours() {
    // 64x64 cells, 16x16 CTAs: a 4x4 grid; 3 steps.
    let r = generated("hotspot", &[("steps", "3")]);
    assert_eq!(r.per_launch.len(), 3);
    assert_eq!(r.ctas, 16);
    // CTA (1,1) = id 5: itself, 4 and 6 (x), 1 and 9 (y).
    let partners: Vec<u32> = r.pairs.iter().filter(|p| p.1 == 5).map(|p| p.0).collect();
    assert_eq!(partners, vec![1, 4, 5, 6, 9]);
    assert_eq!(r.in_degree[5], 5);
    // Corner CTA 0: itself and two neighbours.
    assert_eq!(r.in_degree[0], 3);
    // From a neighbour a CTA reads one 16-cell edge of 4 bytes per launch pair; from itself
    // its whole 16x16 tile.
    let t = |w, rd| {
        r.transfers
            .iter()
            .find(|t| (t.writer_launch, t.writer_cta, t.reader_cta) == (0, w, rd))
            .map(|t| t.bytes)
    };
    assert_eq!(t(4, 5), Some(64));
    assert_eq!(t(5, 5), Some(1024));
    // Launch 0 reads only the initial input; the last launch's writes are never read.
    assert_eq!(r.per_launch[0].communicated_read_bytes, 0);
    assert_eq!(r.per_launch[2].communicated_write_bytes, 0);
    assert_eq!(r.distance.len(), 1);
    // Cuts between CTA columns 1|2 and rows 1|2 cross 4 edges each way per launch pair.
    assert_eq!(r.bisection[0].bytes, 2 * 4 * 2 * 64);
    assert_eq!(r.bisection[0].bytes, r.bisection[1].bytes);
}

#[test]
fn histogram2_merges_every_partial_in_every_bin() {
    let r = generated("histogram2", &[]);
    assert_eq!(r.per_launch.len(), 2);
    // 16 partial CTAs, 64 merge CTAs: each merge CTA reads 4 bytes from each partial.
    assert_eq!(r.pairs.len(), 16 * 64);
    assert!(r.pairs.iter().all(|p| p.2 == 4));
    assert!(r.per_launch[1].in_degree.iter().all(|&d| d == 16));
    assert!(r.per_launch[0].out_degree.iter().all(|&d| d == 64));
    // Every partial is read; the final histogram (64 bins of 4 bytes) is not.
    let l = &r.per_launch;
    assert_eq!(l[0].communicated_write_bytes, l[0].write_bytes);
    assert_eq!(r.communication_fraction, 4096.0 / (4096.0 + 256.0));
}

#[test]
fn nbody_alternates_all_to_all_and_own_bodies() {
    let r = generated("nbody", &[("steps", "2")]);
    // forces, update, forces, update; 512 bodies in 8 CTAs of 64.
    assert_eq!(r.per_launch.len(), 4);
    let l = &r.per_launch;
    // The second force launch reads every body the first update wrote: all 8 partners.
    assert!(l[2].in_degree.iter().all(|&d| d == 8));
    // The update launch reads only its own bodies' accelerations (and positions/velocities
    // written in earlier launches by the same CTA).
    assert!(l[1].in_degree.iter().all(|&d| d == 1));
    assert_eq!(l[1].out_degree_mean, 8.0);
    assert_eq!(l[2].out_degree_mean, 1.0);
}

#[test]
fn bfs_levels_keeps_the_diagonal() {
    let r = generated("bfs-levels", &[("nodes", "2048")]);
    assert!(r.per_launch.len() >= 4 && r.per_launch.len() % 2 == 0);
    // Kernel 2 of a level reads the updating mask kernel 1 wrote, by the same CTA and others.
    let diagonal: u64 = r.pairs.iter().filter(|p| p.0 == p.1).map(|p| p.2).sum();
    assert!(diagonal > 0 && diagonal < r.communicated_bytes);
    // Masks and costs are read several launches after they were written.
    assert!(r.distance.len() > 1);
}
