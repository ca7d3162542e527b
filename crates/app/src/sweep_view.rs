//! A sweep result (`warpscope sweep -o`, a shard or `sweep merge`, docs/cluster.md) as a heatmap: one column
//! of the table (the miss rate, or any counter) over two chosen keys, the other keys fixed by
//! selectors: the figure an architect puts in a paper. A window of its own, beside the panes
//! (it does not depend on the trace they show).

use std::path::Path;

use egui::{Align2, Color32, FontId, Rect, Sense, Ui};

use super::theme::ramp;
#[cfg(feature = "desktop")]
use warpscope_core::report::sweep_columns::is_metric;

/// A key column: its distinct values in the order they first come (plan order: the order
/// the user gave them in `--vary`), and each row's value as an index into them.
#[derive(Clone, Debug)]
pub struct Key {
    pub name: String,
    pub rows: Vec<u32>,
    pub distinct: Vec<String>,
}

/// A sweep table read for drawing.
#[derive(Clone, Debug)]
pub struct SweepTable {
    pub file: String,
    /// `input` and the varied keys.
    pub keys: Vec<Key>,
    /// The counters, each row's value.
    pub values: Vec<(String, Vec<f64>)>,
}

impl SweepTable {
    /// A build without polars (the web page) reads no sweep table, and says so.
    #[cfg(not(feature = "desktop"))]
    pub fn read(path: &Path) -> Result<SweepTable, String> {
        Err(format!(
            "{}: {}",
            path.display(),
            crate::files::Purpose::OpenSweep
                .unavailable()
                .unwrap_or_default()
        ))
    }

    /// Reads a merged sweep table (CSV or Parquet); the error names the file.
    #[cfg(feature = "desktop")]
    pub fn read(path: &Path) -> Result<SweepTable, String> {
        let df = warpscope_core::report::sweep::read_any(path).map_err(|e| e.to_string())?;
        let err = |e: polars::prelude::PolarsError| format!("{}: {e}", path.display());
        let mut keys = Vec::new();
        let mut values = Vec::new();
        for c in df.columns() {
            let name = c.name().to_string();
            let s = c.as_materialized_series();
            if name == "id" {
                continue;
            }
            if is_metric(&name) {
                let f = s.cast(&polars::prelude::DataType::Float64).map_err(err)?;
                // An empty cell (the L2's, for a point without one) is no value: NaN.
                let v: Vec<f64> = f
                    .f64()
                    .map_err(err)?
                    .iter()
                    .map(|x| x.unwrap_or(f64::NAN))
                    .collect();
                values.push((name, v));
            } else {
                let mut distinct: Vec<String> = Vec::new();
                let mut codes: rustc_hash::FxHashMap<String, u32> = Default::default();
                let rows: Vec<u32> = s
                    .str()
                    .map_err(err)?
                    .iter()
                    .map(|x| {
                        let x = x.unwrap_or("");
                        *codes.entry(x.to_string()).or_insert_with(|| {
                            distinct.push(x.to_string());
                            distinct.len() as u32 - 1
                        })
                    })
                    .collect();
                keys.push(Key {
                    name,
                    rows,
                    distinct,
                });
            }
        }
        if df.height() == 0 {
            return Err(format!("{}: the table has no rows", path.display()));
        }
        Ok(SweepTable {
            file: super::file_name(path),
            keys,
            values,
        })
    }

    /// The heatmap of selection `s`: per value of key `y` (one row if `y` is `x`), per value
    /// of key `x`, the `value` column of the row with those keys and, for every other key, the
    /// value `fixed` chooses (`None` where there is no such row). One pass over the rows.
    pub fn grid(&self, s: &Selection) -> Vec<Vec<Option<f64>>> {
        let (Some(xk), Some(yk), Some((_, values))) = (
            self.keys.get(s.x),
            self.keys.get(s.y),
            self.values.get(s.value),
        ) else {
            return Vec::new();
        };
        let ny = if s.x == s.y { 1 } else { yk.distinct.len() };
        let mut grid = vec![vec![None; xk.distinct.len()]; ny];
        for (r, v) in values.iter().enumerate() {
            let others = self.keys.iter().enumerate().all(|(k, key)| {
                k == s.x || k == s.y || key.rows[r] as usize == s.fixed.get(k).copied().unwrap_or(0)
            });
            if others {
                let y = if s.x == s.y { 0 } else { yk.rows[r] as usize };
                grid[y][xk.rows[r] as usize] = (!v.is_nan()).then_some(*v);
            }
        }
        grid
    }

