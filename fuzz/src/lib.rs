//! Helpers shared by the fuzz targets under `fuzz_targets/`: comparing JSON values across a
//! print/parse round trip, and splitting an input into lines.

use serde_json::Value;

/// Whether two JSON values are the same up to the last bits of their floats.
///
/// `serde_json` (without its `float_roundtrip` feature) may parse a printed float back one ulp
/// away from the original, so a round trip compares floats with a relative tolerance; every
/// other value (integers included) must be identical.
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            _ if x == y => true,
            (Some(f), Some(g)) if x.is_f64() || y.is_f64() => {
                f == g || (f - g).abs() <= f64::EPSILON * 4.0 * f.abs().max(g.abs())
            }
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        _ => a == b,
    }
}

/// The nesting depth of a value: 0 for a scalar, 1 for a flat array or object.
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Splits `data` at its first `\n`: the head and the rest (empty when there is none).
pub fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// `[lo, hi]` picked by one byte (`lo` when the byte is missing).
pub fn pick(byte: Option<&u8>, lo: usize, hi: usize) -> usize {
    byte.map_or(lo, |&b| lo + usize::from(b) % (hi - lo + 1))
}
