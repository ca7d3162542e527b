//! `none`: every access is its own request (split at line boundaries).

use super::{Coalesced, Coalescer};
use crate::config::choice::{Entry, Form};
use crate::config::Coalescing;
use crate::trace::Columns;

/// This model in the registry of [`Coalescing`] (see `config::choice`).
pub const ENTRY: Entry<Coalescing> = Entry {
    name: "none",
    aliases: &[],
    label: "none",
    description: "every thread's access is its own request",
    form: Form::Plain(Coalescing::None),
};

impl Coalescer {
    /// Every gathered access as requests of its own.
    pub(super) fn none(&mut self, cols: &Columns, write: bool, out: &mut Vec<Coalesced>) {
        for i in 0..self.scratch.len() {
            let (addr, r) = self.scratch[i];
            self.split(addr, cols.size[r as usize] as u64, write, |c| out.push(c));
        }
    }
}
