//! A reference stream (a Dinero `din` file: one thread, never coalesced) simulated as chunks
//! of rows arrive, never held whole.

use super::*;
use crate::cache::Tag;

impl Session {
    /// Starts streaming the next kernel. `header` gives its name, shape, instructions and
    /// the SM its CTA ran on; its rows, if any, are not simulated (feed them). It must be a
    /// reference stream: one thread, rows in issue order.
    pub fn begin_stream(
        &mut self,
        header: &Kernel,
        observer: &mut dyn Observer,
    ) -> Result<(), SimError> {
        if header.order != Order::Issued || header.num_threads() != 1 {
            return Err(SimError::Config(format!(
                "kernel `{}`: only one thread's references in issue order can be streamed",
                header.name
            )));
        }
        // A kernel left open is ended here.
        self.end_stream(observer);
        self.end_kernel(observer)?;
        let (sm, slot) = super::apart::stream_slot(&self.slot_of_sm, self.cfg.gpu.sms, header);
        let coalescer = Coalescer::new(Coalescing::None, self.geometry(1));
        self.feeding = Feeding::Stream(Box::new(Stream {
            ki: self.next_kernel,
            name: header.name.clone(),
            instructions: header.instructions.clone(),
            sm,
            slot,
            coalescer,
            insts: vec![Counters::default(); header.instructions.len()],
            rows: 0,
            warp_insts: 0,
            grouping: Default::default(),
            tags: self.measured_apart.then(Tags::default),
        }));
        observer.on_kernel(self.next_kernel, header);
        self.next_kernel += 1;
        Ok(())
    }

    /// Simulates the next rows of the streamed kernel, in issue order; their instruction ids
    /// must be those of the header. Returns `false` when the observer cancels.
    pub fn feed(&mut self, rows: &Columns, observer: &mut dyn Observer) -> bool {
        self.feed_rows(rows, 0..rows.len(), observer);
        observer.progress(self.done, self.total)
    }

    pub(super) fn feed_rows(
        &mut self,
        cols: &Columns,
        range: std::ops::Range<usize>,
        obs: &mut dyn Observer,
    ) {
        let Some(st) = self.feeding.stream_mut() else {
            return;
        };
        st.rows += range.len() as u64;
        self.done += range.len() as u64;
        let Some(slot) = st.slot else {
            return;
        };
        let sim = &mut self.sims[slot];
        let l2 = &mut self.l2;
        let events = obs.wants_requests();
        let mut grouping = std::mem::take(&mut st.grouping);
        grouping.feed(cols, range, |c, r| {
            st.warp_instruction(sim, l2, c, r, events, obs)
        });
        st.grouping = grouping;
    }

    /// Takes the tags of the streamed kernel's next requests, from a classifier run apart
    /// (`apart.rs`). Fails when no stream begun after [`Session::detach_reuse`] is open.
    pub fn take_tags(&mut self, tags: &[u8]) -> Result<(), SimError> {
        match self.feeding.stream_mut().and_then(|s| s.tags.as_mut()) {
            Some(t) => {
                t.take(tags);
                Ok(())
            }
            None => Err(SimError::Config(
                "tags measured apart need a stream begun after detach_reuse".into(),
            )),
        }
    }

    /// Ends the streamed kernel and adds its rows to the report (its last warp instruction,
    /// which could have gone on in another chunk, is simulated now).
    pub fn end_stream(&mut self, observer: &mut dyn Observer) {
        let Some(mut st) = self.feeding.take_stream() else {
            return;
        };
        if let Some(slot) = st.slot {
            let sim = &mut self.sims[slot];
            let l2 = &mut self.l2;
            let events = observer.wants_requests();
            let mut grouping = std::mem::take(&mut st.grouping);
            grouping.end(|c, r| st.warp_instruction(sim, l2, c, r, events, observer));
        }
        if st.tags.as_ref().is_some_and(|t| !t.in_step()) {
            self.out_of_step = true;
        }
        // Every request is of one of its instructions: its one CTA's counters are theirs.
        let mut cta = Counters::default();
        for c in &st.insts {
            cta.add(c);
        }
        if let Some(slot) = st.slot {
            self.sims[slot].counters.add(&cta);
        }
        let sm = st.sm;
        self.report.add_kernel(
            KernelRow {
                kernel: st.ki,
                name: st.name,
                grid: Dim3::x(1),
                block: Dim3::x(1),
                rows: st.rows,
                warp_instructions: st.warp_insts,
            },
            &st.instructions,
            &st.insts,
            &[cta],
            |_| Some(sm),
        );
    }
}

