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

use super::command::{Command, PaneCx, PaneView};
use crate::data::{InstFilter, MissRow, MissTables, Outcome, SimData};
use crate::theme;
use warpscope_core::config::Stores;

pub const ENTRY: super::Entry = super::Entry {
    view: super::View::Misses,
    name: "Miss categories",
    file_stem: "misses",
    needs_trace_in_memory: false,
    new: || Box::new(MissesView::default()),
};

pub use crate::data::Per;

/// Sort order of the miss tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SortBy {
    #[default]
    Row,
    Requests,
    Misses,
    MissRate,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// The miss view of one pane. It keeps the order of its table's rows between frames (sorted
/// again only for a new result or another table or sort order); the rows themselves are built
/// on the worker ([`crate::data::MissTables`]).
#[derive(Default)]
pub struct MissesView {
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

/// Colour of the stores that bypass the L1 in the timing model.
const BYPASS: Color32 = Color32::from_gray(140);

impl PaneView for MissesView {
    fn ui(&mut self, ui: &mut Ui, cx: &PaneCx) -> Vec<Command> {
        let mut out = Vec::new();
        let mut opts = cx.miss;
        self.draw(ui, cx, &mut opts, &mut out);
        if opts != cx.miss {
            out.push(Command::MissOptions(opts));
        }
        out
    }
}

impl MissesView {
    fn draw(&mut self, ui: &mut Ui, cx: &PaneCx, opts: &mut MissOptions, out: &mut Vec<Command>) {
        let (d, pane) = (&**cx.data, cx.pane);
        let columns = class_columns(d);
        let stores = summary(ui, d, &columns);
        let h = ui.available_height();
        // Each chart high enough for its legend (a row per class), however low the pane: the
        // pane grid scrolls before it makes panes lower than that.
        let legend = 20.0 + 18.0 * (columns.len() + 1) as f32;
        totals_chart(ui, pane, d, &columns, (h * 0.25).max(legend));
        per_choice(ui, d, opts);
        let per = opts.per;
        let tables = &*d.miss_tables;
        self.sort(tables, cx.generation, opts);
        let order = &self.order;
        // Stacked bars of the first rows in table order.
        let shown: Vec<MissRow> = order
            .iter()
            .take(40)
            .filter_map(|&i| tables.row(per, i).map(std::borrow::Cow::into_owned))
            .collect();
        rows_chart(ui, pane, &shown, &columns, (h * 0.3).max(legend));
        let table = Table {
            pane,
            per,
            tables,
            order,
            columns: &columns,
            timing: stores.is_some(),
            only: cx.only.as_ref(),
        };
        table.ui(ui, opts, out);
    }

    /// The rows of the table chosen in the order chosen, sorted again only when the result or
    /// the choice changed.
    fn sort(&mut self, tables: &MissTables, generation: u64, opts: &MissOptions) {
        let per = opts.per;
        let key = (generation, per, opts.sort, opts.descending);
        if self.key == Some(key) {
            return;
        }
        let mut order: Vec<usize> = (0..tables.len(per)).collect();
        let counts = |i: usize| tables.counts(per, i);
        let rate = |i: usize| {
            let (requests, misses) = counts(i);
            misses as f64 / requests.max(1) as f64
        };
        match opts.sort {
            SortBy::Row => {}
            SortBy::Requests => order.sort_by_cached_key(|&i| counts(i).0),
            SortBy::Misses => order.sort_by_cached_key(|&i| counts(i).1),
            SortBy::MissRate => {
                let rates: Vec<f64> = (0..order.len()).map(rate).collect();
                order.sort_by(|&a, &b| rates[a].total_cmp(&rates[b]))
            }
        }
        if opts.descending {
            order.reverse();
        }
        self.order = order;
        self.key = Some(key);
    }
}

/// The line of totals and classes above the charts, and the note on stores (returned too).
fn summary(ui: &mut Ui, d: &SimData, columns: &[ClassColumn]) -> Option<String> {
    let t = &d.report.totals;
    let split: Vec<String> = columns
        .iter()
        .zip(class_values(d))
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
    stores
}

/// The run's misses of each class, in the columns' order.
fn class_values(d: &SimData) -> [u64; 5] {
    let mc = &d.report.totals.miss_classes;
    [mc.compulsory, mc.capacity, mc.conflict, mc.latency, mc.mshr]
}

/// Stacked bars of the misses of all requests, of reads and of writes, by class.
fn totals_chart(ui: &mut Ui, pane: usize, d: &SimData, columns: &[ClassColumn], height: f32) {
    let class_values = class_values(d);
    let totals = &d.miss_tables.totals;
    let bypassed = if d.config.timing.is_some() {
        d.report.totals.writes
    } else {
        0
    };
    Plot::new(("miss-totals", pane))
        .height(height)
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
}

/// Which table: per instruction, per CTA, or per source line where the trace has them.
fn per_choice(ui: &mut Ui, d: &SimData, opts: &mut MissOptions) {
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
}

/// Stacked bars of the misses (reads and writes) of the rows shown, by class.
fn rows_chart(ui: &mut Ui, pane: usize, shown: &[MissRow], columns: &[ClassColumn], height: f32) {
    Plot::new(("miss-rows", pane))
        .height(height)
        .legend(Legend::default().follow_insertion_order(true))
        .y_axis_label("misses (reads + writes)")
        .x_axis_formatter({
            let labels: Vec<String> = shown.iter().map(|r| r.label.clone()).collect();
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
                    .map(|(x, r)| {
                        let c = &r.classes;
                        Bar::new(x as f64, (c.reads[k] + c.writes[k]) as f64)
                            .width(0.7)
                            .name(&r.label)
                    })
                    .collect();
                let refs: Vec<&BarChart> = below.iter().collect();
                below.push(BarChart::new(*name, bars).color(*colour).stack_on(&refs));
            }
            for c in below.into_iter().rev() {
                pui.bar_chart(c);
            }
        });
}

