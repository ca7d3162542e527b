//! The cache section of the configuration panel: size, line, ways, sectors, set index,
//! replacement, writes and whether global data bypasses the L1.

use super::*;

pub(super) fn cache(ui: &mut Ui, c: &mut SimConfig) {
    let cc = &mut c.cache;
    size_and_line(ui, cc);
    ways_and_sectors(ui, cc);
    set_index(ui, cc);
    row(
        ui,
        "Replacement",
        "Which line of a full set is evicted",
        |ui| pick_choice(ui, "replacement", &mut cc.replacement),
    );
    row(ui, "Writes", "What a store does to the L1", |ui| {
        pick_choice(ui, "write-policy", &mut cc.write_policy)
    });
    row(
        ui,
        "Global data",
        "Ticked: global loads and stores skip the L1 and go to the L2 (nvcc -Xptxas -dlcm=cg, Kepler's default; GPGPU-Sim's -gpgpu_gmem_skip_L1D)",
        |ui| ui.checkbox(&mut cc.bypass, "bypass the L1"),
    );
    if let Err(e) = cc.validate() {
        ui.colored_label(ui.visuals().warn_fg_color, format!("Invalid: {e}"));
    }
}

/// The capacity and the line size (a sector never larger than the line).
fn size_and_line(ui: &mut Ui, cc: &mut CacheConfig) {
    let mut kib = cc.size_bytes as f64 / 1024.0;
    row(
        ui,
        "Size (KiB)",
        "L1 capacity in KiB (a multiple of the line size)",
        |ui| {
            let r = ui.add(
                DragValue::new(&mut kib)
                    .range(0.125..=65536.0)
                    .speed(1.0)
                    .max_decimals(3),
            );
            if r.changed() {
                cc.size_bytes = ((kib * 1024.0).round() as u64).max(1);
            }
            r
        },
    );
    let lines_options = [16u32, 32, 64, 128, 256];
    row(
        ui,
        "Line (bytes)",
        "Bytes per cache line: the unit of allocation and of a miss",
        |ui| {
            let r = ComboBox::from_id_salt("line")
                .selected_text(cc.line_bytes.to_string())
                .show_ui(ui, |ui| {
                    for l in lines_options {
                        if ui
                            .selectable_value(&mut cc.line_bytes, l, l.to_string())
                            .changed()
                            && cc.sector_bytes > l
                        {
                            cc.sector_bytes = l;
                        }
                    }
                })
                .response;
            if cc.sector_bytes > cc.line_bytes {
                cc.sector_bytes = cc.line_bytes;
            }
            r
        },
    );
}

/// The associativities that fit the number of lines, and the sector size.
fn ways_and_sectors(ui: &mut Ui, cc: &mut CacheConfig) {
    // Associativities that divide the number of lines, plus fully associative.
    let lines = cc.lines().max(1);
    let mut ways_options: Vec<u32> = (0..=24)
        .map(|b| 1u64 << b)
        .filter(|&w| w <= lines && lines % w == 0 && w < lines)
        .map(|w| w as u32)
        .collect();
    for w in [3u32, 6, 12, 24, 48] {
        if (w as u64) < lines && lines % w as u64 == 0 {
            ways_options.push(w);
        }
    }
    ways_options.sort_unstable();
    let ways_name = |w: u32| {
        if w == 0 {
            "fully associative".to_string()
        } else if w == 1 {
            "direct mapped".to_string()
        } else {
            format!("{w}-way")
        }
    };
    row(
        ui,
        "Ways",
        "Lines per set (associativity); fully associative has one set",
        |ui| {
            ComboBox::from_id_salt("ways")
                .selected_text(ways_name(cc.ways))
                .show_ui(ui, |ui| {
                    for w in ways_options.iter().copied().chain([0]) {
                        ui.selectable_value(&mut cc.ways, w, ways_name(w));
                    }
                })
                .response
        },
    );
    row(
        ui,
        "Sector (bytes)",
        "Sector size: sectored caches fetch only the sectors used (equal to the line: no sectors)",
        |ui| {
            ComboBox::from_id_salt("sector")
                .selected_text(cc.sector_bytes.to_string())
                .show_ui(ui, |ui| {
                    for s in [4u32, 8, 16, 32, 64, 128, 256] {
                        if s <= cc.line_bytes {
                            ui.selectable_value(&mut cc.sector_bytes, s, s.to_string());
                        }
                    }
                })
                .response
        },
    );
}

/// How an address picks its set; chosen bits start from those a modulo index would use.
fn set_index(ui: &mut Ui, cc: &mut CacheConfig) {
    let was_bits = matches!(cc.set_index, SetIndex::Bits(_));
    row(ui, "Set index", "How an address picks its set: low line-address bits, Fermi's XOR hash, or chosen address bits", |ui| {
        pick_choice(ui, "set-index", &mut cc.set_index)
    });
    if !was_bits && matches!(cc.set_index, SetIndex::Bits(_)) {
        // The bits a modulo index would use, to start from.
        let off = cc.line_bytes.trailing_zeros() as u8;
        let bits = cc.sets().max(1).trailing_zeros() as u8;
        cc.set_index = SetIndex::Bits((off..off + bits).collect());
    }
    if let SetIndex::Bits(bits) = &mut cc.set_index {
        let mut text = bits
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(",");
        row(
            ui,
            "  bits",
            "Address bits of the set index, low to high, comma separated",
            |ui| {
                let r = ui.text_edit_singleline(&mut text);
                if r.changed() {
                    if let Ok(SetIndex::Bits(b)) = choice::parse(&format!("bits:{text}")) {
                        *bits = b;
                    }
                }
                r
            },
        );
    }
}
