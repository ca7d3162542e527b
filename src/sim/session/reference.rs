//! A reference stream (a Dinero `din` file: one thread, never coalesced) simulated as chunks
//! of rows arrive, never held whole.

use super::*;

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
        self.stream = Some(Stream {
            ki: self.next_kernel,
            name: header.name.clone(),
            instructions: header.instructions.clone(),
            sm,
            slot,
            coalescer,
            insts: vec![Counters::default(); header.instructions.len()],
            cta: Counters::default(),
            rows: 0,
            warp_insts: 0,
            pending: Columns::default(),
            measured: self
                .measured_apart
                // With reuse distances off, the stage measures the shadow's stand-ins.
                .then(|| super::apart::Measured::new(self.cfg.reuse)),
        });
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
        let Some(st) = self.stream.as_mut() else {
            return;
        };
        st.rows += range.len() as u64;
        self.done += range.len() as u64;
        let Some(slot) = st.slot else {
            return;
        };
        let sim = &mut self.sims[slot];
        let events = obs.wants_requests();
        let key = |c: &Columns, i: usize| (c.inst[i], c.dyn_inst[i]);
        let barrier = |c: &Columns, i: usize| c.flags[i] & 0x1f == BARRIER_CODE;
        let mut i = range.start;
        let end = range.end;
        // A warp instruction begun in the previous chunk.
        if !st.pending.is_empty() {
            let k0 = key(&st.pending, 0);
            while i < end && !barrier(cols, i) && key(cols, i) == k0 {
                push_row(&mut st.pending, cols, i);
                i += 1;
            }
            if i == end {
                return;
            }
            let pending = std::mem::take(&mut st.pending);
            st.warp_instruction(sim, &pending, 0..pending.len(), events, obs);
            st.pending = pending;
            st.pending.clear();
        }
        while i < end {
            if barrier(cols, i) {
                i += 1;
                continue;
            }
            let k0 = key(cols, i);
            let mut j = i + 1;
            while j < end && !barrier(cols, j) && key(cols, j) == k0 {
                j += 1;
            }
            if j == end {
                // It may go on in the next chunk.
                for r in i..j {
                    push_row(&mut st.pending, cols, r);
                }
                return;
            }
            st.warp_instruction(sim, cols, i..j, events, obs);
            i = j;
        }
    }

    /// Ends the streamed kernel and adds its rows to the report (its last warp instruction,
    /// which could have gone on in another chunk, is simulated now).
    pub fn end_stream(&mut self, observer: &mut dyn Observer) {
        let Some(mut st) = self.stream.take() else {
            return;
        };
        if !st.pending.is_empty() {
            if let Some(slot) = st.slot {
                let pending = std::mem::take(&mut st.pending);
                st.warp_instruction(
                    &mut self.sims[slot],
                    &pending,
                    0..pending.len(),
                    observer.wants_requests(),
                    observer,
                );
            }
        }
        if let Some(slot) = st.slot {
            self.sims[slot].counters.add(&st.cta);
        }
        if st.measured.as_ref().is_some_and(|m| !m.in_step()) {
            self.out_of_step = true;
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
            &[st.cta],
            |_| Some(sm),
        );
    }
}

impl Stream {
    /// Simulates rows `range` of `cols`, one warp instruction of the streamed kernel's thread.
    #[inline]
    fn warp_instruction(
        &mut self,
        sim: &mut SmSim,
        cols: &Columns,
        range: std::ops::Range<usize>,
        events: bool,
        obs: &mut dyn Observer,
    ) {
        // As the coalescer does: accesses that bypass the L1 make no request, and the
        // instruction writes when its last access that reaches the L1 does.
        let mut used = 0u64;
        let mut write = false;
        for r in range.clone() {
            let (kind, space) = crate::trace::model_flags(cols.flags[r]);
            if space.reaches_l1() {
                used += 1;
                write = kind.is_write();
            }
        }
        if used == 0 {
            return;
        }
        self.warp_insts += 1;
        let inst = cols.inst[range.start];
        let Some(ic) = self.insts.get_mut(inst as usize) else {
            return;
        };
        ic.accesses += used;
        self.cta.accesses += used;
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
            self.coalescer
                .split(cols.addr[r], cols.size[r] as u64, write, |c| {
                    let (o, reuse_distance) = match &mut self.measured {
                        Some(m) => {
                            let (o, d) = sim.access_measured(&c.request, m.next());
                            (o, d.filter(|_| m.real))
                        }
                        None => sim.access(&c.request),
                    };
                    ic.record(write, &o);
                    ic.transactions += 1;
                    self.cta.record(write, &o);
                    self.cta.transactions += 1;
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
                    }
                    sim.order += 1;
                });
        }
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
