//! A run's requests as compact columns: recording, filtering by instruction, the plot's x axis.

use super::*;

impl Points {
    /// Whether request `i` is of instruction `only` (every request is without one).
    pub fn of_inst(&self, i: usize, only: Option<(u16, u32)>) -> bool {
        only.is_none_or(|(k, inst)| self.kernel[i] == k && self.inst[i] == inst)
    }
}

impl Points {
    pub fn len(&self) -> usize {
        self.line.len()
    }
    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
    pub fn push(&mut self, e: &RequestEvent) {
        if self.line.len() >= MAX_POINTS {
            self.dropped += 1;
            return;
        }
        let outcome = Outcome::of(e.hit, e.class);
        self.line.push(e.line);
        self.cta.push(e.cta);
        self.warp.push(e.warp);
        self.inst.push(e.inst);
        self.kernel.push(e.kernel.min(u16::MAX as u32) as u16);
        self.sm.push(e.sm.min(u16::MAX as u32) as u16);
        self.set.push(e.set);
        self.outcome.push(
            outcome.code()
                | if e.write { 0x80 } else { 0 }
                | if e.in_flight { 0x40 } else { 0 }
                | if e.first { 0x20 } else { 0 },
        );
        let distance = if e.time.is_some() {
            e.set_distance
        } else {
            e.reuse_distance
        };
        self.reuse.push(
            distance
                .map(|d| d.min(u32::MAX as u64 - 1) as u32)
                .unwrap_or(u32::MAX),
        );
        if let Some(t) = e.time {
            self.time.push(t);
        }
        if let Some(t) = e.thread {
            self.thread.push(t);
        }
    }
    /// Drops every other request (the 2nd, 4th, ...), halving a sample.
    pub fn keep_every_other(&mut self) {
        fn halve<T: Copy>(v: &mut Vec<T>) {
            let n = v.len().div_ceil(2);
            for i in 0..n {
                v[i] = v[2 * i];
            }
            v.truncate(n);
        }
        halve(&mut self.line);
        halve(&mut self.cta);
        halve(&mut self.warp);
        halve(&mut self.inst);
        halve(&mut self.kernel);
        halve(&mut self.sm);
        halve(&mut self.set);
        halve(&mut self.outcome);
        halve(&mut self.reuse);
        halve(&mut self.time);
        halve(&mut self.thread);
    }
    pub fn outcome(&self, i: usize) -> Outcome {
        Outcome::from_code(self.outcome[i])
    }
    pub fn is_write(&self, i: usize) -> bool {
        self.outcome[i] & 0x80 != 0
    }
    /// Whether request `i` (a timing-model miss) found its line in flight.
    pub fn in_flight(&self, i: usize) -> bool {
        self.outcome[i] & 0x40 != 0
    }
    /// Whether request `i` is the first of its warp instruction.
    pub fn starts_instruction(&self, i: usize) -> bool {
        self.outcome[i] & 0x20 != 0
    }
    /// Request `i`'s thread, where known.
    pub fn thread(&self, i: usize) -> Option<u32> {
        self.thread.get(i).copied()
    }
}

impl Iterator for Visible<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Visible::Range(r) => r.next(),
            Visible::Sorted(it) => it.next().map(|&i| i as usize),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Visible::Range(r) => r.len(),
            Visible::Sorted(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Visible<'_> {}

impl<'a> Visible<'a> {
    /// Its requests `from..from + n` (fewer at the end, none past it): a job that takes the
    /// requests in view a part at a time (the raster, a box's summary on a page).
    pub fn part(self, from: usize, n: usize) -> Visible<'a> {
        match self {
            Visible::Range(r) => {
                let start = r.start.saturating_add(from).min(r.end);
                Visible::Range(start..start.saturating_add(n).min(r.end))
            }
            Visible::Sorted(it) => {
                let all = it.as_slice();
                let start = from.min(all.len());
                Visible::Sorted(all[start..start.saturating_add(n).min(all.len())].iter())
            }
        }
    }
}
