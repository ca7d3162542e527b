//! "Why did this miss?" in the app: a request clicked in the address view is explained as the
//! CLI explains it, and the story's links explain the requests it names.
use crate::views::{AddressView, StepView, View};
use egui_kittest::kittest::Queryable;

use super::support;
use support::*;

fn press(h: &mut egui_kittest::Harness<'static, crate::WarpscopeApp>, pos: egui::Pos2) {
    for pressed in [true, false] {
        h.input_mut().events.push(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: Default::default(),
        });
        h.step();
    }
}

/// The first pane's explanation, answered.
fn explanation(
    h: &egui_kittest::Harness<'static, crate::WarpscopeApp>,
) -> warpscope_core::explain::Explanation {
    let x = h.state().panes[0].view::<AddressView>().unwrap();
    x.explaining
        .as_ref()
        .unwrap()
        .answer
        .clone()
        .unwrap()
        .unwrap()
}

fn answered(a: &crate::WarpscopeApp, request: Option<usize>) -> bool {
    a.panes[0]
        .view::<AddressView>()
        .unwrap()
        .explaining
        .as_ref()
        .is_some_and(|x| x.answer.is_some() && request.is_none_or(|r| r == x.request))
}

#[test]
fn clicking_a_request_explains_it_and_its_links_follow_the_story() {
    let mut a = app("matmul", "n=128");
    a.settings.view = View::Address;
    let mut h = harness(a);
    settle(&mut h);
    // Move over the plot until a request is under the pointer (its tooltip offers to explain it).
    let mut at = None;
    'scan: for y in (260..820).step_by(20) {
        for x in (420..1380).step_by(20) {
            let pos = egui::pos2(x as f32, y as f32);
            h.input_mut().events.push(egui::Event::PointerMoved(pos));
            h.run_steps(2);
            if let Some((_, _, request)) = h.state().hover {
                at = Some((pos, request));
                break 'scan;
            }
        }
    }
    let (pos, hovered) = at.expect("a request under the pointer somewhere on the plot");
    press(&mut h, pos);
    step_until(&mut h, "the explanation", |a| answered(a, Some(hovered)));
    let (request, e) = {
        let x = h.state().panes[0]
            .view::<AddressView>()
            .unwrap()
            .explaining
            .as_ref()
            .unwrap();
        let e = x.answer.clone().unwrap().expect("an explanation");
        (x.request, e)
    };
    // The same explanation as the core (and so the CLI) gives for the pane's configuration.
    let d = h.state().panes[0].result.clone().unwrap();
    let t = h.state().trace.clone().unwrap();
    let core = warpscope_core::explain::explain(
        &d.config,
        &t.trace.kernels,
        request as u64,
        &mut |_, _| true,
    )
    .unwrap();
    assert_eq!(e, core);
    assert_eq!(e.request.line, d.points.line[request]);
    // The panel tells the story.
    h.get_by_label(&e.story[0]);
    h.get_by_label_contains(&format!("Request {request}: "));

    // Follow the chain: a request of matmul n=128 whose line was evicted, then its evictor.
    h.state_mut().panes[0]
        .view_mut::<AddressView>()
        .unwrap()
        .explain(pick_evicted(&d.config, &t.trace.kernels));
    step_until(&mut h, "the evicted request's explanation", |a| {
        a.panes[0]
            .view::<AddressView>()
            .unwrap()
            .explaining
            .as_ref()
            .is_some_and(|x| x.answer.is_some() && x.generation != u64::MAX)
    });
    let e = explanation(&h);
    let evictor = e.eviction.as_ref().expect("an eviction").by.request as usize;
    h.get_by_label("evicted by");
    h.get_by_label(&format!("request {evictor}")).click();
    h.run_steps(2);
    step_until(&mut h, "the evictor's explanation", |a| {
        answered(a, Some(evictor))
    });
    let x = h.state().panes[0]
        .view::<AddressView>()
        .unwrap()
        .explaining
        .as_ref()
        .unwrap();
    assert_eq!(x.request, evictor);
    // Esc closes it.
    h.key_press(egui::Key::Escape);
    h.run_steps(2);
    assert!(h.state().panes[0]
        .view::<AddressView>()
        .unwrap()
        .explaining
        .is_none());
}

