//! A kernel taken apart into its header and its columns, and put back together: how a kernel
//! moves between two memories without being written out and parsed again (the web build
//! loads and generates traces in a Web Worker, whose memory is not the page's, and hands the
//! columns over as typed arrays). Putting it back checks what the kernel's own methods rely
//! on, so that parts that do not fit give an error rather than a kernel that panics later.

use super::*;

/// A kernel's name, shape, order, instructions and source facts: everything but its rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelHeader {
    pub name: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub order: Order,
    pub instructions: Vec<Instruction>,
    pub info: KernelInfo,
}

/// A kernel apart ([`Kernel::into_parts`]): its header, its rows, and for a kernel the
/// scheduler orders the first row of each CTA and the end (empty for an issued-order one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParts {
    pub header: KernelHeader,
    pub columns: Columns,
    pub cta_starts: Vec<u32>,
}

/// Why parts do not make a kernel ([`Kernel::from_parts`]).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PartsError {
    #[error("the columns have different lengths")]
    Lengths,
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("the CTA starts do not fit the kernel's {ctas} CTAs and {rows} rows")]
    CtaStarts { ctas: u64, rows: usize },
}

impl Kernel {
    /// The kernel apart, without copying its rows.
    pub fn into_parts(self) -> KernelParts {
        KernelParts {
            header: KernelHeader {
                name: self.name,
                grid: self.grid,
                block: self.block,
                order: self.order,
                instructions: self.instructions,
                info: self.info,
            },
            columns: self.cols,
            cta_starts: self.cta_starts,
        }
    }

    /// The kernel [`Kernel::into_parts`] took apart, checked: the columns of one length, the
    /// threads inside the grid, the instructions declared, the flags valid, and each CTA's
    /// rows a range of the rows, in order, ending at the last (rows grouped by thread in
    /// increasing order are the reader's promise; they are not sorted again).
    pub fn from_parts(parts: KernelParts) -> Result<Kernel, PartsError> {
        parts.check_lengths()?;
        parts.check_rows(0..parts.columns.len())?;
        Self::from_parts_rows_checked(parts)
    }

    /// [`Kernel::from_parts`] for parts whose every row [`KernelParts::check_rows`] has
    /// checked (a caller that checks a large kernel in pieces, between frames): the rest is
    /// checked here.
    pub fn from_parts_rows_checked(parts: KernelParts) -> Result<Kernel, PartsError> {
        parts.check_lengths()?;
        let KernelParts {
            header: h,
            columns: cols,
            cta_starts,
        } = parts;
        let n = cols.addr.len();
        let ctas = h.grid.count();
        let starts_fit = match h.order {
            Order::Issued => cta_starts.is_empty(),
            _ => {
                cta_starts.len() as u64 == ctas + 1
                    && cta_starts.first() == Some(&0)
                    && cta_starts.last().map(|&l| l as usize) == Some(n)
                    && cta_starts.windows(2).all(|w| w[0] <= w[1])
            }
        };
        if !starts_fit {
            return Err(PartsError::CtaStarts { ctas, rows: n });
        }
        Ok(Kernel {
            name: h.name,
            grid: h.grid,
            block: h.block,
            order: h.order,
            instructions: h.instructions,
            info: h.info,
            cols,
            cta_starts,
        })
    }
}

impl KernelParts {
    /// The columns of one length, the shape a grid the model holds.
    fn check_lengths(&self) -> Result<(), PartsError> {
        let (c, h) = (&self.columns, &self.header);
        let n = c.addr.len();
        let lengths = [
            c.thread.len(),
            c.inst.len(),
            c.dyn_inst.len(),
            c.size.len(),
            c.flags.len(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(PartsError::Lengths);
        }
        if h.grid.count() == 0 || h.block.count() == 0 || self.threads() > u32::MAX as u64 + 1 {
            return Err(BuildError::BadShape.into());
        }
        if n > u32::MAX as usize {
            return Err(BuildError::TooManyRows.into());
        }
        Ok(())
    }

    fn threads(&self) -> u64 {
        self.header
            .grid
            .count()
            .saturating_mul(self.header.block.count())
    }

    /// Checks rows `rows` as the builder checks them: the thread inside the grid, the kind
    /// and space known, and, unless the row is a barrier, its instruction declared and its
    /// size not zero. Rows past the end of a column are an error.
    pub fn check_rows(&self, rows: std::ops::Range<usize>) -> Result<(), PartsError> {
        let c = &self.columns;
        if rows.start > rows.end {
            return Err(PartsError::Lengths);
        }
        let part = |len: usize| rows.start.min(len)..rows.end.min(len);
        let (thread, flags) = (
            &c.thread[part(c.thread.len())],
            &c.flags[part(c.flags.len())],
        );
        let (inst, size) = (&c.inst[part(c.inst.len())], &c.size[part(c.size.len())]);
        if [thread.len(), flags.len(), inst.len(), size.len()]
            .iter()
            .any(|&l| l != rows.len())
        {
            return Err(PartsError::Lengths);
        }
        let count = self.header.instructions.len();
        check_rows((thread, flags, inst, size), self.threads(), count).map_err(PartsError::from)
    }
}

/// Every row as the builder checks it (see [`KernelParts::check_rows`]).
fn check_rows(
    (thread, flags, inst, size): (&[u32], &[u8], &[u32], &[u16]),
    threads: u64,
    count: usize,
) -> Result<(), BuildError> {
    let barrier = AccessKind::Barrier.code();
    let spaces = MemSpace::ALL.len() as u8;
    for (((&thread, &flags), &inst), &size) in thread.iter().zip(flags).zip(inst).zip(size) {
        let kind = flags & 0x1f;
        if (VALID_KINDS >> kind) & 1 == 0 || flags >> 5 >= spaces {
            return Err(BuildError::BadFlags { flags });
        }
        if thread as u64 >= threads {
            return Err(BuildError::ThreadOutOfRange {
                thread: thread as u64,
                threads,
            });
        }
        if kind != barrier && inst as usize >= count {
            return Err(BuildError::UnknownInstruction { inst, count });
        }
        if kind != barrier && size == 0 {
            return Err(BuildError::ZeroSize);
        }
    }
    Ok(())
}