/// The sortable table: the rows of one table in the order shown.
struct Table<'a> {
    pane: usize,
    per: Per,
    tables: &'a MissTables,
    order: &'a [usize],
    columns: &'a [ClassColumn],
    timing: bool,
    /// The instruction the address view is limited to.
    only: Option<&'a InstFilter>,
}

impl Table<'_> {
    /// Draws the table; a click on a header changes `opts`, one on an instruction asks to
    /// limit the address view to it.
    fn ui(&self, ui: &mut Ui, opts: &mut MissOptions, out: &mut Vec<Command>) {
        let Table {
            pane,
            per,
            tables,
            order,
            columns,
            timing,
            ..
        } = *self;
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
                            self.header_row(ui, opts);
                        }
                        for &i in order
                            .iter()
                            .skip(range.start.saturating_sub(1))
                            .take(range.end - range.start.max(1))
                        {
                            if let Some(r) = tables.row(per, i) {
                                self.row(ui, &r, out);
                            }
                        }
                    });
            });
    }

    /// The column names; a click on a sortable one sorts by it (again to reverse).
    fn header_row(&self, ui: &mut Ui, opts: &mut MissOptions) {
        let what = match self.per {
            Per::Cta => "CTA",
            Per::Instruction => "instruction",
            Per::SourceLine => "source line",
        };
        sort_header(ui, what, SortBy::Row, opts);
        sort_header(ui, "requests", SortBy::Requests, opts);
        sort_header(ui, "misses", SortBy::Misses, opts);
        sort_header(ui, "miss rate", SortBy::MissRate, opts);
        // The classes first (what lessons compare), so a narrow pane shows them beside the
        // row's name before any scrolling.
        for (name, colour) in self.columns {
            let text = if self.timing {
                name.to_string()
            } else {
                format!("{name} R/W")
            };
            ui.label(RichText::new(text).color(*colour));
        }
        if self.timing {
            ui.label(RichText::new("stores past the L1").color(BYPASS))
                .on_hover_text("Stores do not pass through the L1 in the timing model");
        }
        for (text, hover) in MEASURES {
            ui.label(RichText::new(text).strong()).on_hover_text(hover);
        }
        ui.end_row();
    }

    /// One row: an instruction's name is a button that shows only its requests in the address
    /// view (again to see all).
    fn row(&self, ui: &mut Ui, r: &MissRow, out: &mut Vec<Command>) {
        let timing = self.timing;
        match r.inst {
            Some((kernel, inst)) => {
                let chosen = self.only.is_some_and(|f| f.key() == (kernel, inst));
                if ui
                    .selectable_label(chosen, &r.label)
                    .on_hover_text("Show only this instruction's requests in the address view")
                    .clicked()
                {
                    out.push(Command::Only {
                        pane: self.pane,
                        filter: (!chosen).then(|| InstFilter {
                            kernel,
                            inst,
                            name: r.label.clone(),
                        }),
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
        } else {
            ui.label(format!("{:.1}%", r.rate() * 100.0));
        }
        for k in 0..self.columns.len() {
            if timing {
                ui.label(r.classes.reads[k].to_string());
            } else {
                ui.label(format!("{}/{}", r.classes.reads[k], r.classes.writes[k]));
            }
        }
        if timing {
            ui.label(r.bypassed.to_string());
        }
        if r.requests == 0 {
            ui.label("-");
            ui.label("-");
        } else {
            ui.label(format!("{:.1}", r.accesses_per_request()));
            ui.label(format!("{:.2}", r.transactions_per_request()));
        }
        ui.label(crate::views::comm::human(r.bytes_in));
        ui.label(crate::views::comm::human(r.bytes_out));
        ui.end_row();
    }
}

/// A column's name as a button that sorts by `key` (again to reverse the order).
fn sort_header(ui: &mut Ui, text: &str, key: SortBy, opts: &mut MissOptions) {
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
}
