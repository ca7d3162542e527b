//! The kernel language's memory: where each global array is once laid out and what is known
//! of its contents, and the accesses of a thread (or the host code) to them. Host code
//! fixes an array's length when it first touches it (or, for `int col[];`, grows it as it
//! writes); every array is laid out at the first launch, as the generators lay out their
//! buffers. Only a kernel's accesses are traced.

use rustc_hash::FxHashMap;

use super::ast::*;
use super::eval::{err, expr_pos, RunError, Side, Thread, Val};
use crate::rng::Rng;
use crate::trace::AtomicOp;

/// Most elements whose values one array may hold (host code writing past it is an error).
pub(super) const MAX_HELD: u64 = 1 << 28;

/// A global array: its place in memory once laid out, and what is known of its contents.
#[derive(Clone, Debug, Default)]
pub(super) struct Array {
    pub elem: u64,
    /// Fixed when the host code first touches the array, or when the arrays are laid out.
    pub len: Option<u64>,
    pub base: u64,
    /// Known contents: `= random(...)`, or touched by the host code (zero where it wrote
    /// nothing); kernels' stores update them.
    pub values: Option<Vec<Val>>,
    /// Declared without a length (`int col[];`): it grows as the host code writes it.
    pub growable: bool,
    /// Its length is being worked out (to catch a length that needs itself).
    pub fixing: bool,
}

/// The global arrays, in declaration order.
#[derive(Debug, Default)]
pub(super) struct Memory {
    pub arrays: Vec<Array>,
    pub by_name: FxHashMap<String, usize>,
}

