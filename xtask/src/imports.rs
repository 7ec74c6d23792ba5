//! `cargo xtask imports`: the import circles of the library crates, every import form counted.
//!
//! Each library crate's module tree is read from its `lib.rs` with `syn` (`mod x;` files, inline
//! modules, `#[path]`); test modules (`#[cfg(test)]`, `#[cfg(all(test, …))]`) are left out. A
//! file imports another when one of its paths names an item or module of it: a `use` tree
//! (`use crate::{…}`, `use super::{…}`, `use self::…`), a path in code or in a type (`crate::a::f()`,
//! `super::X`), or a path starting with a child module's name (`remote::fetch()`, `pub use
//! auth::DpopAuth`). A path is followed through re-exports (`pub use`, and private `use`s of the
//! module it names) to the module that defines the item, so `use crate::AuthInfo` imports the
//! file defining `AuthInfo`, not `lib.rs`. Declaring `mod x;` alone imports nothing.
//!
//! The circles are the strongly connected components of those imports. One of two files (a
//! module and its child importing each other's items) is allowed; more fails the command.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::util::{self, Result};

/// The library crates checked.
const LIBRARIES: &[&str] = &[
    "mcp-protocol",
    "mcp-runtime",
    "mcp-transport-http",
    "mcp-transport-stdio",
    "mcp-auth",
    "mcp-store-redis",
    "mcp-skills",
    "mcp-events",
    "mcp-client",
    "mcp-server",
];

/// A module: its file, and what it declares.
#[derive(Default)]
struct Module {
    file: PathBuf,
    /// Child modules by name.
    children: BTreeSet<String>,
    /// Names brought in by `use`, with the absolute path each stands for.
    uses: HashMap<String, Vec<String>>,
    /// The paths its code names (absolute or relative), as written.
    paths: Vec<Vec<String>>,
}

/// A crate's modules by absolute path (`[]` is the root).
type Tree = BTreeMap<Vec<String>, Module>;

/// Runs the check over every library crate; fails when one holds a circle of more than two files.
pub(crate) fn run() -> Result {
    let root = util::root();
    let mut found = Vec::new();
    for name in LIBRARIES {
        let lib = root.join(name).join("src/lib.rs");
        let tree = read_crate(&lib)?;
        let edges = edges(&tree);
        let files = tree.values().map(|m| m.file.clone()).collect::<BTreeSet<_>>();
        let imports: usize = edges.values().map(BTreeSet::len).sum();
        let circles: Vec<Vec<PathBuf>> = circles(&files, &edges).into_iter().filter(|c| c.len() > 2).collect();
        println!(
            "imports: {name}: {} files, {imports} imports between them, {} circle(s) of more than 2 files",
            files.len(),
            circles.len()
        );
        for c in &circles {
            let shown: Vec<String> = c
                .iter()
                .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
                .collect();
            println!("  circle: {}", shown.join(", "));
            let short = |f: &PathBuf| f.strip_prefix(&root).unwrap_or(f).display().to_string();
            for from in c {
                let to: Vec<String> = edges
                    .get(from)
                    .into_iter()
                    .flatten()
                    .filter(|t| c.contains(t))
                    .map(short)
                    .collect();
                println!("    {} -> {}", short(from), to.join(", "));
            }
            found.push(*name);
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("import circles of more than 2 files in {}", found.join(", ")))
    }
}

/// Reads a crate's module tree from its root file.
fn read_crate(lib: &Path) -> std::result::Result<Tree, String> {
    let mut tree = Tree::new();
    read_file(
        lib,
        Vec::new(),
        lib.parent().unwrap_or(Path::new(".")).to_path_buf(),
        &mut tree,
    )?;
    Ok(tree)
}

/// Reads the module at `path` from `file`; its child modules' files are looked for in `dir`.
fn read_file(file: &Path, path: Vec<String>, dir: PathBuf, tree: &mut Tree) -> std::result::Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let parsed = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    read_items(&parsed.items, file, path, &dir, tree)
}

