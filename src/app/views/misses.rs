//! The miss view: the run's misses by class (all, reads, writes), then per instruction, per
//! CTA or (for traces with line info) per source line as stacked bars and a sortable table.
//!
//! Without timing, classes come per request (compulsory, capacity, conflict), so reads and
//! writes split exactly. The timing model (Nugteren et al. 2014 §6.1) finds its five classes
//! by comparing whole runs, so they exist per instruction and per CTA (in the report) but not
//! per request; its stores do not pass through the L1 at all (rule `stores`), and the view
//! says so instead of letting them vanish.

use egui::{Color32, RichText, Ui};
use egui_plot::{Bar, BarChart, Legend, Plot};

use crate::app::data::{inst_label, ClassSplit, InstFilter, Outcome, SimData, TraceData};
use crate::app::theme;
use crate::cache::{Counters, MissClasses};
use crate::config::Stores;

/// Sort order of the miss tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SortBy {
    #[default]
    Row,
    Requests,
    Misses,
    MissRate,
}

/// Which table the miss view shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Per {
    #[default]
    Instruction,
    Cta,
    /// Per source line, for traces with line info (Accel-Sim `-lineinfo`).
    SourceLine,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct MissOptions {
    pub per: Per,
    pub sort: SortBy,
    pub descending: bool,
}

/// A class column of the bars and the table: its name and colour.
pub type ClassColumn = (&'static str, Color32);

/// The classes of this run, bottom of the stack first: three without timing, five with.
pub fn class_columns(d: &SimData) -> Vec<ClassColumn> {
    let mut v = vec![
        ("compulsory", theme::outcome(Outcome::Compulsory)),
        ("capacity", theme::outcome(Outcome::Capacity)),
        ("conflict", theme::outcome(Outcome::Conflict)),
    ];
    if d.config.timing.is_some() {
        v.push(("latency", theme::LATENCY));
        v.push(("MSHR", theme::MSHR));
    }
    v
}

/// Misses per class column, for reads and for writes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClassCounts {
    pub reads: [u64; 5],
    pub writes: [u64; 5],
}

impl ClassCounts {
    /// From the per-request split (no timing): the three classes of each request.
    fn from_split(s: &ClassSplit) -> Self {
        let of = |w| {
            [
                s.get(w, Outcome::Compulsory),
                s.get(w, Outcome::Capacity),
                s.get(w, Outcome::Conflict),
                0,
                0,
            ]
        };
        ClassCounts {
            reads: of(false),
            writes: of(true),
        }
    }
    /// From the report's classes (timing): every request is a load, so all are reads.
    fn from_classes(c: &MissClasses) -> Self {
        ClassCounts {
            reads: [c.compulsory, c.capacity, c.conflict, c.latency, c.mshr],
            writes: [0; 5],
        }
    }
}

/// A table row: label, requests, misses, classes, stores that bypassed the L1, and the
/// Nsight-Compute-like measures of its traffic.
#[derive(Clone, Debug, PartialEq)]
pub struct MissRow {
    pub label: String,
    /// The instruction (kernel, id) of a per-instruction row.
    pub inst: Option<(u16, u32)>,
    pub requests: u64,
    pub misses: u64,
    pub classes: ClassCounts,
    pub bypassed: u64,
    /// Thread accesses served, and memory transactions (sectors or segments) made.
    pub accesses: u64,
    pub transactions: u64,
    /// Bytes brought into the L1 (from L2 / memory) and sent out of it.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl MissRow {
    fn rate(&self) -> f64 {
        self.misses as f64 / self.requests.max(1) as f64
    }
    /// Thread accesses per request: how well the warp's accesses coalesced (32 for a warp
    /// of 4-byte accesses to one 128-byte line).
    pub fn accesses_per_request(&self) -> f64 {
        self.accesses as f64 / self.requests.max(1) as f64
    }
    /// Memory transactions (sectors with sectored lines) per request.
    pub fn transactions_per_request(&self) -> f64 {
        self.transactions as f64 / self.requests.max(1) as f64
    }
}

fn row(d: &SimData, label: String, c: &Counters, split: &ClassSplit) -> MissRow {
    let timing = d.config.timing.is_some();
    MissRow {
        label,
        inst: None,
        requests: c.requests,
        misses: c.misses,
        classes: if timing {
            ClassCounts::from_classes(&c.miss_classes)
        } else {
            ClassCounts::from_split(split)
        },
        bypassed: if timing { c.writes } else { 0 },
        accesses: c.accesses,
        transactions: c.transactions,
        bytes_in: c.bytes_from_memory,
        bytes_out: c.bytes_to_memory,
    }
}

