//! Reading a trace on from a place in it by reading it again from its start without handing
//! on what came before: the zoom of the app for formats that have no way to seek to a CTA or
//! a chunk (our text format, Nugteren et al.'s and Crawford's, CSV and Parquet tables). The
//! reader runs as it did for the run (the same kernels, CTAs and chunks in the same order),
//! and [`SkipTo`] drops its pieces up to the place of the copy of the session, except the
//! rows of the CTAs the copy holds without them, which it gives back
//! ([`SinkHooks::resident`]). Reading is far cheaper than simulating.

use super::model::{Columns, Kernel};
use super::sink::{CtaSink, KernelSink, SinkHooks};
use super::{Location, ResumePoint, TraceError};

/// Where in a kernel a run is read on from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The first CTA numbered `.0` or more (a kernel read CTA by CTA).
    FromCta(u32),
    /// Chunk `.0` of the kernel's issued rows, counted from 0.
    FromChunk(u32),
}

impl Place {
    /// The kernel and place in it of `at` (`None` for a place in a `din` file or NVBit log,
    /// which their readers go on from themselves).
    pub fn of(at: &ResumePoint) -> Option<(u32, Place)> {
        match *at {
            ResumePoint::Cta { kernel, next_cta } => Some((kernel, Place::FromCta(next_cta))),
            ResumePoint::Issued { kernel, next_chunk } => {
                Some((kernel, Place::FromChunk(next_chunk)))
            }
            ResumePoint::Din(_) | ResumePoint::NvBit(_) => None,
        }
    }

    /// Whether a piece of the kernel is at or past the place: the rows of CTA `cta`, or with
    /// `None` the chunk of issued rows numbered `chunk`.
    pub fn reached(self, cta: Option<u32>, chunk: u32) -> bool {
        match (self, cta) {
            (Place::FromCta(next), Some(c)) => c >= next,
            (Place::FromCta(_), None) => false,
            (Place::FromChunk(n), _) => chunk >= n,
        }
    }
}

/// Where the reader stands against the place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// In a kernel before the copy's.
    Before,
    /// In the copy's kernel, before the place.
    In,
    /// At or past the place: everything goes on.
    Past,
}

/// Passes on to `out` what a reader gives from the place on (the rest of kernel `kernel`,
/// without its beginning, then every later kernel), and before it only the rows of the CTAs
/// `wanted` (in increasing order) of that kernel, as resident rows.
pub struct SkipTo<'a> {
    out: &'a mut dyn CtaSink,
    kernel: u32,
    place: Place,
    wanted: &'a [u32],
    given: Vec<u32>,
    /// Kernels begun, and chunks of issued rows met in the copy's kernel.
    begun: u32,
    chunks: u32,
    stage: Stage,
    /// The file, for errors.
    file: &'a str,
}

impl<'a> SkipTo<'a> {
    pub fn new(
        out: &'a mut dyn CtaSink,
        (kernel, place): (u32, Place),
        wanted: &'a [u32],
        file: &'a str,
    ) -> Self {
        SkipTo {
            out,
            kernel,
            place,
            wanted,
            given: Vec::with_capacity(wanted.len()),
            begun: 0,
            chunks: 0,
            stage: Stage::Before,
            file,
        }
    }

    /// After the reader ended: an error if the file had no such place.
    pub fn finish(self) -> Result<(), TraceError> {
        if self.stage == Stage::Past {
            return Ok(());
        }
        Err(self.changed(format!(
            "it has {} kernels, and the run stood in kernel {}",
            self.begun, self.kernel
        )))
    }

    fn changed(&self, what: String) -> TraceError {
        TraceError::parse(
            self.file,
            Location::Byte(0),
            format!("{what}: the file changed since the run read it"),
        )
    }

    /// The kernel read next begins: which stage it is in.
    fn next_kernel(&mut self) -> Result<Stage, TraceError> {
        if self.stage == Stage::In {
            return Err(self.changed(format!("kernel {} did not end", self.kernel)));
        }
        let index = self.begun;
        self.begun += 1;
        self.stage = match index.cmp(&self.kernel) {
            std::cmp::Ordering::Less => Stage::Before,
            std::cmp::Ordering::Equal => Stage::In,
            std::cmp::Ordering::Greater => Stage::Past,
        };
        Ok(self.stage)
    }

    /// The place is reached: the copy must have had all its resident CTAs' rows.
    fn reach(&mut self) -> Result<(), TraceError> {
        if self.given != self.wanted {
            return Err(self.changed(format!(
                "the run held CTAs {:?} of kernel {} there, the file has rows for {:?}",
                self.wanted, self.kernel, self.given
            )));
        }
        self.stage = Stage::Past;
        Ok(())
    }
}

impl KernelSink for SkipTo<'_> {
    fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
        match self.next_kernel()? {
            Stage::Before => Ok(()),
            Stage::In => Err(self.changed(format!(
                "kernel {} came whole where the run read it in pieces",
                self.kernel
            ))),
            Stage::Past => self.out.kernel(k),
        }
    }
}