    /// One cell of [`Self::grid`]: key `x`'s `xi`-th value, key `y`'s `yi`-th.
    #[cfg(test)]
    pub fn cell(&self, s: &Selection, xi: usize, yi: usize) -> Option<f64> {
        self.grid(s).get(yi)?.get(xi).copied().flatten()
    }
}

/// What the heatmap shows: the keys along x and y, the value column, the other keys' values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    pub x: usize,
    pub y: usize,
    pub value: usize,
    /// Per key, the index of its value used when it is neither axis.
    pub fixed: Vec<usize>,
}

/// The sweep window's state.
#[derive(Default)]
pub struct SweepView {
    pub open: bool,
    pub table: Option<SweepTable>,
    pub selection: Selection,
    pub error: Option<String>,
    /// The heatmap of the selection it was made for.
    grid: Option<(Selection, Vec<Vec<Option<f64>>>)>,
}

impl SweepView {
    /// Opens the table at `path` (the window shows the error if it cannot be read).
    pub fn open_file(&mut self, path: &Path) {
        self.open = true;
        match SweepTable::read(path) {
            Ok(t) => self.show(t),
            Err(e) => {
                self.error = Some(e);
            }
        }
    }

    /// Shows table `t` (read from a file, or a sweep run in the app).
    pub fn show(&mut self, t: SweepTable) {
        self.open = true;
        // The two keys that vary fastest (the last ones), the miss rate.
        let n = t.keys.len();
        let varied = |k: &&Key| k.distinct.len() > 1;
        let mut axes: Vec<usize> = (0..n).filter(|&k| varied(&&t.keys[k])).collect();
        if axes.is_empty() {
            axes.push(n.saturating_sub(1));
        }
        let x = axes[axes.len() - 1];
        let y = if axes.len() > 1 {
            axes[axes.len() - 2]
        } else {
            x
        };
        let value = t
            .values
            .iter()
            .position(|(n, _)| n == "miss_rate")
            .unwrap_or(0);
        self.selection = Selection {
            x,
            y,
            value,
            fixed: vec![0; n],
        };
        self.table = Some(t);
        self.grid = None;
        self.error = None;
    }

    pub fn ui(&mut self, ui: &mut Ui) {
        if let Some(e) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
        let Some(t) = &self.table else {
            ui.label("Run a sweep above, or open a sweep table (File > Open sweep result…).");
            return;
        };
        let s = &mut self.selection;
        ui.label(format!(
            "{}: {} rows",
            t.file,
            t.values.first().map_or(0, |v| v.1.len())
        ));
        ui.horizontal_wrapped(|ui| {
            let names: Vec<&str> = t.keys.iter().map(|k| k.name.as_str()).collect();
            choose(ui, "Columns", "sweep-x", &names, &mut s.x);
            choose(ui, "Rows", "sweep-y", &names, &mut s.y);
            let values: Vec<&str> = t.values.iter().map(|v| v.0.as_str()).collect();
            choose(ui, "Value", "sweep-value", &values, &mut s.value);
        });
        // The other keys: one value each.
        ui.horizontal_wrapped(|ui| {
            for (k, key) in t.keys.iter().enumerate() {
                if k == s.x || k == s.y || key.distinct.len() < 2 {
                    continue;
                }
                let names: Vec<&str> = key.distinct.iter().map(String::as_str).collect();
                if let Some(f) = s.fixed.get_mut(k) {
                    choose(ui, &key.name, &format!("sweep-fixed-{k}"), &names, f);
                }
            }
        });
        ui.separator();
        if self.grid.as_ref().is_none_or(|(made, _)| made != s) {
            self.grid = Some((s.clone(), t.grid(s)));
        }
        if let Some((_, grid)) = &self.grid {
            heatmap(ui, t, s, grid);
        }
    }
}