/// The rows of the per-instruction or per-CTA table, in report order.
pub fn rows(d: &SimData, trace: &TraceData, per: Per) -> Vec<MissRow> {
    let several = trace.trace.kernels.len() > 1;
    let split = |v: &[ClassSplit], i: usize| v.get(i).copied().unwrap_or_default();
    match per {
        Per::Instruction => d
            .report
            .instructions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut label = inst_label(several, r.kernel, &r.name);
                if let Some(l) = r.line {
                    label.push_str(&format!(" (line {l})"));
                }
                MissRow {
                    inst: Some((r.kernel.min(u16::MAX as u32) as u16, r.inst)),
                    ..row(d, label, &r.counters, &split(&d.per_inst, i))
                }
            })
            .collect(),
        Per::Cta => d
            .report
            .ctas
            .iter()
            .enumerate()
            .filter(|(_, r)| r.counters.requests > 0 || r.counters.writes > 0)
            .map(|(i, r)| {
                let k = if several {
                    format!("k{} ", r.kernel)
                } else {
                    String::new()
                };
                let label = format!("{k}({},{},{})", r.cta.x, r.cta.y, r.cta.z);
                row(d, label, &r.counters, &split(&d.per_cta, i))
            })
            .collect(),
        Per::SourceLine => {
            let names: std::collections::BTreeSet<&str> = d
                .report
                .source_lines
                .iter()
                .map(|l| l.kernel_name.as_str())
                .collect();
            let kernel_name = |k: u32| {
                d.report
                    .kernels
                    .iter()
                    .find(|r| r.kernel == k)
                    .map_or("", |r| r.name.as_str())
            };
            d.report
                .source_lines
                .iter()
                .map(|l| {
                    // The line's classes: the sum of its instructions' (over every launch).
                    let mut sum = ClassSplit::default();
                    for (i, r) in d.report.instructions.iter().enumerate() {
                        if r.line == Some(l.line) && kernel_name(r.kernel) == l.kernel_name {
                            let s = split(&d.per_inst, i);
                            for (a, b) in sum.counts.iter_mut().zip(s.counts) {
                                for (x, y) in a.iter_mut().zip(b) {
                                    *x += y;
                                }
                            }
                        }
                    }
                    let label = if names.len() > 1 {
                        format!(
                            "{} line {}",
                            crate::sim::short_name(&l.kernel_name, 24),
                            l.line
                        )
                    } else {
                        format!("line {}", l.line)
                    };
                    row(d, label, &l.counters, &sum)
                })
                .collect()
        }
    }
}

/// What the timing model did with stores, for the header (`None` without timing).
pub fn store_note(d: &SimData) -> Option<String> {
    let t = d.config.timing.as_ref()?;
    Some(match t.rules.stores {
        Stores::Bypass => format!(
            "{} store requests bypassed the L1 (timing model, rule stores=bypass): they are \
             writes to memory, not requests",
            d.report.totals.writes
        ),
        Stores::Dropped => "stores were dropped when the trace was read (timing model, rule \
                            stores=dropped, as in the released model)"
            .to_string(),
    })
}

/// The rows kept between frames for one pane (built again only for a new result or another
/// table or sort order).
#[derive(Default)]
pub struct MissState {
    rows: Vec<MissRow>,
    order: Vec<usize>,
    key: Option<(u64, Per, SortBy, bool)>,
}

/// The traffic columns of the table (Nsight Compute's names in the hovers).
const MEASURES: [(&str, &str); 4] = [
    (
        "accesses / request",
        "Thread accesses served per request: how well a warp's accesses coalesce (32 for 32 \
         threads reading 4 bytes each from one 128-byte line)",
    ),
    (
        "transactions / request",
        "Memory transactions per request: sectors with sectored lines (Nsight Compute's \
         sectors per request), segments under GT200 coalescing, else 1",
    ),
    (
        "bytes in",
        "Bytes brought into the L1 from L2 / memory by misses (Nsight Compute's L2 to L1 bytes)",
    ),
    (
        "bytes out",
        "Bytes the L1 sends to L2 / memory: write-through stores and write-backs",
    ),
];

/// What the user changes in the miss view: its options, and the instruction the address view
/// is limited to (clicking an instruction's name).
pub struct MissChoices<'a> {
    pub opts: &'a mut MissOptions,
    pub only: &'a mut Option<InstFilter>,
}

/// Colour of the stores that bypass the L1 in the timing model.
const BYPASS: Color32 = Color32::from_gray(140);