/// The first request that missed because its line was evicted.
fn pick_evicted(
    cfg: &warpscope_core::config::SimConfig,
    k: &[warpscope_core::trace::Kernel],
) -> usize {
    struct First(Option<u64>, u64, std::collections::HashSet<u64>);
    impl warpscope_core::sim::Observer for First {
        fn on_request(&mut self, e: &warpscope_core::sim::RequestEvent) {
            if let Some(v) = e.evicted {
                self.2.insert(v);
            }
            if self.0.is_none() && !e.hit && self.2.contains(&e.line) {
                self.0 = Some(self.1);
            }
            self.1 += 1;
        }
    }
    let mut f = First(None, 0, Default::default());
    warpscope_core::sim::run_kernels(cfg, k, &mut f).unwrap();
    f.0.expect("an eviction in matmul n=128") as usize
}

fn shown_at(a: &crate::WarpscopeApp) -> bool {
    let p = &a.panes[0];
    p.result.is_some() && !p.view::<StepView>().unwrap().waiting(p.generation)
}

#[test]
fn stepping_through_forwards_backwards_by_instruction_to_a_miss_and_playing() {
    use crate::data::Outcome;
    use crate::views::step::StepBy;
    let mut a = app("matmul", "n=32");
    a.settings.view = View::Step;
    let mut h = harness(a);
    settle(&mut h);
    step_until(&mut h, "the first step", shown_at);
    h.get_by_label_contains("Request 0 · ");
    // Its plot says what its colours are, the address view's legend and the requests to come.
    for entry in ["hit", "compulsory miss", "not issued yet", "this request"] {
        assert!(h.query_all_by_label(entry).next().is_some(), "{entry}");
    }
    click(&mut h, "Step >");
    step_until(&mut h, "request 1", shown_at);
    assert_eq!(h.state().panes[0].view::<StepView>().unwrap().cursor, 1);
    h.get_by_label_contains("Request 1 · ");
    // By warp instruction: the next request that starts one.
    h.state_mut().panes[0].view_mut::<StepView>().unwrap().by = StepBy::WarpInstruction;
    click(&mut h, "Step >");
    step_until(&mut h, "the next warp instruction", shown_at);
    let d = h.state().panes[0].result.clone().unwrap();
    let c = h.state().panes[0].view::<StepView>().unwrap().cursor;
    assert!(c > 1 && d.points.starts_instruction(c));
    assert!((2..c).all(|j| !d.points.starts_instruction(j)));
    // Its state is the core's.
    let t = h.state().trace.clone().unwrap();
    let core = warpscope_core::explain::step::snapshot(
        &d.config,
        &t.trace.kernels,
        c as u64,
        &mut |_, _| true,
    )
    .unwrap();
    let shown = h.state().panes[0]
        .view::<StepView>()
        .unwrap()
        .shown
        .as_ref()
        .unwrap()
        .snapshot
        .clone()
        .unwrap();
    assert_eq!(shown, core);
    h.get_by_label_contains(&format!("Set {} (", core.set));
    // And back.
    click(&mut h, "< Step back");
    step_until(&mut h, "back a warp instruction", shown_at);
    let back = h.state().panes[0].view::<StepView>().unwrap().cursor;
    assert!(back < c && d.points.starts_instruction(back));
    // On to the next miss.
    click(&mut h, "Next miss");
    step_until(&mut h, "the next miss", shown_at);
    let m = h.state().panes[0].view::<StepView>().unwrap().cursor;
    assert!(m > back && d.points.outcome(m) != Outcome::Hit);
    // Playing moves on by itself; pausing stops it.
    h.state_mut().panes[0].view_mut::<StepView>().unwrap().by = StepBy::Request;
    h.state_mut().panes[0].view_mut::<StepView>().unwrap().speed = 30.0;
    click(&mut h, "Play");
    let start = std::time::Instant::now();
    while h.state().panes[0].view::<StepView>().unwrap().cursor < m + 3 {
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(start.elapsed().as_secs() < 60, "playing did not move on");
    }
    click(&mut h, "Pause");
    let paused = h.state().panes[0].view::<StepView>().unwrap().cursor;
    h.run_steps(20);
    assert_eq!(
        h.state().panes[0].view::<StepView>().unwrap().cursor,
        paused
    );
}

#[test]
fn a_request_explained_with_every_sm_follows_its_line_into_the_l2() {
    // Fermi's 14 SMs and its L2: the explanation ends with the slice the line went to and who
    // brought it there, as the core says.
    let mut a = app("matmul", "n=64");
    let mut cfg = warpscope_core::config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = warpscope_core::config::SmSelection::All;
    a.set_config(0, "test", cfg, 0.0);
    a.settings.view = View::Address;
    let mut h = harness(a);
    settle(&mut h);
    h.state_mut().panes[0]
        .view_mut::<AddressView>()
        .unwrap()
        .explain(200);
    step_until(&mut h, "the explanation", |a| answered(a, Some(200)));
    let e = explanation(&h);
    let l2 = e.l2.as_ref().expect("the request went to the L2");
    assert!(l2.hit);
    let paragraph = e
        .story
        .iter()
        .find(|p| p.starts_with("It went on to L2 slice"))
        .unwrap();
    h.get_by_label(paragraph);
}

