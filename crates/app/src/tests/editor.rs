//! The kernel-language editor: a kernel typed in the app becomes the trace the panes simulate,
//! a mistake is shown at its line and column while the last good trace stays.
use egui_kittest::kittest::Queryable;

use super::support;
use support::*;

#[test]
fn a_kernel_typed_in_the_editor_is_simulated_and_a_mistake_keeps_the_last_good_trace() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    click(&mut h, "Write your own kernel…");
    assert!(h.state().editor.open);
    // The editor opens on the generator's kernel written in the language, and runs it: the
    // same trace as the generator's.
    editor_gives_the_generators_trace(&mut h, "vecadd");
    // Params from the field, as key=value.
    h.state_mut().editor.params = "n=512".into();
    h.state_mut().editor.text.push(' ');
    step_until(&mut h, "the run with n=512", |a| {
        a.trace.as_ref().is_some_and(|t| t.label.ends_with("n=512"))
    });
    settle(&mut h);
    assert_eq!(h.state().trace.as_ref().unwrap().accesses, 512 * 3);
    let before = h.state().trace.clone().unwrap();
    // A mistake: the error names the line and column, the trace stays.
    let text = h
        .state()
        .editor
        .text
        .replace("c[i] = a[i] + b[i];", "c[i] = a[i] + ;");
    h.state_mut().editor.text = text;
    step_until(&mut h, "the error", |a| a.editor.error.is_some());
    let err = h.state().editor.error.clone().unwrap();
    assert!(err.starts_with("kernel:15:"), "{err}");
    h.get_by_label(&err);
    h.get_by_label("The last good trace stays on screen.");
    h.run_steps(30);
    assert!(std::sync::Arc::ptr_eq(
        h.state().trace.as_ref().unwrap(),
        &before
    ));
    // A mistake found only by running (an index past the end) is shown the same way.
    let text = h
        .state()
        .editor
        .text
        .replace("c[i] = a[i] + ;", "c[i + 1] = a[i];");
    h.state_mut().editor.text = text;
    step_until(&mut h, "the run-time error", |a| {
        a.editor
            .error
            .as_deref()
            .is_some_and(|e| e.contains("outside `c`"))
    });
    assert!(std::sync::Arc::ptr_eq(
        h.state().trace.as_ref().unwrap(),
        &before
    ));
    // Fixed: it runs again and the panes follow.
    let text = h
        .state()
        .editor
        .text
        .replace("c[i + 1] = a[i];", "c[i] = a[i];");
    h.state_mut().editor.text = text;
    step_until(&mut h, "the fixed run", |a| {
        a.editor.error.is_none()
            && a.editor.job.is_none()
            && a.editor.good.is_some()
            && !std::sync::Arc::ptr_eq(a.trace.as_ref().unwrap(), &before)
    });
    settle(&mut h);
    assert_eq!(h.state().trace.as_ref().unwrap().accesses, 512 * 2);
    // The pane's result is the new trace's.
    let d = h.state().panes[0].result.clone().unwrap();
    let t = h.state().trace.clone().unwrap();
    let direct =
        warpscope_core::sim::run(&d.config, &t.trace, &mut warpscope_core::sim::NoObserver)
            .unwrap();
    assert!(!h.state().panes[0].stale);
    assert_eq!(d.report.totals, direct.totals);
    assert_ne!(d.report.totals.accesses, 0);
}

#[test]
fn write_your_own_kernel_opens_on_the_generators_settings_and_gives_its_trace() {
    let mut h = harness(app("matmul", "n=32 block=8,4"));
    settle(&mut h);
    let generated = h.state().trace.clone().unwrap();
    click(&mut h, "Write your own kernel…");
    assert_eq!(h.state().editor.params, "n=32 bx=8 by=4");
    editor_gives_the_generators_trace(&mut h, "matmul");
    assert_eq!(h.state().trace.as_ref().unwrap().trace, generated.trace);
    // A setting the program has no param for (typed in the field, not yet generated) is
    // named, not dropped silently.
    let mut h = harness(app("matmul", "n=32"));
    settle(&mut h);
    h.state_mut().settings.generator_params = "n=32 extra=1".into();
    click(&mut h, "Write your own kernel…");
    assert_eq!(h.state().editor.params, "n=32");
    h.run_steps(2);
    h.get_by_label("Not carried over from the generator (no such param here): extra");
}