pub fn misses(
    ui: &mut Ui,
    pane: usize,
    d: &SimData,
    trace: &TraceData,
    generation: u64,
    state: &mut MissState,
    choices: MissChoices,
) {
    let MissChoices { opts, only } = choices;
    let t = &d.report.totals;
    let mc = &t.miss_classes;
    let columns = class_columns(d);
    let class_values = [mc.compulsory, mc.capacity, mc.conflict, mc.latency, mc.mshr];
    let split: Vec<String> = columns
        .iter()
        .zip(class_values)
        .map(|((name, _), v)| format!("{v} {name}"))
        .collect();
    ui.label(format!(
        "{} requests, {} misses ({:.2}%): {}",
        t.requests,
        t.misses,
        d.miss_percent(),
        split.join(", ")
    ));
    let stores = store_note(d);
    if let Some(note) = &stores {
        ui.label(RichText::new(note).weak());
    }
    let h = ui.available_height();
    // Totals: all, reads and writes.
    let mut totals = ClassCounts::default();
    if d.config.timing.is_some() {
        totals = ClassCounts::from_classes(mc);
    } else {
        for s in &d.per_inst {
            let c = ClassCounts::from_split(s);
            for k in 0..5 {
                totals.reads[k] += c.reads[k];
                totals.writes[k] += c.writes[k];
            }
        }
    }
    let bypassed = if d.config.timing.is_some() {
        t.writes
    } else {
        0
    };
    Plot::new(("miss-totals", pane))
        .height(h * 0.25)
        .legend(Legend::default().follow_insertion_order(true))
        .y_axis_label("misses")
        // Room on the right for the legend.
        .include_x(-0.5)
        .include_x(3.9)
        .x_axis_formatter(|m, _| match m.value as i64 {
            0 if m.value.fract() == 0.0 => "all".into(),
            1 if m.value.fract() == 0.0 => "reads".into(),
            2 if m.value.fract() == 0.0 => "writes".into(),
            _ => String::new(),
        })
        .include_y(0.0)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .show(ui, |pui| {
            let mut below: Vec<BarChart> = Vec::new();
            for (k, (name, colour)) in columns.iter().enumerate() {
                let bars = vec![
                    Bar::new(0.0, class_values[k] as f64).width(0.6),
                    Bar::new(1.0, totals.reads[k] as f64).width(0.6),
                    Bar::new(2.0, totals.writes[k] as f64).width(0.6),
                ];
                let refs: Vec<&BarChart> = below.iter().collect();
                below.push(BarChart::new(*name, bars).color(*colour).stack_on(&refs));
            }
            if bypassed > 0 {
                below.push(
                    BarChart::new(
                        "stores past the L1",
                        vec![Bar::new(2.0, bypassed as f64).width(0.6)],
                    )
                    .color(BYPASS),
                );
            }
            // Top of the stack first, so the legend reads in the order the bars stack.
            for c in below.into_iter().rev() {
                pui.bar_chart(c);
            }
        });
    ui.horizontal(|ui| {
        ui.selectable_value(&mut opts.per, Per::Instruction, "per instruction");
        ui.selectable_value(&mut opts.per, Per::Cta, "per CTA");
        if d.report.source_lines.is_empty() {
            if opts.per == Per::SourceLine {
                opts.per = Per::Instruction;
            }
        } else {
            ui.selectable_value(&mut opts.per, Per::SourceLine, "per source line")
                .on_hover_text(
                    "The trace carries source line numbers (Accel-Sim TRACE_LINEINFO=1 of a \
                     binary built with nvcc -lineinfo): each row sums the memory instructions of \
                     one line of the kernel's source file",
                );
        }
        ui.label(RichText::new("click a column header to sort").weak());
    });
    let key = (generation, opts.per, opts.sort, opts.descending);
    if state.key != Some(key) {
        let rows = rows(d, trace, opts.per);
        let mut order: Vec<usize> = (0..rows.len()).collect();
        match opts.sort {
            SortBy::Row => {}
            SortBy::Requests => order.sort_by_key(|&i| rows[i].requests),
            SortBy::Misses => order.sort_by_key(|&i| rows[i].misses),
            SortBy::MissRate => order.sort_by(|&a, &b| rows[a].rate().total_cmp(&rows[b].rate())),
        }
        if opts.descending {
            order.reverse();
        }
        state.rows = rows;
        state.order = order;
        state.key = Some(key);
    }
    let (rows, order) = (&state.rows, &state.order);
    // Stacked bars of the first rows in table order.
    let shown: Vec<usize> = order.iter().copied().take(40).collect();
    Plot::new(("miss-rows", pane))
        .height(h * 0.3)
        .legend(Legend::default().follow_insertion_order(true))
        .y_axis_label("misses (reads + writes)")
        .x_axis_formatter({
            let labels: Vec<String> = shown.iter().map(|&i| rows[i].label.clone()).collect();
            move |m, _| {
                if m.value.fract() == 0.0 && m.value >= 0.0 {
                    labels.get(m.value as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        })
        .include_x(-0.5)
        .include_x(shown.len() as f64 + 0.9)
        .include_y(0.0)
        .show(ui, |pui| {
            let mut below: Vec<BarChart> = Vec::new();
            for (k, (name, colour)) in columns.iter().enumerate() {
                let bars = shown
                    .iter()
                    .enumerate()
                    .map(|(x, &i)| {
                        let c = &rows[i].classes;
                        Bar::new(x as f64, (c.reads[k] + c.writes[k]) as f64)
                            .width(0.7)
                            .name(&rows[i].label)
                    })
                    .collect();
                let refs: Vec<&BarChart> = below.iter().collect();
                below.push(BarChart::new(*name, bars).color(*colour).stack_on(&refs));
            }
            for c in below.into_iter().rev() {
                pui.bar_chart(c);
            }
        });
    table(
        ui,
        pane,
        (rows, order),
        &columns,
        stores.is_some(),
        MissChoices { opts, only },
    );
}

/// The sortable table.
fn table(
    ui: &mut Ui,
    pane: usize,
    (rows, order): (&[MissRow], &[usize]),
    columns: &[ClassColumn],
    timing: bool,
    choices: MissChoices,
) {
    let MissChoices { opts, only } = choices;
    let header = |ui: &mut Ui, text: &str, key: SortBy, opts: &mut MissOptions| {
        let arrow = match (opts.sort == key, opts.descending) {
            (true, true) => " v",
            (true, false) => " ^",
            (false, _) => "",
        };
        if ui
            .add(egui::Button::new(RichText::new(format!("{text}{arrow}")).strong()).frame(false))
            .on_hover_text("Sort by this column (again to reverse)")
            .clicked()
        {
            if opts.sort == key {
                opts.descending = !opts.descending;
            } else {
                opts.sort = key;
                opts.descending = key != SortBy::Row;
            }
        }
    };
    // Scrolls both ways: a narrow pane keeps its width (the table scrolls instead).
    egui::ScrollArea::both()
        .id_salt(("miss-table", pane))
        .auto_shrink([false, false])
        .show_rows(ui, 18.0, order.len() + 1, |ui, range| {
            egui::Grid::new(("miss-grid", pane))
                .striped(true)
                .num_columns(8 + columns.len() + timing as usize)
                .show(ui, |ui| {
                    if range.start == 0 {
                        let what = match opts.per {
                            Per::Cta => "CTA",
                            Per::Instruction => "instruction",
                            Per::SourceLine => "source line",
                        };
                        header(ui, what, SortBy::Row, opts);
                        header(ui, "requests", SortBy::Requests, opts);
                        header(ui, "misses", SortBy::Misses, opts);
                        header(ui, "miss rate", SortBy::MissRate, opts);
                        for (text, hover) in MEASURES {
                            ui.label(RichText::new(text).strong()).on_hover_text(hover);
                        }
                        for (name, colour) in columns {
                            let text = if timing {
                                name.to_string()
                            } else {
                                format!("{name} R/W")
                            };
                            ui.label(RichText::new(text).color(*colour));
                        }
                        if timing {
                            ui.label(RichText::new("stores past the L1").color(BYPASS))
                                .on_hover_text(
                                    "Stores do not pass through the L1 in the timing model",
                                );
                        }
                        ui.end_row();
                    }
                    for &i in order
                        .iter()
                        .skip(range.start.saturating_sub(1))
                        .take(range.end - range.start.max(1))
                    {
                        let r = &rows[i];
                        match r.inst {
                            // An instruction: click to see only its requests in the address
                            // view (again to see all).
                            Some((kernel, inst)) => {
                                let chosen =
                                    only.as_ref().is_some_and(|f| f.key() == (kernel, inst));
                                if ui
                                    .selectable_label(chosen, &r.label)
                                    .on_hover_text(
                                        "Show only this instruction's requests in the address view",
                                    )
                                    .clicked()
                                {
                                    *only = (!chosen).then(|| InstFilter {
                                        kernel,
                                        inst,
                                        name: r.label.clone(),
                                    });
                                }
                            }
                            None => {
                                ui.label(&r.label);
                            }
                        }
                        ui.label(r.requests.to_string());
                        ui.label(r.misses.to_string());
                        if r.requests == 0 {
                            ui.label("-");
                            ui.label("-");
                            ui.label("-");
                        } else {
                            ui.label(format!("{:.1}%", r.rate() * 100.0));
                            ui.label(format!("{:.1}", r.accesses_per_request()));
                            ui.label(format!("{:.2}", r.transactions_per_request()));
                        }
                        ui.label(crate::app::views::comm::human(r.bytes_in));
                        ui.label(crate::app::views::comm::human(r.bytes_out));
                        for k in 0..columns.len() {
                            if timing {
                                ui.label(r.classes.reads[k].to_string());
                            } else {
                                ui.label(format!("{}/{}", r.classes.reads[k], r.classes.writes[k]));
                            }
                        }
                        if timing {
                            ui.label(r.bypassed.to_string());
                        }
                        ui.end_row();
                    }
                });
        });
}