/// A labelled combo box choosing one of `names`.
fn choose(ui: &mut Ui, label: &str, id: &str, names: &[&str], chosen: &mut usize) {
    let l = ui.label(label);
    egui::ComboBox::from_id_salt(id)
        .selected_text(names.get(*chosen).copied().unwrap_or(""))
        .show_ui(ui, |ui| {
            for (i, n) in names.iter().enumerate() {
                ui.selectable_value(chosen, i, *n);
            }
        })
        .response
        .labelled_by(l.id);
}

/// A value as the table's cell shows it.
fn show(name: &str, v: f64) -> String {
    if name == "miss_rate" {
        format!("{:.1}%", v * 100.0)
    } else if v.abs() >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else {
        format!("{v:.0}")
    }
}

fn heatmap(ui: &mut Ui, t: &SweepTable, s: &Selection, cells: &[Vec<Option<f64>>]) {
    let (Some(xk), Some(yk), Some((vname, _))) =
        (t.keys.get(s.x), t.keys.get(s.y), t.values.get(s.value))
    else {
        return;
    };
    let ys: Vec<usize> = if s.x == s.y {
        vec![0]
    } else {
        (0..yk.distinct.len()).collect()
    };
    let known: Vec<f64> = cells.iter().flatten().flatten().copied().collect();
    let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let avail = ui.available_size();
    let left = 90.0;
    let bottom = 70.0;
    let (rect, response) = ui.allocate_exact_size(avail, Sense::hover());
    let painter = ui.painter_at(rect);
    let grid = Rect::from_min_max(
        rect.min + egui::vec2(left, 28.0),
        rect.max - egui::vec2(10.0, bottom),
    );
    let (nx, ny) = (xk.distinct.len().max(1), ys.len().max(1));
    let cw = grid.width() / nx as f32;
    let at = Cells {
        grid,
        cw,
        ch: (grid.height() / ny as f32).min(cw.max(28.0)),
        ny,
    };
    let hover = response.hover_pos();
    let hovered = draw_cells(ui, &painter, &at, cells, vname, Extent { lo, hi }, hover);
    let text = ui.visuals().text_color();
    let font = FontId::proportional(13.0);
    // Axis values and names.
    let bottom_y = grid.top() + ny as f32 * at.ch;
    for (xi, name) in xk.distinct.iter().enumerate() {
        let c = at.cell(xi, 0).center_bottom();
        painter.text(
            egui::pos2(c.x, bottom_y + 4.0),
            Align2::CENTER_TOP,
            name,
            font.clone(),
            text,
        );
    }
    painter.text(
        egui::pos2(grid.center().x, bottom_y + 24.0),
        Align2::CENTER_TOP,
        &xk.name,
        FontId::proportional(14.0),
        text,
    );
    if s.x != s.y {
        for (row, &yi) in ys.iter().enumerate() {
            let c = at.cell(0, row).left_center();
            painter.text(
                c - egui::vec2(6.0, 0.0),
                Align2::RIGHT_CENTER,
                &yk.distinct[yi],
                font.clone(),
                text,
            );
        }
        painter.text(
            egui::pos2(rect.left() + 4.0, grid.top() - 6.0),
            Align2::LEFT_BOTTOM,
            &yk.name,
            FontId::proportional(14.0),
            text,
        );
    }
    if lo.is_finite() {
        let bar = Rect::from_min_size(
            egui::pos2(grid.left(), bottom_y + 46.0),
            egui::vec2(grid.width().min(300.0), 10.0),
        );
        colour_scale(&painter, bar, vname, Extent { lo, hi }, font, text);
    }
    if let Some((xi, row, v)) = hovered {
        let yname = if s.x == s.y {
            String::new()
        } else {
            format!(", {} = {}", yk.name, yk.distinct[ys[row]])
        };
        response.on_hover_text(format!(
            "{} = {}{yname}: {vname} {}",
            xk.name,
            xk.distinct[xi],
            v.map_or("no row".to_string(), |v| show(vname, v))
        ));
    }
}