impl<'a> Thread<'a, '_> {
    /// Fixes the length of array `k` (host code only: in a kernel every length is fixed).
    pub(super) fn fix_len(&mut self, k: usize) -> Result<(), RunError> {
        let arr = &self.mem.arrays[k];
        if arr.len.is_some() || arr.growable {
            return Ok(());
        }
        let Side::Host { decls, .. } = &self.side else {
            return Ok(());
        };
        let d: &'a ArrayDecl = decls[k];
        if arr.fixing {
            return err(
                d.pos,
                format!("the length of `{}` depends on itself", d.name),
            );
        }
        self.mem.arrays[k].fixing = true;
        let Some(len_expr) = &d.len else {
            return Ok(());
        };
        let len = self.known(len_expr, "an array's length")?;
        if len < 1 {
            return err(
                d.pos,
                format!("`{}` has {len} elements: expected at least 1", d.name),
            );
        }
        let values = match &d.random {
            None => None,
            Some((seed, bound)) => {
                let seed = self.known(seed, "the seed")?;
                let bound = self.known(bound, "the bound")?;
                if bound < 1 {
                    return err(
                        d.pos,
                        format!("random(_, {bound}): the bound is at least 1"),
                    );
                }
                if len as u64 > MAX_HELD {
                    return err(d.pos, format!("`{}` is too long to hold known data ({len} elements; at most {MAX_HELD})", d.name));
                }
                let mut rng = Rng::new(seed as u64);
                Some(
                    (0..len)
                        .map(|_| Some(rng.below(bound as u64) as i64))
                        .collect(),
                )
            }
        };
        let arr = &mut self.mem.arrays[k];
        arr.len = Some(len as u64);
        arr.values = values;
        Ok(())
    }

    /// Lays the arrays out from `base`, one after another, as the generators lay out their
    /// buffers (host code, at the first launch): each length and element size is fixed now.
    pub(super) fn lay_out(&mut self) -> Result<(), RunError> {
        for k in 0..self.mem.arrays.len() {
            self.fix_len(k)?;
            let Side::Host { decls, .. } = &self.side else {
                return Ok(());
            };
            let d: &'a ArrayDecl = decls[k];
            let elem = self.known(&d.elem, "an element size")?;
            if ![1, 2, 4, 8, 16].contains(&elem) {
                return err(
                    d.pos,
                    format!(
                        "`{}`: elements of {elem} bytes; expected 1, 2, 4, 8 or 16",
                        d.name
                    ),
                );
            }
            let base = match &d.base {
                Some(b) => Some(self.known(b, "an address")?),
                None => None,
            };
            let arr = &mut self.mem.arrays[k];
            if arr.growable {
                let n = arr.values.as_ref().map_or(0, Vec::len);
                if n == 0 {
                    return err(
                        d.pos,
                        format!("`{}` has no elements: the host code wrote none", d.name),
                    );
                }
                arr.len = Some(n as u64);
                arr.growable = false;
            }
            arr.elem = elem as u64;
            let bytes = arr.len.unwrap_or(1).saturating_mul(arr.elem);
            let Side::Host { layout, .. } = &mut self.side else {
                return Ok(());
            };
            arr.base = match (base, layout.as_mut()) {
                (Some(b), _) => b as u64,
                (None, Some(l)) => l.alloc(bytes),
                (None, None) => 0,
            };
        }
        if let Side::Host { layout, .. } = &mut self.side {
            *layout = None;
        }
        Ok(())
    }

    /// The array and element an access names, checked (`None` for shared memory). Host code
    /// writing an array declared without a length makes it longer.
    pub(super) fn locate(
        &mut self,
        a: &'a Access,
        index: Val,
        write: bool,
    ) -> Result<Option<(usize, u64)>, RunError> {
        let host = self.host();
        if self.env.shared.contains(&a.array) {
            if host {
                return err(
                    a.pos,
                    format!("`{}` is shared memory, which only kernels have", a.array),
                );
            }
            return Ok(None);
        }
        let Some(&k) = self.mem.by_name.get(&a.array) else {
            return err(
                a.pos,
                format!(
                    "`{}` is not an array declared at the top (write `float {}[N];`)",
                    a.array, a.array
                ),
            );
        };
        let at = match expr_pos(&a.index) {
            0 => a.pos,
            p => p,
        };
        let Some(i) = index else {
            return err(at, format!("the index into `{}` depends on data loaded from memory that the program never wrote (a trace has addresses, not data)", a.array));
        };
        if host {
            self.fix_len(k)?;
        }
        let arr = &mut self.mem.arrays[k];
        let outside = |len: u64| {
            err(
                at,
                format!("index {i} is outside `{}` ({len} elements)", a.array),
            )
        };
        if i < 0 {
            return outside(arr.len.unwrap_or(0));
        }
        let i = i as u64;
        match arr.len {
            Some(len) if i >= len => outside(len),
            Some(len) => {
                // What the host code touches is known: zero until written.
                if host && arr.values.is_none() {
                    if len > MAX_HELD {
                        return err(a.pos, format!("`{}` is too long to hold known data ({len} elements; at most {MAX_HELD})", a.array));
                    }
                    arr.values = Some(vec![Some(0); len as usize]);
                }
                Ok(Some((k, i)))
            }
            None => {
                let values = arr.values.get_or_insert_with(Vec::new);
                if (values.len() as u64) <= i {
                    if !write {
                        return err(at, format!("element {i} of `{}` is read before the host code writes it ({} written so far)", a.array, values.len()));
                    }
                    if i >= MAX_HELD {
                        return err(
                            at,
                            format!("`{}` would grow past {MAX_HELD} elements", a.array),
                        );
                    }
                    values.resize(i as usize + 1, Some(0));
                }
                Ok(Some((k, i)))
            }
        }
    }

    /// Emits an access of element `i` of array `k` (in a kernel; the host's are not traced).
    pub(super) fn trace(
        &mut self,
        k: usize,
        i: u64,
        inst: u32,
        kind: Option<AtomicOp>,
        load: bool,
    ) {
        let dyn_inst = self.instance();
        let arr = &self.mem.arrays[k];
        let (at, size) = (arr.base + i * arr.elem, arr.elem as u16);
        if let Side::Device { emit, .. } = &mut self.side {
            match (kind, load) {
                (Some(op), _) => emit.atomic_at(inst, dyn_inst, op, at, size),
                (None, true) => emit.ld_sized(inst, dyn_inst, at, size),
                (None, false) => emit.st_sized(inst, dyn_inst, at, size),
            }
        }
    }

    /// Reads an element: a load in a kernel; its value if known.
    pub(super) fn read(&mut self, a: &'a Access, index: Val, inst: u32) -> Result<Val, RunError> {
        let Some((k, i)) = self.locate(a, index, false)? else {
            return Ok(None);
        };
        self.trace(k, i, inst, None, true);
        Ok(self.mem.arrays[k]
            .values
            .as_ref()
            .and_then(|v| v.get(i as usize).copied().flatten()))
    }

    /// Writes an element: a store in a kernel; the value is kept where the contents are
    /// known.
    pub(super) fn write(&mut self, a: &'a Access, index: Val, v: Val) -> Result<(), RunError> {
        let Some((k, i)) = self.locate(a, index, true)? else {
            return Ok(());
        };
        self.trace(k, i, a.store_inst, None, false);
        let arr = &mut self.mem.arrays[k];
        if let Some(slot) = arr.values.as_mut().and_then(|x| x.get_mut(i as usize)) {
            *slot = v;
        }
        Ok(())
    }
}

/// The value an atomic leaves in memory (CUDA's definitions), from the old one and its
/// arguments; not known if any of them is not.
pub(super) fn atomic(op: AtomicOp, old: Val, args: &[Val]) -> Val {
    let old = old?;
    let v = args.first().copied().flatten()?;
    Some(match op {
        AtomicOp::Add => old.wrapping_add(v),
        AtomicOp::Sub => old.wrapping_sub(v),
        AtomicOp::Min => old.min(v),
        AtomicOp::Max => old.max(v),
        AtomicOp::Inc => {
            if old >= v {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > v {
                v
            } else {
                old - 1
            }
        }
        AtomicOp::Exch => v,
        AtomicOp::Cas => {
            let new = args.get(1).copied().flatten()?;
            if old == v {
                new
            } else {
                old
            }
        }
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
    })
}
