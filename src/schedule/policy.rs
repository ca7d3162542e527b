//! Issue policies: which ready warp of an SM issues next.

use crate::config::IssuePolicy;
use crate::rng::Rng;

/// What one SM holds: resident CTAs and their warps in launch (age) order.
#[derive(Clone, Debug, Default)]
pub(super) struct SmState {
    pub ctas: Vec<u32>,
    pub warps: Vec<u32>,
    pub threads: u32,
    pub ready: u32,
    /// Round-robin position (next index to try).
    rr: usize,
    /// The warp a greedy policy keeps issuing from.
    current: Option<u32>,
    /// Active fetch group (two-level).
    group: usize,
    scratch: Vec<u32>,
}

impl SmState {
    /// Removes warps (a finished CTA), keeping round-robin positions consistent.
    pub fn remove_warps(&mut self, gone: impl Fn(u32) -> bool) {
        let before_rr = self.warps[..self.rr.min(self.warps.len())]
            .iter()
            .filter(|&&w| gone(w))
            .count();
        self.rr -= before_rr;
        self.warps.retain(|&w| !gone(w));
        if self.rr >= self.warps.len() {
            self.rr = 0;
        }
        if self.current.is_some_and(&gone) {
            self.current = None;
        }
    }

    /// Picks the next warp to issue; `ready` says whether a warp can issue now.
    pub fn pick(
        &mut self,
        policy: IssuePolicy,
        fetch_group: u32,
        rng: &mut Rng,
        ready: impl Fn(u32) -> bool,
    ) -> Option<u32> {
        let n = self.warps.len();
        if n == 0 {
            return None;
        }
        match policy {
            IssuePolicy::RoundRobin => {
                let i = (0..n)
                    .map(|k| (self.rr + k) % n)
                    .find(|&i| ready(self.warps[i]))?;
                self.rr = (i + 1) % n;
                Some(self.warps[i])
            }
            IssuePolicy::Sequential => {
                if let Some(w) = self.current.filter(|&w| ready(w)) {
                    return Some(w);
                }
                // Continue with the next warp after the current one (in launch order).
                let start = match self.current {
                    Some(cur) => self.warps.iter().position(|&w| w > cur).unwrap_or(0),
                    None => self.rr.min(n - 1),
                };
                let i = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&i| ready(self.warps[i]))?;
                self.current = Some(self.warps[i]);
                self.rr = i;
                Some(self.warps[i])
            }
            IssuePolicy::Gto => {
                if let Some(w) = self.current.filter(|&w| ready(w)) {
                    return Some(w);
                }
                let w = self.warps.iter().copied().find(|&w| ready(w))?;
                self.current = Some(w);
                Some(w)
            }
            IssuePolicy::TwoLevel => {
                let g = fetch_group as usize;
                let groups = n.div_ceil(g);
                for k in 0..groups {
                    let grp = (self.group + k) % groups;
                    let lo = grp * g;
                    let hi = (lo + g).min(n);
                    let len = hi - lo;
                    let start = if k == 0 && self.rr >= lo && self.rr < hi {
                        self.rr - lo
                    } else {
                        0
                    };
                    if let Some(i) = (0..len)
                        .map(|j| lo + (start + j) % len)
                        .find(|&i| ready(self.warps[i]))
                    {
                        self.group = grp;
                        self.rr = if i + 1 < hi { i + 1 } else { lo };
                        return Some(self.warps[i]);
                    }
                }
                None
            }
            IssuePolicy::Random => {
                if (self.ready as usize) * 4 >= n {
                    for _ in 0..64 {
                        let w = self.warps[rng.below(n as u64) as usize];
                        if ready(w) {
                            return Some(w);
                        }
                    }
                }
                self.scratch.clear();
                self.scratch
                    .extend(self.warps.iter().copied().filter(|&w| ready(w)));
                if self.scratch.is_empty() {
                    return None;
                }
                Some(self.scratch[rng.below(self.scratch.len() as u64) as usize])
            }
        }
    }
}
