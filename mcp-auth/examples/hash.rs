//! Prints the stored form of an API key or a password, for configuring the
//! `apikey` and `basic` providers without keeping secrets in clear.
//!
//! ```text
//! cargo run -p mcp-auth --example hash -- apikey KEY PEPPER
//! cargo run -p mcp-auth --example hash -- password PASSWORD
//! ```
//!
//! Command-line arguments are visible to other local users (`ps`) and may land
//! in shell history: run it on a trusted machine.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["apikey", key, pepper] if !key.is_empty() && !pepper.is_empty() => {
            println!("{}", mcp_auth::hash_api_key(key, pepper));
            ExitCode::SUCCESS
        }
        ["password", password] => {
            println!("{}", mcp_auth::hash_password(password));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: hash apikey KEY PEPPER\n       hash password PASSWORD");
            ExitCode::from(2)
        }
    }
}
