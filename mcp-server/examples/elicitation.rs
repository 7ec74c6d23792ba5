//! Typed elicitation in both eras, over Streamable HTTP.
//!
//! ```sh
//! cargo run --example elicitation                    # http://127.0.0.1:8080/mcp
//! cargo run --example elicitation -- 127.0.0.1:0     # any free port
//! ```
//!
//! `book_table` asks the user for the details of a reservation (a form derived from
//! `Booking`), then for a confirmation, and books once both are accepted. The client must
//! declare the `elicitation` capability.
//!
//! - A legacy client (2025-11-25 and earlier) gets two `elicitation/create` requests on the
//!   call's SSE stream; the handler waits for each answer and runs once.
//! - A 2026-07-28 client gets `input_required` results: it answers, retries the call, and the
//!   handler runs again from the top (three rounds here). The booking number is drawn with
//!   `ctx.once`, so every round shows the same one.

use std::sync::atomic::{AtomicU32, Ordering};

use mcp_server::prelude::*;

/// The reservation form.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    /// Your name
    name: String,
    /// Where we send the confirmation
    #[schemars(email)]
    email: String,
    /// How many people (1 to 12)
    #[schemars(range(min = 1, max = 12))]
    people: u8,
    /// When
    time: Slot,
    /// Anything we should know
    notes: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Slot {
    /// 19:00
    Early,
    /// 21:00
    Late,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Book it?
    confirm: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Table {
    /// The restaurant.
    restaurant: String,
}

/// Hands out booking numbers.
#[derive(Default)]
struct Bookings(AtomicU32);

fn book_table() -> Tool {
    Tool::typed(
        "book_table",
        "Books a table, asking the user for the details",
        |t: Table, ctx| async move {
            let bookings = ctx.state::<Bookings>()?;
            // Drawn in the first round only (a modern client re-runs this handler).
            let number: u32 = ctx
                .once(|| async { Ok(bookings.0.fetch_add(1, Ordering::SeqCst) + 1) })
                .await?;

            let booking = match ctx
                .elicit::<Booking>(format!("Booking {number} at {}", t.restaurant))
                .await?
            {
                Elicitation::Accept(b) => b,
                Elicitation::Decline | Elicitation::Cancel => return Ok("no table booked".to_owned()),
            };
            let time = match booking.time {
                Slot::Early => "19:00",
                Slot::Late => "21:00",
            };
            let question = format!(
                "Book {} at {time} for {}, {}?",
                t.restaurant, booking.people, booking.name
            );
            match ctx.elicit::<Confirm>(question).await? {
                Elicitation::Accept(Confirm { confirm: true }) => {
                    let notes = booking.notes.map(|n| format!(" ({n})")).unwrap_or_default();
                    Ok(format!(
                        "booking {number}: {} at {time} for {} people{notes}; confirmation to {}",
                        t.restaurant, booking.people, booking.email
                    ))
                }
                _ => Ok("no table booked".to_owned()),
            }
        },
    )
}

pub(crate) fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("elicitation-example")
        .version(env!("CARGO_PKG_VERSION"))
        .state(Bookings::default())
        .tool(book_table())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());

    // Until Ctrl-C or SIGTERM, then the calls in flight drain; the address is logged.
    server()?.serve_http(&addr).await?;
    Ok(())
}
