//! [`Quota`]: a rate and a burst, the limit of one rate-limit bucket.

use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

/// A rate limit: one request every [`interval`](Quota::interval), up to
/// [`burst`](Quota::burst) at once (a GCRA, equivalent to a token bucket that holds `burst`
/// tokens and gains one every `interval`).
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use std::num::NonZeroU32;
/// use mcp_server::store::Quota;
///
/// let ten = Quota::per_second(NonZeroU32::new(10).unwrap());
/// assert_eq!(ten.burst(), 10);
/// assert_eq!("10".parse::<Quota>().unwrap(), ten);
/// assert_eq!("0.5:3".parse::<Quota>().unwrap().interval().as_secs(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quota {
    interval: Duration,
    burst: NonZeroU32,
}

/// Why a quota cannot be built or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaError {
    /// The rate is not a positive, finite number of requests per second (or so high that its
    /// interval is under a microsecond).
    #[error("the rate must be a positive number of requests per second up to 1000000, not {0}")]
    Rate(String),
    /// The burst is not a positive whole number.
    #[error("the burst must be a whole number of requests from 1, not {0}")]
    Burst(String),
}

impl Quota {
    /// `n` requests per second, `n` at once.
    pub fn per_second(n: NonZeroU32) -> Quota {
        Quota {
            interval: Duration::from_secs(1) / n.get(),
            burst: n,
        }
    }

    /// `n` requests per minute, `n` at once.
    pub fn per_minute(n: NonZeroU32) -> Quota {
        Quota {
            interval: Duration::from_secs(60) / n.get(),
            burst: n,
        }
    }

    /// One request every `interval`, one at once; `None` for an interval under a microsecond
    /// (the shared buckets count in microseconds).
    pub fn with_interval(interval: Duration) -> Option<Quota> {
        (interval >= Duration::from_micros(1)).then_some(Quota {
            interval,
            burst: NonZeroU32::MIN,
        })
    }

    /// `rate` requests per second (a fraction allowed: `0.5` is one every two seconds), `burst`
    /// at once.
    pub fn new(rate: f64, burst: u32) -> Result<Quota, QuotaError> {
        if !(rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0) {
            return Err(QuotaError::Rate(rate.to_string()));
        }
        let burst = NonZeroU32::new(burst).ok_or_else(|| QuotaError::Burst(burst.to_string()))?;
        let interval = Duration::from_secs_f64(1.0 / rate);
        let quota = Quota::with_interval(interval).ok_or_else(|| QuotaError::Rate(rate.to_string()))?;
        Ok(quota.with_burst(burst))
    }

    /// The same rate with another burst.
    pub fn with_burst(self, burst: NonZeroU32) -> Quota {
        Quota { burst, ..self }
    }

    /// How long the bucket takes to gain one request back.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many requests may come at once (the bucket's size).
    pub fn burst(&self) -> u32 {
        self.burst.get()
    }
}

impl FromStr for Quota {
    type Err = QuotaError;

    /// `RATE[:BURST]`: `RATE` requests per second (a decimal number, `0.5` allowed), `BURST` at
    /// once (default: `RATE` rounded up, at least 1).
    fn from_str(s: &str) -> Result<Quota, QuotaError> {
        let (rate, burst) = match s.split_once(':') {
            Some((r, b)) => (r, Some(b)),
            None => (s, None),
        };
        let rate: f64 = rate.trim().parse().map_err(|_| QuotaError::Rate(rate.to_owned()))?;
        let burst = match burst {
            Some(b) => b.trim().parse().map_err(|_| QuotaError::Burst(b.to_owned()))?,
            // Saturating: a rate over u32::MAX is refused by `new` anyway.
            None if rate.is_finite() && rate > 0.0 => rate.ceil().min(f64::from(u32::MAX)) as u32,
            None => 1,
        };
        Quota::new(rate, burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rate_and_burst() {
        let q: Quota = "5:20".parse().unwrap();
        assert_eq!((q.interval(), q.burst()), (Duration::from_millis(200), 20));
        let q: Quota = "2.5".parse().unwrap();
        assert_eq!((q.interval(), q.burst()), (Duration::from_millis(400), 3));
        let q: Quota = "0.1".parse().unwrap();
        assert_eq!((q.interval(), q.burst()), (Duration::from_secs(10), 1));
    }

    #[test]
    fn refuses_nonsense() {
        for bad in ["", "0", "-1", "nan", "inf", "x:1", "1e7"] {
            assert!(matches!(bad.parse::<Quota>(), Err(QuotaError::Rate(_))), "{bad}");
        }
        for bad in ["1:0", "1:x", "1:-2", "1:1.5"] {
            assert!(matches!(bad.parse::<Quota>(), Err(QuotaError::Burst(_))), "{bad}");
        }
        assert!(Quota::with_interval(Duration::from_nanos(999)).is_none());
    }
}
