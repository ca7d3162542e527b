//! Choosing files: the native dialog (rfd, through the desktop portal) on a thread, so the UI
//! never waits for it, and an in-app browser where no native dialog can open (no desktop
//! portal, as on a headless machine) or the user prefers it. In the web build the browser's
//! own file picker (rfd's) hands over the chosen file's name and bytes.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;
use web_time::Instant;

/// What a chosen path is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    OpenTrace,
    /// A trace for one pane only (another kernel side by side).
    OpenPaneTrace(usize),
    /// A merged sweep table, shown as a heatmap.
    OpenSweep,
    LoadConfig,
    SaveConfig,
    ExportView,
    ExportReport,
    ExportRequests,
}

/// Whether a file can be created in `dir` (tried, not guessed from permission bits).
pub fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".warpscope-write-test-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => std::fs::remove_file(&probe).is_ok(),
        Err(_) => false,
    }
}

impl Purpose {
    pub fn title(self) -> &'static str {
        match self {
            Purpose::OpenTrace => "Open a trace",
            Purpose::OpenPaneTrace(_) => "Open a trace for this pane only",
            Purpose::OpenSweep => "Open a sweep table",
            Purpose::LoadConfig => "Load a configuration",
            Purpose::SaveConfig => "Save the configuration",
            Purpose::ExportView => "Export the view as PNG",
            Purpose::ExportReport => {
                "Export the report (text, JSON, or the tables as CSV or Parquet)"
            }
            Purpose::ExportRequests => "Export the per-request table",
        }
    }
    /// Why this build cannot do it, where it cannot (the web page leaves out polars): the
    /// menus say so instead of failing.
    pub fn unavailable(self) -> Option<&'static str> {
        const POLARS: &str = "CSV and Parquet tables are read through polars, which the web \
             page leaves out: use the desktop app";
        match self {
            Purpose::OpenSweep if !cfg!(feature = "desktop") => Some(POLARS),
            _ => None,
        }
    }
    pub fn saves(self) -> bool {
        !matches!(
            self,
            Purpose::OpenTrace
                | Purpose::OpenPaneTrace(_)
                | Purpose::LoadConfig
                | Purpose::OpenSweep
        )
    }
    /// Name offered when saving.
    pub fn default_name(self) -> &'static str {
        match self {
            Purpose::SaveConfig => "warpscope-config.toml",
            Purpose::ExportView => "warpscope-view.png",
            Purpose::ExportReport => "warpscope-report.json",
            // The page writes CSV only (Parquet goes through polars).
            Purpose::ExportRequests if !cfg!(feature = "desktop") => "warpscope-requests.csv",
            Purpose::ExportRequests => "warpscope-requests.parquet",
            _ => "",
        }
    }
    fn filters(self) -> Vec<(&'static str, Vec<&'static str>)> {
        match self {
            Purpose::OpenTrace | Purpose::OpenPaneTrace(_) => vec![],
            Purpose::OpenSweep => vec![("sweep table", vec!["parquet", "csv", "json"])],
            Purpose::LoadConfig | Purpose::SaveConfig => {
                vec![("configuration", vec!["toml", "json"])]
            }
            Purpose::ExportView => vec![("PNG image", vec!["png"])],
            Purpose::ExportReport => vec![("report", warpscope_core::report::export_extensions())],
            Purpose::ExportRequests => vec![("table", vec!["csv", "parquet"])],
        }
    }
}

/// A native dialog running on its own thread (in the web build, the browser's picker).
pub struct NativeDialog {
    pub purpose: Purpose,
    rx: Receiver<Option<Picked>>,
    started: Instant,
}

/// What a dialog chose: a path, or (the browser's picker) a file's name and bytes.
pub enum Picked {
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    Path(PathBuf),
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    Bytes { name: String, bytes: Arc<[u8]> },
    /// A file the page would not read (too large for it): why.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    Refused(String),
}

/// The largest file the web page reads (its bytes and the trace read from them share the
/// page's 4 GiB of WebAssembly memory).
pub const PAGE_FILE_BYTES: u64 = 512 << 20;