impl Stream {
    /// Simulates rows `range` of `cols`, one warp instruction of the streamed kernel's thread
    /// (and what its L1 sends on to `l2`, when there is one).
    #[inline]
    fn warp_instruction(
        &mut self,
        sim: &mut SmSim,
        l2: &mut Option<Box<L2Model>>,
        cols: &Columns,
        range: std::ops::Range<usize>,
        events: bool,
        obs: &mut dyn Observer,
    ) {
        let (used, write) = super::grouping::reaching(cols, range.clone());
        if used == 0 {
            return;
        }
        self.warp_insts += 1;
        let inst = cols.inst[range.start];
        let Some(ic) = self.insts.get_mut(inst as usize) else {
            return;
        };
        ic.accesses += used;
        let ki = self.ki;
        if events {
            let rows: Vec<u32> = range.clone().map(|r| r as u32).collect();
            obs.on_warp_instruction(cols, &rows);
        }
        let mut first = true;
        for r in range {
            if !crate::trace::model_flags(cols.flags[r]).1.reaches_l1() {
                continue;
            }
            let (addr, size) = (cols.addr[r], cols.size[r] as u64);
            let coalescer = &self.coalescer;
            coalescer.split(addr, size, write, |c| {
                let written = if write && (l2.is_some() || sim.cache.wants_written()) {
                    coalescer.split_mask(addr, size, c.request.line)
                } else {
                    None
                };
                let (o, reuse_distance) = match &mut self.tags {
                    Some(t) => (sim.cache.access_tagged(&c.request, t.next()), None),
                    None => sim.access(&c.request, written),
                };
                ic.record(write, &o);
                ic.transactions += 1;
                if let Some(l2) = l2 {
                    l2.keep_events(events);
                    l2.below_l1(&c.request, &o, ki, inst, written);
                }
                if events {
                    let event = RequestEvent {
                        order: sim.order,
                        sm: sim.sm,
                        kernel: ki,
                        cta: 0,
                        warp: 0,
                        inst,
                        line: c.request.line,
                        set: o.set,
                        write,
                        hit: o.hit,
                        class: o.class,
                        reuse_distance,
                        time: None,
                        thread: Some(0),
                        in_flight: false,
                        set_distance: None,
                        sectors: c.request.sectors,
                        evicted: o.evicted,
                        effect_at: None,
                        refused: 0,
                        first: std::mem::take(&mut first),
                    };
                    obs.on_request(&event);
                    obs.after_request(&event, &sim.cache);
                    if let Some(l2) = l2 {
                        l2.drain_events(|e| obs.on_l2(e));
                    }
                }
                sim.order += 1;
            });
        }
    }
}

/// The tags of a stream's requests given by a classifier apart: those not used yet are
/// `queue[used..]`.
#[derive(Clone, Debug, Default)]
pub(super) struct Tags {
    queue: Vec<u8>,
    used: usize,
    /// A request found no tag: the rows and the tags were out of step.
    short: bool,
}

impl Tags {
    /// Adds the tags of the next requests.
    fn take(&mut self, tags: &[u8]) {
        if self.used == self.queue.len() {
            self.queue.clear();
            self.used = 0;
        }
        self.queue.extend_from_slice(tags);
    }

    #[inline]
    fn next(&mut self) -> Tag {
        let tag = self.queue.get(self.used).copied();
        self.used += 1;
        match tag {
            Some(1) => Tag::Seen,
            Some(2) => Tag::New,
            Some(_) => Tag::Hit,
            None => {
                self.short = true;
                Tag::Hit
            }
        }
    }

    /// Every tag was used, and none was missing.
    fn in_step(&self) -> bool {
        !self.short && self.used == self.queue.len()
    }
}

/// Appends row `i` of `from` to `into`.
pub(super) fn push_row(into: &mut Columns, from: &Columns, i: usize) {
    into.addr.push(from.addr[i]);
    into.thread.push(from.thread[i]);
    into.inst.push(from.inst[i]);
    into.dyn_inst.push(from.dyn_inst[i]);
    into.size.push(from.size[i]);
    into.flags.push(from.flags[i]);
}