fn read_items(
    items: &[syn::Item],
    file: &Path,
    path: Vec<String>,
    dir: &Path,
    tree: &mut Tree,
) -> std::result::Result<(), String> {
    let mut module = Module {
        file: file.to_path_buf(),
        ..Module::default()
    };
    let mut collect = Paths::default();
    for item in items {
        if is_test(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let name = m.ident.to_string();
                module.children.insert(name.clone());
                let mut child = path.clone();
                child.push(name.clone());
                match &m.content {
                    Some((_, inner)) => read_items(inner, file, child, &dir.join(&name), tree)?,
                    None => {
                        let (child_file, child_dir) = locate(m, dir, &name)?;
                        read_file(&child_file, child, child_dir, tree)?;
                    }
                }
            }
            syn::Item::Use(u) => {
                let mut flat = Vec::new();
                flatten(&u.tree, &mut Vec::new(), &mut flat);
                for (alias, full) in flat {
                    if let Some(alias) = alias {
                        module.uses.insert(alias, full.clone());
                    }
                    module.paths.push(full);
                }
            }
            other => collect.visit_item(other),
        }
    }
    module.paths.extend(collect.0);
    tree.insert(path, module);
    Ok(())
}

/// The file of `mod name;` declared in a module whose children live in `dir`, and the directory
/// of its own children.
fn locate(m: &syn::ItemMod, dir: &Path, name: &str) -> std::result::Result<(PathBuf, PathBuf), String> {
    for attr in &m.attrs {
        if attr.path().is_ident("path")
            && let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s), ..
            }) = &nv.value
        {
            let file = dir.join(s.value());
            let child_dir = file.with_extension("");
            return Ok((file, child_dir));
        }
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        return Ok((flat, dir.join(name)));
    }
    let nested = dir.join(name).join("mod.rs");
    if nested.exists() {
        return Ok((nested, dir.join(name)));
    }
    Err(format!("module `{name}` not found in {}", dir.display()))
}

/// Whether attributes put an item under `cfg(test)` (alone or in an `all(…)`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                l.tokens
                    .to_string()
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == "test")
            })
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        _ => &[],
    }
}

/// A `use` tree's paths: each with the name it brings in (`None` for a glob).
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut full = prefix.clone();
            if name != "self" {
                full.push(name.clone());
            }
            let alias = if name == "self" {
                prefix.last().cloned()
            } else {
                Some(name)
            };
            out.push((alias, full));
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push((Some(r.rename.to_string()), full));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, out);
            }
        }
    }
}

/// Every path of two or more segments in code and types (test modules are skipped above).
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

impl<'a> Visit<'a> for Paths {
    fn visit_path(&mut self, p: &'a syn::Path) {
        if p.segments.len() > 1 {
            self.0.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        // Inline modules are read as modules of their own.
        let _ = m;
    }
}

/// The files each file imports.
fn edges(tree: &Tree) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (at, module) in tree {
        for path in &module.paths {
            if let Some(target) = resolve(tree, at, path, 0)
                && let Some(t) = tree.get(&target)
                && t.file != module.file
            {
                out.entry(module.file.clone()).or_default().insert(t.file.clone());
            }
        }
    }
    out
}

/// The module defining what `path`, written in module `at`, names; `None` outside the crate.
fn resolve(tree: &Tree, at: &[String], path: &[String], depth: usize) -> Option<Vec<String>> {
    if depth > 16 {
        return None;
    }
    let (mut module, rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (at.to_vec(), &path[1..]),
        "super" => {
            let mut m = at.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                m.pop();
                rest = &rest[1..];
            }
            (m, rest)
        }
        first if tree.get(at).is_some_and(|m| m.children.contains(first)) => (at.to_vec(), path),
        first => {
            // A name brought in by a `use` of this module, written as a path's first segment.
            let here = tree.get(at)?;
            let used = here.uses.get(first)?;
            let local = |s: &String| s == "crate" || s == "super" || s == "self" || here.children.contains(s);
            if used.first().is_some_and(local) {
                let mut full = used.clone();
                full.extend(path[1..].iter().cloned());
                return resolve(tree, at, &full, depth + 1);
            }
            return None;
        }
    };
    let mut rest = rest;
    while let Some(seg) = rest.first() {
        let here = tree.get(&module)?;
        if here.children.contains(seg) {
            module.push(seg.clone());
            rest = &rest[1..];
            continue;
        }
        // An item of this module, or a name it re-exports (followed to where it is defined).
        if let Some(used) = here.uses.get(seg) {
            let mut full = used.clone();
            full.extend(rest[1..].iter().cloned());
            // A name taken from another crate names nothing of this one.
            return resolve(tree, &module, &full, depth + 1);
        }
        break;
    }
    Some(module)
}

/// The strongly connected components of the import graph (Tarjan), each sorted.
fn circles(files: &BTreeSet<PathBuf>, edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn connect<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets {
                if !s.index.contains_key(w) {
                    connect(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            component.sort();
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for f in files {
        if !s.index.contains_key(f) {
            connect(&mut s, f);
        }
    }
    s.out
}