#[test]
fn with_the_timing_model_the_l2_gives_fills_their_latency_and_explain_follows_it() {
    // Fermi's SMs, its L2 and the timing model: the pane's report has the L2 (the core's,
    // run the same way), its view shows it, and an explanation follows the line into it.
    let mut a = app("matmul", "n=64");
    let mut cfg = warpscope_core::config::preset("fermi-16k").unwrap();
    cfg.gpu.simulate = warpscope_core::config::SmSelection::All;
    cfg.timing = Some(warpscope_core::config::TimingConfig::default());
    a.set_config(0, "test", cfg.clone(), 0.0);
    a.settings.view = View::Address;
    let mut h = harness(a);
    settle(&mut h);
    let d = h.state().panes[0].result.clone().unwrap();
    let l2 = d.report.l2.as_ref().expect("the timing model's L2");
    let k = warpscope_core::gen::generate("matmul", &[("n".into(), "64".into())])
        .unwrap()
        .kernels;
    #[derive(Default)]
    struct Fills(Vec<bool>);
    impl warpscope_core::sim::Observer for Fills {
        fn on_request(&mut self, e: &warpscope_core::sim::RequestEvent) {
            self.0.push(!e.hit && !e.in_flight);
        }
    }
    let mut fills = Fills::default();
    let want = warpscope_core::sim::run_kernels(&cfg, &k, &mut fills).unwrap();
    assert_eq!(Some(l2), want.l2.as_ref());
    assert!(l2.totals.hits > 0);
    // A request past the first few that fetched its line: it went to the L2.
    let n = (100..fills.0.len()).find(|&i| fills.0[i]).unwrap();
    h.state_mut().panes[0]
        .view_mut::<AddressView>()
        .unwrap()
        .explain(n);
    step_until(&mut h, "the explanation", |a| answered(a, Some(n)));
    let e = explanation(&h);
    assert!(e.l2.is_some(), "{:?}", e.story);
    h.state_mut().settings.view = View::L2;
    h.run_steps(3);
    h.get_by_label_contains("12 slices");
    // Per instruction, its L1 requests beside its L2 requests.
    for row in &l2.instructions {
        let l1 = d.report.instructions.iter();
        let l1 = l1
            .filter(|r| (r.kernel, r.inst) == (row.kernel, row.inst))
            .map(|r| r.counters.requests)
            .next()
            .unwrap_or(0);
        for n in [l1, row.counters.requests] {
            let label = n.to_string();
            assert!(h.query_all_by_label(&label).next().is_some(), "{label}");
        }
    }
}

#[test]
fn an_explanation_is_dropped_when_its_pane_shows_another_trace() {
    // Request 4000 of matmul does not exist in vecadd n=64: the pane forgets it rather than
    // ask for it in the new trace (and show the error of a request that is not there).
    let mut a = app("matmul", "n=64");
    a.settings.view = View::Address;
    let mut h = harness(a);
    settle(&mut h);
    h.state_mut().panes[0]
        .view_mut::<AddressView>()
        .unwrap()
        .explain(4000);
    step_until(&mut h, "the explanation", |a| answered(a, Some(4000)));
    h.state_mut()
        .generate("vecadd".to_string(), "n=64".to_string());
    settle(&mut h);
    assert!(trace_label(&h).starts_with("vecadd"));
    h.run_steps(3);
    let x = h.state().panes[0].view::<AddressView>().unwrap();
    assert!(
        x.explaining.is_none(),
        "the explanation of the old trace stayed"
    );
    // A configuration change keeps it (the same trace, the request asked for again).
    h.state_mut().panes[0]
        .view_mut::<AddressView>()
        .unwrap()
        .explain(10);
    step_until(&mut h, "the explanation", |a| answered(a, Some(10)));
    let mut cfg = h.state().settings.panes[0].1.clone();
    cfg.cache.ways *= 2;
    h.state_mut().set_config(0, "test", cfg, 0.0);
    settle(&mut h);
    step_until(&mut h, "the explanation again", |a| answered(a, Some(10)));
}
