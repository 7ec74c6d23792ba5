//! Skills (SEP-2640) through the facade, in both eras: the declaration, `skills/list` pages,
//! `skills/get`, `resources/read` and `resources/list` of `skill://` files,
//! `resources/directory/read`; hostile URIs; trees refused at load (naming the file); reloads.

#![cfg(feature = "skills")]

use std::path::{Path, PathBuf};

use mcp_server::prelude::*;
use mcp_server::skills::{Skill, SkillError, Skills};
use mcp_server::testing::TestClient;

const BOTH: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];
const EXT: &str = "io.modelcontextprotocol/skills";

fn md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n")
}

fn catalog() -> Skills {
    let pdf = Skill::new("pdf-processing", md("pdf-processing", "PDF things"))
        .and_then(|s| s.file("references/FORMS.md", "# Forms\n"))
        .and_then(|s| s.file("scripts/extract.py", "print(1)\n"))
        .and_then(|s| s.file("assets/logo.png", vec![0x89, b'P', b'N', b'G', 0xff]));
    let refunds = Skill::new("acme/billing/refunds", md("refunds", "Refunds"));
    let git = Skill::new("git-workflow", md("git-workflow", "Git"));
    let skills = [pdf, refunds, git].into_iter().collect::<Result<Vec<_>, _>>();
    skills.and_then(Skills::new).unwrap_or_else(|e| panic!("{e}"))
}

