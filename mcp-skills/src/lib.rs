//! # mcp-skills
//!
//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`) for servers built on
//! `mcp-runtime`: a catalog of [Agent Skills](https://agentskills.io/specification) loaded
//! from a directory tree ([`Skills::from_dir`]) or built in code ([`Skill`], [`Skills::new`]),
//! served in both eras through
//!
//! - `skills/list` (paginated; an entry is never split across pages) and `skills/get` (an
//!   unknown URI is -32602, the result has no cursor); their 2026-07-28 results carry the
//!   server's cache hint (`ttlMs`, `cacheScope`);
//! - `resources/read` of `skill://<skill-path>/<file-path>` (`SKILL.md` as `text/markdown`,
//!   other files by extension), each `SKILL.md` listed by `resources/list` with the name and
//!   description of its frontmatter;
//! - `resources/directory/read` (declared as `directoryRead: true`, on by default): a
//!   directory's direct children, subdirectories as `inode/directory`.
//!
//! It uses only the runtime's public API: an [`Extension`](mcp_runtime::extension::Extension)
//! with three [`CustomMethod`](mcp_runtime::extension::CustomMethod)s, and a resource template
//! and resources in the [`Registry`](mcp_runtime::Registry) ([`Skills::attach`]). With
//! `mcp-server`, `McpServerBuilder::skills` does both.
//!
//! ## Layout on disk
//!
//! Every directory under the root that holds a `SKILL.md` is a skill; its skill path is its
//! place under the root (`acme/billing/refunds/SKILL.md` is `skill://acme/billing/refunds/SKILL.md`),
//! and its files are every file below it, a nested skill's files included. Entries whose name
//! starts with `.` are skipped; files outside any skill are not served.
//!
//! ## Rules enforced at load (the whole load is refused, naming the file)
//!
//! - `SKILL.md` begins with YAML frontmatter holding non-empty string `name` and
//!   `description`; `name` follows the naming rules (1–64 lowercase letters, digits and
//!   hyphens, no hyphen at either end or two in a row) and equals the skill's directory name.
//! - At most 512 files and 16 MiB per skill.
//! - Every name is a valid URI segment (no `%`, `\`, `?`, `#`, control characters; UTF-8).
//! - A symbolic link is followed only to a file inside the root; one leaving the root, or
//!   pointing at a directory, is refused.
//!
//! Requests get -32602 for any URI that is not a file or directory served here: `..` or `.`
//! segments, empty segments, percent-encoded bytes (`%2F`, `%2e%2e`), backslashes, another
//! scheme. Nothing is ever read from disk on a request.
//!
//! ## Changes on disk
//!
//! The catalog holds the files' bytes, so what is read always matches the published digests.
//! [`Skills::reload`] reads the tree again and swaps the catalog at once (a refused tree
//! leaves the old one served); the `SKILL.md` resources are updated and `list_changed`
//! announced.
//!
//! ## The YAML parser
//!
//! Frontmatter is parsed by `serde_norway`, the maintained fork of `serde_yaml` (archived in
//! 2024), with the same API and YAML 1.2 behaviour, straight into a `serde_json` object; the
//! `serde_yml` fork was passed over for its soundness advisories.

mod catalog;
mod error;
mod frontmatter;
mod load;
mod methods;
mod serve;
mod skill;

pub use error::SkillError;
pub use serve::{FILES_TEMPLATE, Skills};
pub use skill::{Skill, SkillFile};