#[test]
fn typing_goes_on_into_the_source_when_an_error_appears_and_the_error_goes_when_it_is_good() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    click(&mut h, "Write your own kernel…");
    editor_gives_the_generators_trace(&mut h, "vecadd");
    let good = h.state().editor.text.clone();
    let before = h.state().trace.clone().unwrap();
    // A stray character typed into the source: a syntax error, shown above the source.
    h.get_by_label("Source").focus();
    h.step();
    h.get_by_label("Source").type_text("@");
    step_until(&mut h, "the error", |a| a.editor.error.is_some());
    h.run_steps(3);
    // The banner moved the source down; the next keystrokes still go into it.
    h.get_by_label("Source").type_text("#");
    h.run_steps(2);
    let text = h.state().editor.text.clone();
    assert!(
        text.contains("@#"),
        "the keystrokes went elsewhere: {text:?}"
    );
    // Both taken back: the source is the one last run, its trace still on screen, and the
    // error goes without a new run.
    h.key_press(egui::Key::Backspace);
    h.key_press(egui::Key::Backspace);
    h.run_steps(2);
    assert_eq!(h.state().editor.text, good);
    step_until(&mut h, "the error to go", |a| a.editor.error.is_none());
    assert!(h.state().editor.job.is_none());
    assert!(std::sync::Arc::ptr_eq(
        h.state().trace.as_ref().unwrap(),
        &before
    ));
    h.get_by_label(&format!("OK: {}", h.state().editor.good.clone().unwrap()));
}

#[test]
fn a_lesson_opens_its_panes_with_their_kernels_and_settings_and_its_text_beside_them() {
    let mut h = harness(app("vecadd", "n=1024"));
    settle(&mut h);
    click(&mut h, "Lessons");
    let l = warpscope_core::lesson::lesson("set-conflicts").unwrap();
    click(&mut h, &l.title);
    settle(&mut h);
    step_until(&mut h, "the lesson's panes", |a| {
        a.panes.len() == 2
            && a.panes
                .iter()
                .all(|p| p.own_trace.is_some() && p.result.is_some() && !p.stale)
    });
    settle(&mut h);
    h.get_by_label(&l.title);
    h.get_by_label("Pane 1: modulo index");
    // Each pane: the lesson's kernel and settings, simulated as the CLI's `lesson` does.
    for (i, p) in l.panes.iter().enumerate() {
        let pane = &h.state().panes[i];
        assert_eq!(h.state().settings.panes[i].1, p.config);
        let words: Vec<String> = p.params.split_whitespace().map(String::from).collect();
        let pairs = warpscope_core::gen::parse_pairs(&words).unwrap();
        let t =
            warpscope_core::gen::source::generate(p.source, &p.source_name, &pairs, None).unwrap();
        assert_eq!(pane.own_trace.as_ref().unwrap().trace, t);
        let direct =
            warpscope_core::sim::run(&p.config, &t, &mut warpscope_core::sim::NoObserver).unwrap();
        assert_eq!(pane.result.as_ref().unwrap().report.totals, direct.totals);
    }
    // The point of the lesson: the hashed index removes the conflict misses.
    let conflicts = |i: usize| {
        h.state().panes[i]
            .result
            .as_ref()
            .unwrap()
            .report
            .totals
            .miss_classes
            .conflict
    };
    assert!(
        conflicts(0) > 10_000 && conflicts(1) == 0,
        "{} {}",
        conflicts(0),
        conflicts(1)
    );
    click(&mut h, "Close lesson");
    assert!(h.state().lesson.is_none());
}

#[test]
fn the_editor_runs_host_code_and_multi_launch_state_like_the_generator() {
    // bfs-levels: host code draws the graph, its loop launches levels until the kernels say
    // the search is over, and the kernels' stores carry the frontier from launch to launch.
    let mut h = harness(app("bfs-levels", ""));
    settle(&mut h);
    click(&mut h, "Write your own kernel…");
    assert!(h.state().editor.text.contains("launch bfs_kernel1;"));
    let levels = editor_gives_the_generators_trace(&mut h, "bfs-levels");
    assert!(levels > 4, "{levels} launches");
}

/// Waits for the editor's first run and checks its trace is built-in kernel `name`'s with
/// its defaults; returns the number of launches.
fn editor_gives_the_generators_trace(
    h: &mut egui_kittest::Harness<'static, crate::WarpscopeApp>,
    name: &str,
) -> usize {
    step_until(h, "the editor's run", |a| {
        a.editor.good.is_some()
            && a.trace
                .as_ref()
                .is_some_and(|t| t.label.contains("kernel source"))
    });
    settle(h);
    let ours = h.state().trace.clone().unwrap();
    // With the generator's settings, which the editor carries over.
    let words: Vec<String> = (h.state().settings.generator_params.split_whitespace())
        .map(String::from)
        .collect();
    let pairs = warpscope_core::gen::parse_pairs(&words).unwrap();
    let built_in = warpscope_core::gen::generate(name, &pairs).unwrap();
    assert_eq!(ours.trace, built_in, "{name}");
    built_in.kernels.len()
}
