//! `--hold`: the generator stops between phases until told to go on, so that whoever drives it
//! can read a counter of the server (allocations, say) while no request is in flight.
//!
//! At each hold the generator prints one line on stderr (`held`, then `held N`: the requests
//! sent since the first hold, every one answered) and waits for a line on its stdin. The
//! runtime keeps running meanwhile (stdin is read asynchronously), so that idle connections are
//! served as usual.

use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::client::Result;

/// The marker line printed at each hold (`held` or `held N`).
pub(crate) const MARKER: &str = "held";

/// The generator's stdin, read one line per hold.
pub(crate) struct Holds {
    stdin: Lines<BufReader<Stdin>>,
}

impl Holds {
    /// Holds read from this process's stdin.
    pub(crate) fn new() -> Holds {
        Holds {
            stdin: BufReader::new(tokio::io::stdin()).lines(),
        }
    }

    /// Prints `held` (with `requests` after it when given) on stderr and waits for a line on
    /// stdin.
    pub(crate) async fn hold(&mut self, requests: Option<u64>) -> Result<()> {
        match requests {
            Some(n) => eprintln!("{MARKER} {n}"),
            None => eprintln!("{MARKER}"),
        }
        match self.stdin.next_line().await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("--hold: stdin closed at a hold".to_owned()),
            Err(e) => Err(format!("--hold: stdin: {e}")),
        }
    }
}
