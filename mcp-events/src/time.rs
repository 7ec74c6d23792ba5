//! The clock and the randomness of the crate (a log's epoch, event ids, challenges).

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A random number (a log's epoch, an event id).
pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // Without an entropy source, the clock still separates two epochs.
    if getrandom::fill(&mut bytes).is_err() {
        return now_ms();
    }
    u64::from_le_bytes(bytes)
}
