//! `modulo`: set = line address mod sets (a mask when the sets are a power of two).

use crate::config::choice::{Entry, Form};
use crate::config::SetIndex;

/// This function in the registry of [`SetIndex`] (see `config::choice`).
pub const ENTRY: Entry<SetIndex> = Entry {
    name: "modulo",
    aliases: &[],
    label: "modulo",
    description: "set = line address mod sets",
    form: Form::Plain(SetIndex::Modulo),
};