/// Why the page does not read a file of `bytes` bytes, if it does not.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub fn too_large_for_the_page(name: &str, bytes: u64) -> Option<String> {
    (bytes > PAGE_FILE_BYTES).then(|| {
        format!(
            "{name}: {} MiB is more than the web page can hold ({} MiB): open it in the \
             desktop app, which streams a file of any size from disk",
            bytes >> 20,
            PAGE_FILE_BYTES >> 20
        )
    })
}

/// What polling a native dialog gave.
pub enum DialogPoll {
    Waiting,
    Chosen(PathBuf),
    /// The browser's picker handed over a file.
    Picked {
        name: String,
        bytes: Arc<[u8]>,
    },
    /// The page refused the file chosen: why.
    Refused(String),
    /// Closed without a choice.
    Cancelled,
    /// It closed at once without a choice: most likely no dialog could open.
    Unavailable,
}

/// True where a native dialog may open (a session bus for the desktop portal on Linux).
pub fn native_available() -> bool {
    if cfg!(target_os = "linux") {
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some()
    } else {
        true
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl NativeDialog {
    pub fn open(purpose: Purpose, start_dir: Option<&Path>) -> NativeDialog {
        let (tx, rx) = channel();
        let mut d = rfd::FileDialog::new().set_title(purpose.title());
        for (name, exts) in purpose.filters() {
            d = d.add_filter(name, &exts);
        }
        if let Some(dir) = start_dir {
            d = d.set_directory(dir);
        }
        if purpose.saves() {
            d = d.set_file_name(purpose.default_name());
        }
        let saves = purpose.saves();
        let spawned = std::thread::Builder::new()
            .name("warpscope-dialog".into())
            .spawn(move || {
                let r = if saves { d.save_file() } else { d.pick_file() };
                let _ = tx.send(r.map(Picked::Path));
            });
        drop(spawned);
        NativeDialog {
            purpose,
            rx,
            started: Instant::now(),
        }
    }
}

#[cfg(target_arch = "wasm32")]
impl NativeDialog {
    /// The browser's file picker (opened by rfd); only for opening files (saving offers a
    /// download instead: `download.rs`). A file too large for the page is refused unread.
    pub fn open(purpose: Purpose, _start_dir: Option<&Path>) -> NativeDialog {
        let (tx, rx) = channel();
        let mut d = rfd::AsyncFileDialog::new().set_title(purpose.title());
        for (name, exts) in purpose.filters() {
            d = d.add_filter(name, &exts);
        }
        wasm_bindgen_futures::spawn_local(async move {
            let picked = match d.pick_file().await {
                Some(f) => Some(
                    match too_large_for_the_page(&f.file_name(), f.inner().size() as u64) {
                        Some(why) => Picked::Refused(why),
                        None => Picked::Bytes {
                            name: f.file_name(),
                            bytes: f.read().await.into(),
                        },
                    },
                ),
                None => None,
            };
            let _ = tx.send(picked);
        });
        NativeDialog {
            purpose,
            rx,
            started: Instant::now(),
        }
    }

    /// A file dropped on the page, its bytes read as a picked file's are.
    pub fn dropped(file: egui::DroppedFileHandle) -> NativeDialog {
        let (tx, rx) = channel();
        wasm_bindgen_futures::spawn_local(async move {
            let name = file.path().display().to_string();
            let _ = tx.send(Some(match file.bytes_async().await {
                Ok(bytes) => match too_large_for_the_page(&name, bytes.len() as u64) {
                    Some(why) => Picked::Refused(why),
                    None => Picked::Bytes {
                        name,
                        bytes: bytes.into(),
                    },
                },
                Err(e) => Picked::Refused(format!("{name}: the browser could not read it: {e}")),
            }));
        });
        NativeDialog {
            purpose: Purpose::OpenTrace,
            rx,
            started: Instant::now(),
        }
    }
}

impl NativeDialog {
    pub fn poll(&self) -> DialogPoll {
        match self.rx.try_recv() {
            Ok(Some(Picked::Path(p))) => DialogPoll::Chosen(p),
            Ok(Some(Picked::Bytes { name, bytes })) => DialogPoll::Picked { name, bytes },
            Ok(Some(Picked::Refused(why))) => DialogPoll::Refused(why),
            // The browser's picker has no way to fail at once.
            Ok(None) if cfg!(target_arch = "wasm32") => DialogPoll::Cancelled,
            Ok(None) if self.started.elapsed() < Duration::from_millis(300) => {
                DialogPoll::Unavailable
            }
            Ok(None) => DialogPoll::Cancelled,
            Err(std::sync::mpsc::TryRecvError::Empty) => DialogPoll::Waiting,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => DialogPoll::Unavailable,
        }
    }
}

/// The in-app file browser.
pub struct Browser {
    pub purpose: Purpose,
    pub dir: PathBuf,
    /// The file name (saving) or the typed path (opening).
    pub name: String,
    entries: Vec<(String, bool)>,
    error: Option<String>,
}

/// What the browser decided this frame.
pub enum BrowserAction {
    None,
    Chosen(PathBuf),
    Closed,
}

impl Browser {
    pub fn new(purpose: Purpose, dir: PathBuf) -> Browser {
        let mut b = Browser {
            purpose,
            dir,
            name: purpose.default_name().to_string(),
            entries: Vec::new(),
            error: None,
        };
        b.refresh();
        b
    }

    fn refresh(&mut self) {
        self.entries.clear();
        self.error = None;
        match std::fs::read_dir(&self.dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') {
                        continue;
                    }
                    let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
                    self.entries.push((name, is_dir));
                }
                self.entries
                    .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            }
            Err(e) => self.error = Some(format!("{}: {e}", self.dir.display())),
        }
    }

    fn enter(&mut self, dir: PathBuf) {
        self.dir = dir;
        self.refresh();
    }

    /// Draws the browser window.
    pub fn show(&mut self, ctx: &egui::Context) -> BrowserAction {
        let mut action = BrowserAction::None;
        let mut open = true;
        egui::Window::new(self.purpose.title())
            .id(egui::Id::unique("file-browser"))
            .open(&mut open)
            .collapsible(false)
            .default_size([520.0, 420.0])
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    if ui.button("Up").on_hover_text("The parent folder").clicked() {
                        if let Some(p) = self.dir.parent() {
                            let p = p.to_path_buf();
                            self.enter(p);
                        }
                    }
                    ui.label(self.dir.display().to_string());
                });
                if let Some(e) = &self.error {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                ui.separator();
                let mut enter = None;
                let mut pick = None;
                egui::ScrollArea::vertical()
                    .max_height(280.0)
                    .auto_shrink([false, false])
                    .show(ui, |ui| {
                        for (name, is_dir) in &self.entries {
                            let text = if *is_dir {
                                format!("{name}/")
                            } else {
                                name.to_string()
                            };
                            let r = ui.selectable_label(self.name == *name, text);
                            if r.clicked() {
                                if *is_dir && !self.purpose.saves() {
                                    // Accel-Sim traces are folders: one click selects, two enter.
                                    self.name = name.clone();
                                } else if *is_dir {
                                    enter = Some(self.dir.join(name));
                                } else {
                                    self.name = name.clone();
                                }
                            }
                            if r.double_clicked() {
                                if *is_dir {
                                    enter = Some(self.dir.join(name));
                                } else {
                                    pick = Some(self.dir.join(name));
                                }
                            }
                        }
                    });
                if let Some(d) = enter {
                    self.enter(d);
                    if !self.purpose.saves() {
                        self.name.clear();
                    }
                }
                ui.separator();
                ui.horizontal(|ui| {
                    let label = ui.label(if self.purpose.saves() {
                        "File name:"
                    } else {
                        "Path:"
                    });
                    let edit = ui
                        .add(egui::TextEdit::singleline(&mut self.name).desired_width(300.0))
                        .labelled_by(label.id);
                    let go = ui.button(if self.purpose.saves() { "Save" } else { "Open" });
                    let enter_pressed =
                        edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    if (go.clicked() || enter_pressed) && !self.name.trim().is_empty() {
                        let typed = PathBuf::from(self.name.trim());
                        pick = Some(if typed.is_absolute() {
                            typed
                        } else {
                            self.dir.join(typed)
                        });
                    }
                });
                if let Some(p) = pick {
                    action = BrowserAction::Chosen(p);
                }
            });
        if !open {
            action = BrowserAction::Closed;
        }
        action
    }
}