impl CtaSink for SkipTo<'_> {
    fn begin_kernel(&mut self, header: &Kernel) -> Result<(), TraceError> {
        match self.next_kernel()? {
            // The copy began its kernel when the run read it.
            Stage::Before | Stage::In => Ok(()),
            Stage::Past => self.out.begin_kernel(header),
        }
    }
    fn cta(&mut self, cta: u32, rows: &Columns) -> Result<(), TraceError> {
        match self.stage {
            Stage::Before => Ok(()),
            Stage::In if self.place.reached(Some(cta), self.chunks) => {
                self.reach()?;
                self.out.cta(cta, rows)
            }
            Stage::In if self.wanted.binary_search(&cta).is_ok() => {
                self.given.push(cta);
                self.out.resident(cta, rows)
            }
            Stage::In => Ok(()),
            Stage::Past => self.out.cta(cta, rows),
        }
    }
    fn cta_taken(&mut self, cta: u32, rows: &mut Columns) -> Result<(), TraceError> {
        match self.stage {
            Stage::Past => self.out.cta_taken(cta, rows),
            _ => self.cta(cta, rows),
        }
    }
    fn issued(&mut self, rows: &Columns) -> Result<(), TraceError> {
        match self.stage {
            Stage::Before => Ok(()),
            Stage::In if self.place.reached(None, self.chunks) => {
                self.reach()?;
                self.out.issued(rows)
            }
            Stage::In => {
                self.chunks += 1;
                Ok(())
            }
            Stage::Past => self.out.issued(rows),
        }
    }
    fn end_kernel(&mut self) -> Result<(), TraceError> {
        match self.stage {
            Stage::Before => Ok(()),
            // The place is past the kernel's last piece.
            Stage::In => {
                if matches!(self.place, Place::FromChunk(n) if n != self.chunks) {
                    return Err(self.changed(format!(
                        "kernel {} has {} chunks of rows, fewer than the run had read",
                        self.kernel, self.chunks
                    )));
                }
                self.reach()?;
                self.out.end_kernel()
            }
            Stage::Past => self.out.end_kernel(),
        }
    }
    fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
        Some(self)
    }
}

impl SinkHooks for SkipTo<'_> {
    fn expect_rows(&mut self, rows: u64) {
        if self.stage == Stage::Past {
            self.out.expect_rows(rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Dim3, KernelBuilder, Order};

    /// What the receiver is told.
    #[derive(Default)]
    struct Told(Vec<String>);

    impl KernelSink for Told {
        fn kernel(&mut self, k: Kernel) -> Result<(), TraceError> {
            self.0.push(format!("kernel {}", k.name));
            Ok(())
        }
    }

    impl CtaSink for Told {
        fn begin_kernel(&mut self, h: &Kernel) -> Result<(), TraceError> {
            self.0.push(format!("begin {}", h.name));
            Ok(())
        }
        fn cta(&mut self, cta: u32, _: &Columns) -> Result<(), TraceError> {
            self.0.push(format!("cta {cta}"));
            Ok(())
        }
        fn issued(&mut self, _: &Columns) -> Result<(), TraceError> {
            self.0.push("issued".into());
            Ok(())
        }
        fn end_kernel(&mut self) -> Result<(), TraceError> {
            self.0.push("end".into());
            Ok(())
        }
        fn hooks(&mut self) -> Option<&mut dyn SinkHooks> {
            Some(self)
        }
    }

    impl SinkHooks for Told {
        fn resident(&mut self, cta: u32, _: &Columns) -> Result<(), TraceError> {
            self.0.push(format!("resident {cta}"));
            Ok(())
        }
    }

    fn header(name: &str) -> Kernel {
        KernelBuilder::new(name, Dim3::x(8), Dim3::x(32), Order::PerThread)
            .unwrap()
            .header()
    }

    /// A reader's pieces: kernel `a` of CTAs 0 to 5, kernel `b` of three chunks of issued
    /// rows, kernel `c` of CTA 0.
    fn read(out: &mut dyn CtaSink) -> Result<(), TraceError> {
        let rows = Columns::default();
        out.begin_kernel(&header("a"))?;
        for c in 0..6 {
            out.cta(c, &rows)?;
        }
        out.end_kernel()?;
        out.begin_kernel(&header("b"))?;
        for _ in 0..3 {
            out.issued(&rows)?;
        }
        out.end_kernel()?;
        out.begin_kernel(&header("c"))?;
        out.cta(0, &rows)?;
        out.end_kernel()
    }

    fn skipped(at: (u32, Place), wanted: &[u32]) -> Result<Vec<String>, String> {
        let mut told = Told::default();
        let mut skip = SkipTo::new(&mut told, at, wanted, "t.csv");
        read(&mut skip)
            .and_then(|()| skip.finish())
            .map_err(|e| e.to_string())?;
        Ok(told.0)
    }

    #[test]
    fn only_the_pieces_from_the_place_on_go_on_after_the_resident_ctas_rows() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            skipped((0, Place::FromCta(4)), &[1, 3]).unwrap(),
            s(&[
                "resident 1",
                "resident 3",
                "cta 4",
                "cta 5",
                "end",
                "begin b",
                "issued",
                "issued",
                "issued",
                "end",
                "begin c",
                "cta 0",
                "end"
            ])
        );
        // Past the kernel's last CTA: its end, then the rest.
        assert_eq!(
            skipped((0, Place::FromCta(6)), &[5]).unwrap()[..3],
            s(&["resident 5", "end", "begin b"])
        );
        assert_eq!(
            skipped((1, Place::FromChunk(2)), &[]).unwrap(),
            s(&["issued", "end", "begin c", "cta 0", "end"])
        );
        assert_eq!(
            skipped((1, Place::FromChunk(3)), &[]).unwrap(),
            s(&["end", "begin c", "cta 0", "end"])
        );
    }

    #[test]
    fn a_file_without_the_place_is_an_error_saying_it_changed() {
        for (at, wanted) in [
            // No such kernel.
            ((3, Place::FromCta(0)), &[][..]),
            // A resident CTA after the place, or with no rows.
            ((0, Place::FromCta(2)), &[1, 2][..]),
            ((2, Place::FromCta(1)), &[0, 1][..]),
            // More chunks than the kernel has.
            ((1, Place::FromChunk(4)), &[][..]),
        ] {
            let e = skipped(at, wanted).unwrap_err();
            assert!(e.contains("t.csv") && e.contains("changed"), "{at:?}: {e}");
        }
    }
}