fn server(skills: Skills) -> McpServer {
    McpServer::builder()
        .skills(skills)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn client(server: &McpServer, revision: Revision) -> TestClient {
    server
        .test_client()
        .revision(revision)
        .discover(true)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn refused(client: &TestClient, method: &str, params: Value) -> String {
    match client.request(method, params.clone()).await {
        Ok(v) => panic!("{method} {params} answered {v}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn declared_in_both_eras_with_resources() {
    let server = server(catalog());
    for revision in BOTH {
        let c = client(&server, revision).await;
        let declared = match c.era() {
            Era::Legacy => c.initialize_result(),
            Era::Modern => c.discover_result(),
        };
        let caps = &declared.unwrap_or_default()["capabilities"];
        assert_eq!(
            caps["extensions"][EXT],
            json!({ "directoryRead": true }),
            "{revision:?}"
        );
        assert!(caps["resources"].is_object(), "{revision:?}");
    }
    let quiet = server_without_directory();
    let c = client(&quiet, Revision::V2026_07_28).await;
    let caps = &c.discover_result().unwrap_or_default()["capabilities"];
    assert_eq!(caps["extensions"][EXT], json!({}));
    let e = refused(&c, "resources/directory/read", json!({ "uri": "skill://git-workflow" })).await;
    assert!(e.contains("-32601"), "{e}");
}

fn server_without_directory() -> McpServer {
    server(catalog().directory_read(false))
}

#[tokio::test]
async fn list_pages_never_split_an_entry() {
    let server = server(catalog().page_size(1));
    for revision in BOTH {
        let c = client(&server, revision).await;
        let mut cursor: Option<String> = None;
        let mut uris = Vec::new();
        loop {
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
            let page = c.request("skills/list", params).await.unwrap_or_else(|e| panic!("{e}"));
            let skills = page["skills"].as_array().cloned().unwrap_or_default();
            assert_eq!(skills.len(), 1);
            assert_eq!(page.get("ttlMs").is_some(), revision == Revision::V2026_07_28);
            assert_eq!(page.get("cacheScope").is_some(), revision == Revision::V2026_07_28);
            uris.push(skills[0]["uri"].as_str().unwrap_or_default().to_owned());
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(
            uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://git-workflow/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ]
        );
        let e = refused(&c, "skills/list", json!({ "cursor": "not-a-cursor" })).await;
        assert!(e.contains("-32602"), "{e}");
    }
}

#[tokio::test]
async fn entries_carry_frontmatter_digests_and_sizes() {
    let server = server(catalog());
    for revision in BOTH {
        let c = client(&server, revision).await;
        let got = c
            .request("skills/get", json!({ "uri": "skill://pdf-processing/SKILL.md" }))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(got.get("nextCursor").is_none());
        assert_eq!(got.get("ttlMs").is_some(), revision == Revision::V2026_07_28);
        let skill = &got["skill"];
        assert_eq!(
            skill["frontmatter"],
            json!({ "name": "pdf-processing", "description": "PDF things" })
        );
        let files = skill["resources"].as_array().cloned().unwrap_or_default();
        assert_eq!(files.len(), 4);
        let forms = files
            .iter()
            .find(|f| f["uri"] == "skill://pdf-processing/references/FORMS.md")
            .cloned()
            .unwrap_or_default();
        assert_eq!(forms["size"], 8);
        assert_eq!(forms["digest"], mcp_server::protocol::skills::digest(b"# Forms\n"));
        for unknown in [
            "skill://nope/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
            "x",
        ] {
            let e = refused(&c, "skills/get", json!({ "uri": unknown })).await;
            assert!(e.contains("-32602"), "{unknown}: {e}");
        }
        let e = refused(&c, "skills/get", json!({})).await;
        assert!(e.contains("-32602"), "{e}");
    }
}

#[tokio::test]
async fn files_are_resources() {
    let server = server(catalog());
    for revision in BOTH {
        let c = client(&server, revision).await;
        let listed = c.list_resources().await.unwrap_or_else(|e| panic!("{e}"));
        let pdf = listed
            .iter()
            .find(|r| r.uri == "skill://pdf-processing/SKILL.md")
            .unwrap_or_else(|| panic!("SKILL.md listed"));
        assert_eq!(pdf.name, "pdf-processing");
        assert_eq!(pdf.description.as_deref(), Some("PDF things"));
        assert_eq!(pdf.mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(listed.len(), 3, "only the SKILL.md files are listed");

        let read = c
            .read_resource("skill://pdf-processing/SKILL.md")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let read = serde_json::to_value(&read.contents[0]).unwrap_or_default();
        assert_eq!(read["mimeType"], "text/markdown");
        assert_eq!(read["text"], md("pdf-processing", "PDF things"));
        let py = c
            .read_resource("skill://pdf-processing/scripts/extract.py")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let py = serde_json::to_value(&py.contents[0]).unwrap_or_default();
        assert_eq!(
            (py["mimeType"].as_str(), py["text"].as_str()),
            (Some("text/x-python"), Some("print(1)\n"))
        );
        let png = c
            .read_resource("skill://pdf-processing/assets/logo.png")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let png = serde_json::to_value(&png.contents[0]).unwrap_or_default();
        assert_eq!(png["mimeType"], "image/png");
        assert!(png["blob"].is_string());
    }
}

#[tokio::test]
async fn directories_list_direct_children() {
    let server = server(catalog().page_size(2));
    for revision in BOTH {
        let c = client(&server, revision).await;
        let mut children = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = json!({ "uri": "skill://pdf-processing" });
            if let Some(cur) = &cursor {
                params["cursor"] = json!(cur);
            }
            let page = c
                .request("resources/directory/read", params)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            children.extend(page["resources"].as_array().cloned().unwrap_or_default());
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let shown: Vec<(String, String)> = children
            .iter()
            .map(|r| {
                (
                    r["uri"].as_str().unwrap_or_default().to_owned(),
                    r["mimeType"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let expected = [
            ("skill://pdf-processing/SKILL.md", "text/markdown"),
            ("skill://pdf-processing/assets", "inode/directory"),
            ("skill://pdf-processing/references", "inode/directory"),
            ("skill://pdf-processing/scripts", "inode/directory"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(u, m)| ((*u).to_owned(), (*m).to_owned()))
            .collect();
        assert_eq!(shown, expected);
        let nested = c
            .request("resources/directory/read", json!({ "uri": "skill://acme/billing" }))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(nested["resources"][0]["uri"], "skill://acme/billing/refunds");
        for bad in [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/",
            "skill://nope",
            "skill://pdf-processing/../git-workflow",
            "file:///etc",
        ] {
            let e = refused(&c, "resources/directory/read", json!({ "uri": bad })).await;
            assert!(e.contains("-32602"), "{bad}: {e}");
        }
    }
}

#[tokio::test]
async fn hostile_uris_are_invalid_params() {
    let server = server(catalog());
    for revision in BOTH {
        let c = client(&server, revision).await;
        for hostile in [
            "skill://pdf-processing/../../etc/passwd",
            "skill://pdf-processing/%2e%2e/%2e%2e/etc/passwd",
            "skill://pdf-processing%2FSKILL.md",
            "skill://pdf-processing/references%2FFORMS.md",
            "skill://pdf-processing/./SKILL.md",
            "skill://pdf-processing//SKILL.md",
            "skill://pdf-processing\\..\\x",
            "skill:///etc/passwd",
            "skill://pdf-processing/missing.md",
        ] {
            let e = refused(&c, "resources/read", json!({ "uri": hostile })).await;
            assert!(e.contains("-32602"), "{revision:?} {hostile}: {e}");
        }
    }
}

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-skills-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn loads_a_tree_and_reloads_it() {
    let root = scratch("tree");
    write(&root.join("pdf/SKILL.md"), md("pdf", "v1"));
    write(&root.join("pdf/references/FORMS.md"), "forms");
    write(&root.join("pdf/inner/SKILL.md"), md("inner", "nested"));
    write(&root.join("pdf/.git/config"), "skipped");
    write(&root.join("README.md"), "not a skill file");
    let skills = Skills::from_dir(&root).unwrap_or_else(|e| panic!("{e}"));
    let server = server(skills.clone());
    let c = client(&server, Revision::V2026_07_28).await;
    let list = c
        .request("skills/list", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let uris: Vec<&str> = list["skills"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["uri"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(uris, ["skill://pdf/SKILL.md", "skill://pdf/inner/SKILL.md"]);
    // The nested skill's files are supporting files of the enclosing one.
    assert_eq!(list["skills"][0]["resources"].as_array().map(Vec::len), Some(3));

    // A change on disk is served after reload, with its new digest.
    write(&root.join("pdf/references/FORMS.md"), "forms v2");
    write(&root.join("pdf/SKILL.md"), md("pdf", "v2"));
    std::fs::remove_dir_all(root.join("pdf/inner")).unwrap_or_else(|e| panic!("{e}"));
    skills.reload().unwrap_or_else(|e| panic!("{e}"));
    let got = c
        .request("skills/get", json!({ "uri": "skill://pdf/SKILL.md" }))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got["skill"]["frontmatter"]["description"], "v2");
    let forms = c
        .read_resource("skill://pdf/references/FORMS.md")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        serde_json::to_value(&forms.contents[0]).unwrap_or_default()["text"],
        "forms v2"
    );
    let listed = c.list_resources().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 1, "the removed nested skill is no longer listed");
    let e = refused(&c, "skills/get", json!({ "uri": "skill://pdf/inner/SKILL.md" })).await;
    assert!(e.contains("-32602"), "{e}");

    // A broken tree is refused whole; the old catalog stays served.
    write(&root.join("pdf/SKILL.md"), "no frontmatter");
    assert!(matches!(skills.reload(), Err(SkillError::NoFrontmatter { .. })));
    let got = c
        .request("skills/get", json!({ "uri": "skill://pdf/SKILL.md" }))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got["skill"]["frontmatter"]["description"], "v2");
    let _ = std::fs::remove_dir_all(&root);
}

/// Loads a tree with one skill `bad` whose files `setup` writes; the error must name `file`.
fn refused_load(name: &str, setup: impl FnOnce(&Path), file: &str) -> SkillError {
    let root = scratch(name);
    setup(&root);
    let e = Skills::from_dir(&root).map(|_| ()).unwrap_err();
    assert!(e.to_string().contains(file), "{name}: {e} should name {file}");
    let _ = std::fs::remove_dir_all(&root);
    e
}

#[test]
fn bad_trees_are_refused_naming_the_file() {
    let e = refused_load(
        "yaml",
        |r| write(&r.join("bad/SKILL.md"), "---\nname: [bad\n---\n"),
        "bad/SKILL.md",
    );
    assert!(matches!(e, SkillError::BadFrontmatter { .. }));
    let e = refused_load(
        "nofm",
        |r| write(&r.join("bad/SKILL.md"), "# no frontmatter"),
        "bad/SKILL.md",
    );
    assert!(matches!(e, SkillError::NoFrontmatter { .. }));
    let e = refused_load(
        "nodesc",
        |r| write(&r.join("bad/SKILL.md"), "---\nname: bad\n---\n"),
        "bad/SKILL.md",
    );
    assert!(matches!(
        e,
        SkillError::MissingField {
            field: "description",
            ..
        }
    ));
    for (i, name) in ["Bad", "bad--name", "-bad", "bad_name"].into_iter().enumerate() {
        let e = refused_load(
            &format!("name{i}"),
            |r| write(&r.join(name).join("SKILL.md"), md(name, "d")),
            "SKILL.md",
        );
        assert!(matches!(e, SkillError::BadName { .. }), "{name}: {e}");
    }
    let e = refused_load(
        "mismatch",
        |r| write(&r.join("bad/SKILL.md"), md("other", "d")),
        "bad/SKILL.md",
    );
    assert!(matches!(e, SkillError::NameMismatch { .. }));
    let e = refused_load(
        "many",
        |r| {
            write(&r.join("bad/SKILL.md"), md("bad", "d"));
            for i in 0..512 {
                write(&r.join(format!("bad/f/{i}.txt")), "");
            }
        },
        "skill://bad/SKILL.md",
    );
    assert!(matches!(e, SkillError::TooManyFiles { .. }));
    let e = refused_load(
        "large",
        |r| {
            write(&r.join("bad/SKILL.md"), md("bad", "d"));
            write(&r.join("bad/big.bin"), vec![0u8; 16 * 1024 * 1024]);
        },
        "bad/big.bin",
    );
    assert!(matches!(e, SkillError::TooLarge { .. }));
    let e = refused_load(
        "percent",
        |r| {
            write(&r.join("bad/SKILL.md"), md("bad", "d"));
            write(&r.join("bad/a%2Fb.md"), "x");
        },
        "a%2Fb.md",
    );
    assert!(matches!(e, SkillError::BadPath { .. }));
}

#[cfg(unix)]
#[test]
fn symlinks_leaving_the_root_are_refused() {
    let outside = scratch("outside");
    write(&outside.join("secret.txt"), "secret");
    let e = refused_load(
        "link-out",
        |r| {
            write(&r.join("bad/SKILL.md"), md("bad", "d"));
            std::os::unix::fs::symlink(outside.join("secret.txt"), r.join("bad/secret.txt"))
                .unwrap_or_else(|e| panic!("{e}"));
        },
        "bad/secret.txt",
    );
    assert!(matches!(e, SkillError::Symlink { .. }));
    let e = refused_load(
        "link-dir",
        |r| {
            write(&r.join("bad/SKILL.md"), md("bad", "d"));
            std::os::unix::fs::symlink(&outside, r.join("bad/up")).unwrap_or_else(|e| panic!("{e}"));
        },
        "bad/up",
    );
    assert!(matches!(e, SkillError::Symlink { .. }));
    // A link to a file inside the root is followed.
    let root = scratch("link-in");
    write(&root.join("ok/SKILL.md"), md("ok", "d"));
    write(&root.join("shared.md"), "shared");
    std::os::unix::fs::symlink(root.join("shared.md"), root.join("ok/shared.md")).unwrap_or_else(|e| panic!("{e}"));
    let skills = Skills::from_dir(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(skills.skills()[0].files().contains_key("shared.md"));
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&outside);
}
