//! A sweep's grid: the `KEY=V1,V2,...` axes (`warpscope sweep --vary`, the app's sweep
//! form), their product in order (the last axis varies fastest), and one configuration per
//! point. The CLI's sweeps, plans and shards and the app's sweeps build their grids here, so
//! both shells accept the same axes and give the same points.

use super::{keys, SimConfig};

/// One axis: a configuration key (a flag name of `warpscope sim`) and its values in order.
pub type Axis = (String, Vec<String>);

/// One point of the grid: each axis's key and the value it takes there.
pub type Point = Vec<(String, String)>;

/// The axes of `vary` (`KEY=V1,V2,...` each), each key's first value checked on `base`.
/// Errors name the axis and say what was expected.
pub fn axes(vary: &[String], base: &SimConfig) -> Result<Vec<Axis>, String> {
    let mut axes: Vec<Axis> = Vec::new();
    for v in vary {
        let (k, vals) = v
            .split_once('=')
            .ok_or_else(|| format!("expected KEY=V1,V2,..., found `{v}`"))?;
        let k = k.trim();
        let vals: Vec<String> = vals
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if vals.is_empty() {
            return Err(format!("{k}: no values"));
        }
        if axes.iter().any(|(a, _)| a == k) {
            return Err(format!("{k} is given twice"));
        }
        let mut probe = base.clone();
        keys::apply(&mut probe, k, &vals[0]).map_err(|e| format!("{k}: {e}"))?;
        axes.push((k.to_string(), vals));
    }
    if axes.is_empty() {
        return Err("give at least one KEY=V1,V2,...".into());
    }
    Ok(axes)
}

/// The product of the axes, in order (the last axis varies fastest).
pub fn points(axes: &[Axis]) -> Vec<Point> {
    let mut grid: Vec<Point> = vec![vec![]];
    for (k, vals) in axes {
        grid = grid
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((k.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    grid
}

/// `base` with each point's keys set; the error names the key and value that failed.
pub fn configs(base: &SimConfig, points: &[Point]) -> Result<Vec<SimConfig>, String> {
    points
        .iter()
        .map(|params| {
            let mut c = base.clone();
            for (k, v) in params {
                keys::apply(&mut c, k, v).map_err(|e| format!("{k}={v}: {e}"))?;
            }
            Ok(c)
        })
        .collect()
}

/// A point as `key=value` words, for messages.
pub fn describe(point: &[(String, String)]) -> String {
    let words: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_the_axes_product_with_the_last_varying_fastest() {
        let base = SimConfig::default();
        let vary = ["ways=1,2".to_string(), "line-size=64, 128".to_string()];
        let a = axes(&vary, &base).unwrap();
        let p = points(&a);
        assert_eq!(p.len(), 4);
        assert_eq!(describe(&p[1]), "ways=1 line-size=128");
        let c = configs(&base, &p).unwrap();
        assert_eq!((c[2].cache.ways, c[2].cache.line_bytes), (2, 64));
        assert!(axes(&["ways".into()], &base)
            .unwrap_err()
            .contains("KEY=V1"));
        assert!(axes(&["ways=".into()], &base)
            .unwrap_err()
            .contains("no values"));
        assert!(axes(&["nope=1".into()], &base)
            .unwrap_err()
            .starts_with("nope"));
        let twice = ["ways=1".to_string(), "ways=2".to_string()];
        assert!(axes(&twice, &base).unwrap_err().contains("twice"));
        assert!(axes(&[], &base).is_err());
        // A later value that cannot be set fails when the configurations are made.
        let bad = axes(&["ways=1,x".into()], &base).unwrap();
        assert!(configs(&base, &points(&bad))
            .unwrap_err()
            .starts_with("ways=x"));
    }
}
