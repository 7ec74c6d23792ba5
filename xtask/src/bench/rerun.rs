//! Reruns of a workload row whose disturbed cell decides a target: such a cell's median is not
//! reported as it is; the row's rounds are measured again (every target of the row, interleaved
//! as the first time) until no deciding cell is disturbed, at most [`MAX_RERUNS`] more times,
//! and the last measuring is reported with what happened (`rerun` in the row).
//!
//! A cell is disturbed when its rounds spread past [`disturbed::SPREAD`]; it decides a target
//! when a goal of [`targets`] reads it. A disturbed cell that decides nothing (W4's, the floor's
//! in W5b) is only marked, as before.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{disturbed, targets};

/// Reruns of one row at most.
pub(super) const MAX_RERUNS: usize = 2;

/// The disturbed cells of `row` that decide a target, labelled (`W1 ours (1.7×)`).
pub(super) fn deciding_disturbed(row: &Value) -> Vec<String> {
    let id = row["id"].as_str().unwrap_or_default();
    targets::deciding_peers(id)
        .into_iter()
        .filter_map(|peer| disturbed::label(row, peer))
        .collect()
}

/// `row` as it is when no deciding cell is disturbed; else the row measured anew by
/// `measure(attempt)` (attempt 1, 2…) until none is, [`MAX_RERUNS`] times at most. A rerun row
/// carries `rerun`: `times`, `disturbed` (the deciding cells that were disturbed before each
/// rerun) and `still_disturbed` (those of the row reported).
pub(super) fn settle(mut row: Value, mut measure: impl FnMut(usize) -> Value) -> Value {
    let mut history: Vec<Vec<String>> = Vec::new();
    loop {
        let disturbed = deciding_disturbed(&row);
        if disturbed.is_empty() || history.len() == MAX_RERUNS {
            if !history.is_empty() {
                row["rerun"] = json!({
                    "times": history.len(),
                    "disturbed": history,
                    "still_disturbed": disturbed,
                });
            }
            return row;
        }
        history.push(disturbed);
        row = measure(history.len());
    }
}

/// The line on the rows that were rerun (empty when none was): how often, the deciding cells
/// that were disturbed before each rerun, and those that stayed disturbed.
pub(super) fn markdown(rows: &[Value]) -> String {
    let list = |v: &Value| {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut notes = Vec::new();
    for row in rows {
        let rerun = &row["rerun"];
        let Some(times) = rerun["times"].as_u64() else {
            continue;
        };
        let before: Vec<String> = rerun["disturbed"].as_array().into_iter().flatten().map(list).collect();
        let still = list(&rerun["still_disturbed"]);
        let outcome = if still.is_empty() {
            "then steady".to_owned()
        } else {
            format!("stayed disturbed: {still}")
        };
        notes.push(format!(
            "{} {times}× (disturbed before: {}; {outcome})",
            row["id"].as_str().unwrap_or_default(),
            before.join("; then ")
        ));
    }
    if notes.is_empty() {
        return String::new();
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\nRerun (a disturbed cell decided a target; every target of the row measured again, its \
         rounds interleaved as before, at most {MAX_RERUNS} times; the last measuring is reported, the \
         S cells keep the first): {}.",
        notes.join("; ")
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, ours: &[f64]) -> Value {
        json!({"id": id, "targets": {
            "ours": {"rounds_rps": ours},
            "rmcp": {"rounds_rps": [10.0, 10.0]},
            "floor": {"rounds_rps": [10.0, 30.0]},
        }})
    }

    #[test]
    fn steady_rows_are_kept() {
        let mut steady = row("W1", &[10.0, 11.0]);
        steady["targets"]["floor"]["rounds_rps"] = json!([30.0, 31.0]);
        let kept = settle(steady, |_| unreachable!("no rerun"));
        assert!(kept.get("rerun").is_none());
        // W5b's floor decides no target: its disturbance is only marked.
        let kept = settle(row("W5b", &[10.0, 11.0]), |_| unreachable!("no rerun"));
        assert!(kept.get("rerun").is_none());
    }

    #[test]
    fn disturbed_rows_are_rerun() {
        let mut runs = 0;
        let settled = settle(row("W1", &[10.0, 20.0]), |attempt| {
            runs += 1;
            assert_eq!(attempt, runs);
            json!({"id": "W1", "targets": {"ours": {"rounds_rps": [10.0, 11.0]}}})
        });
        assert_eq!(runs, 1);
        assert_eq!(settled["rerun"]["times"], 1);
        assert_eq!(
            settled["rerun"]["disturbed"],
            json!([["W1 ours (2.0×)", "W1 floor (3.0×)"]])
        );
        assert_eq!(settled["rerun"]["still_disturbed"], json!([]));

        let mut runs = 0;
        let stayed = settle(row("W5a", &[10.0, 20.0]), |_| {
            runs += 1;
            row("W5a", &[10.0, 16.0])
        });
        assert_eq!(runs, MAX_RERUNS);
        assert_eq!(stayed["rerun"]["times"], 2);
        assert_eq!(
            stayed["rerun"]["still_disturbed"],
            json!(["W5a ours (1.6×)", "W5a floor (3.0×)"])
        );
    }
}
