//! Integration suites of the MCP server library, grouped by feature under
//! `tests/`: the dispatcher of both eras, the stdio transport, and (as they
//! land) HTTP, sessions, MRTR, subscriptions, tasks and auth. The library
//! target itself is empty; each suite is its own test binary.