/// The lowest and highest value shown.
#[derive(Clone, Copy)]
struct Extent {
    lo: f64,
    hi: f64,
}

/// Where the heatmap's cells lie: `ny` rows of `ch` points, columns of `cw`, inside `grid`.
struct Cells {
    grid: Rect,
    cw: f32,
    ch: f32,
    ny: usize,
}

impl Cells {
    fn cell(&self, xi: usize, row: usize) -> Rect {
        // Row 0 at the bottom, like a plot's y axis.
        let top = self.grid.top() + (self.ny - 1 - row) as f32 * self.ch;
        Rect::from_min_size(
            egui::pos2(self.grid.left() + xi as f32 * self.cw, top),
            egui::vec2(self.cw, self.ch),
        )
    }
}

/// Paints each cell in the colour of its value within `(lo, hi)`, with the value written on
/// it; gives the cell under `hover` (column, row, value).
fn draw_cells(
    ui: &Ui,
    painter: &egui::Painter,
    at: &Cells,
    cells: &[Vec<Option<f64>>],
    vname: &str,
    Extent { lo, hi }: Extent,
    hover: Option<egui::Pos2>,
) -> Option<(usize, usize, Option<f64>)> {
    let font = FontId::proportional(13.0);
    let mut hovered = None;
    for (row, line) in cells.iter().enumerate() {
        for (xi, v) in line.iter().enumerate() {
            let r = at.cell(xi, row).shrink(1.0);
            let fill = match v {
                Some(v) if hi > lo => ramp(((v - lo) / (hi - lo)) as f32),
                Some(_) => ramp(0.5),
                None => ui.visuals().faint_bg_color,
            };
            painter.rect_filled(r, 2.0, fill);
            if let Some(v) = v {
                let dark = fill.r() as u32 + fill.g() as u32 + fill.b() as u32 > 380;
                let c = if dark { Color32::BLACK } else { Color32::WHITE };
                painter.text(
                    r.center(),
                    Align2::CENTER_CENTER,
                    show(vname, *v),
                    font.clone(),
                    c,
                );
            }
            if hover.is_some_and(|p| r.contains(p)) {
                hovered = Some((xi, row, *v));
            }
        }
    }
    hovered
}

/// The colour scale in `bar`, from `lo` to `hi`, its ends labelled.
fn colour_scale(
    painter: &egui::Painter,
    bar: Rect,
    vname: &str,
    Extent { lo, hi }: Extent,
    font: FontId,
    text: Color32,
) {
    let steps = 40;
    for i in 0..steps {
        let f = i as f32 / steps as f32;
        let r = Rect::from_min_size(
            egui::pos2(bar.left() + f * bar.width(), bar.top()),
            egui::vec2(bar.width() / steps as f32 + 0.5, bar.height()),
        );
        painter.rect_filled(r, 0.0, ramp(f));
    }
    painter.text(
        bar.left_center() - egui::vec2(4.0, 0.0),
        Align2::RIGHT_CENTER,
        show(vname, lo),
        font.clone(),
        text,
    );
    painter.text(
        bar.right_center() + egui::vec2(4.0, 0.0),
        Align2::LEFT_CENTER,
        format!("{} {vname}", show(vname, hi)),
        font,
        text,
    );
}

impl super::WarpscopeApp {
    /// The sweep window, while open.
    pub(super) fn sweep_window(&mut self, ctx: &egui::Context) {
        if !self.sweep.open {
            return;
        }
        let mut open = true;
        let size = egui::vec2(900.0, 620.0);
        egui::Window::new("Sweep")
            .open(&mut open)
            .default_size(size)
            .default_pos(ctx.content_rect().center() - size / 2.0)
            .show(ctx, |ui| {
                self.sweep_form(ui);
                ui.separator();
                self.sweep.ui(ui);
            });
        self.sweep.open = open;
    }
}
