//! Disturbed cells: a (workload, target) cell whose rounds spread more than one program's rate
//! does on its own, because load from elsewhere on the machine slowed some of them.

use serde_json::Value;

/// A cell whose fastest round is over this many times its slowest was disturbed: one program's
/// rate does not vary that much between rounds of 5 s on its own.
pub(super) const SPREAD: f64 = 1.5;

/// The spread of the cell of `peer` in a workload `row`: its fastest round's rate over its
/// slowest's (`None` with fewer than two rounds, or a round that served nothing).
pub(super) fn spread(row: &Value, peer: &str) -> Option<f64> {
    let rounds: Vec<f64> = row["targets"][peer]["rounds_rps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    let (min, max) = rounds
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    (rounds.len() > 1 && min > 0.0).then(|| max / min)
}

/// The cell of `peer` in `row` as the report names a disturbed one (`W2 rmcp (1.7×)`), if it
/// was disturbed.
pub(super) fn label(row: &Value, peer: &str) -> Option<String> {
    let spread = spread(row, peer).filter(|s| *s > SPREAD)?;
    Some(format!(
        "{} {peer} ({spread:.1}×)",
        row["id"].as_str().unwrap_or_default()
    ))
}

/// The disturbed cells of `peers` in every row, labelled.
pub(super) fn cells(rows: &[Value], peers: &[&str]) -> Vec<String> {
    rows.iter()
        .flat_map(|row| peers.iter().filter_map(|peer| label(row, peer)))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn spread_of_rounds() {
        let row = json!({"id": "W1", "targets": {
            "ours": {"rounds_rps": [100.0, 160.0, 120.0]},
            "rmcp": {"rounds_rps": [100.0, 140.0]},
            "floor": {"rounds_rps": [100.0]},
        }});
        assert_eq!(spread(&row, "ours"), Some(1.6));
        assert_eq!(label(&row, "ours").as_deref(), Some("W1 ours (1.6×)"));
        assert_eq!(label(&row, "rmcp"), None);
        assert_eq!(spread(&row, "floor"), None);
        assert_eq!(cells(&[row], &["ours", "rmcp", "floor"]), vec!["W1 ours (1.6×)"]);
    }
}
