//! The wire between a page and its worker: what is loaded there is what is loaded here.

use super::*;
use crate::job::Progress;
use crate::worker;

fn sample(path: &str) -> Source {
    let full = format!("{}/../../sample-traces/{path}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&full).unwrap();
    Source::Bytes {
        name: path.rsplit('/').next().unwrap().to_string(),
        bytes: bytes.into(),
    }
}

fn generator(kernel: &str, params: &[(&str, &str)], max: Option<u64>) -> Source {
    Source::Generator {
        kernel: kernel.into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        max_accesses: max,
    }
}

/// The source sent as a request (through JSON, as the page sends it), loaded, its answer
/// sent back (through JSON) and taken.
fn across(source: Source) -> Finished<Loaded> {
    let (json, bytes) = request(&source).unwrap();
    assert!(
        !json.contains("bytes"),
        "the bytes went in the request: {json}"
    );
    let source = super::source(&json, bytes.map(|b| b.to_vec())).unwrap();
    let (head, rows) = answer(worker::load_source(source, &Arc::new(Progress::default())));
    let json = serde_json::to_string(&head).unwrap();
    result(serde_json::from_str(&json).unwrap(), rows, false)
}

fn same(a: &TraceData, b: &TraceData) {
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.label, b.label);
    assert_eq!(a.format, b.format);
    assert_eq!(a.segments, b.segments);
    assert_eq!(a.accesses, b.accesses);
    assert_eq!(a.truncated, b.truncated);
    assert_eq!(b.streamed, None);
}

#[test]
fn a_trace_loaded_across_the_wire_is_the_trace_loaded_here() {
    let sources = [
        sample("dinero-small.din"),
        sample("accelsim-matrixmul/kernel-1.traceg.xz"),
        sample("table2.wst"),
        sample("h100-matmul/matmul.wsb"),
        generator("matmul", &[("n", "32")], None),
        generator("hotspot", &[("steps", "3")], None),
        Source::Program {
            text: warpscope_core::gen::source::examples()
                .next()
                .unwrap()
                .1
                .to_string(),
            file: "kernel".into(),
            params: Vec::new(),
            max_accesses: None,
        },
    ];
    for s in sources {
        let here = worker::load_source(s.clone(), &Arc::new(Progress::default()));
        let (Ok(Loaded::Trace(here)), Ok(Loaded::Trace(there))) = (here, across(s.clone())) else {
            panic!("{s:?} did not load on both sides");
        };
        assert!(!here.trace.kernels.is_empty());
        same(&here, &there);
    }
}

#[test]
fn what_is_not_a_trace_crosses_as_what_it_is() {
    let Ok(Loaded::TooLarge { projected }) = across(generator("matmul", &[("n", "64")], Some(10)))
    else {
        panic!("a generator past its limit did not stop");
    };
    assert!(projected > 10);
    let bad = Source::Bytes {
        name: "broken.din".into(),
        bytes: b"0 1000\nnot a reference\n".to_vec().into(),
    };
    let Err(JobError::Failed(here)) = worker::load_source(bad.clone(), &Arc::default()) else {
        panic!("a broken file loaded");
    };
    let Err(JobError::Failed(there)) = across(bad) else {
        panic!("a broken file loaded across the wire");
    };
    assert_eq!(there, here);
    assert!(here.contains("broken.din"), "{here}");
    assert!(matches!(
        result(Answer::Cancelled, Vec::new(), false),
        Err(JobError::Cancelled)
    ));
}

#[test]
fn rows_that_do_not_fit_the_answer_are_an_error() {
    let (head, mut rows) = answer(worker::load_source(
        generator("matmul", &[("n", "32")], None),
        &Arc::default(),
    ));
    rows[0].0.addr.pop();
    let Err(JobError::Failed(e)) = result(head.clone(), rows, false) else {
        panic!("short columns were taken");
    };
    assert!(e.contains("kernel 0"), "{e}");
    let Err(JobError::Failed(e)) = result(head, Vec::new(), true) else {
        panic!("missing rows were taken");
    };
    assert!(e.contains("1 kernels came with the rows of 0"), "{e}");
}

#[test]
fn a_file_named_by_its_path_is_not_sent_and_bytes_must_come() {
    let file = Source::File {
        path: "x.din".into(),
        format: None,
        allow_truncated: false,
        whole_up_to: 0,
    };
    assert!(request(&file).is_none());
    let bytes = Source::Bytes {
        name: "a.din".into(),
        bytes: b"0 10\n".to_vec().into(),
    };
    let (json, _) = request(&bytes).unwrap();
    let e = source(&json, None).unwrap_err();
    assert!(e.contains("a.din"), "{e}");
    let e = source("{\"File\":{}}", None).unwrap_err();
    assert!(e.contains("a broken request"), "{e}");
}
