//! `cargo xtask layers`: the module import graph of each workspace crate, and its cycles.
//!
//! A crate's modules are its files (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`). Module `m`
//! imports module `n` when a path in `m`'s code names `n` or an item of it: `crate::n::..`,
//! `super::..`, `self::..`, a child module's name, or an item the crate root re-exports from
//! `n` (`crate::Item`). `mod` declarations are not imports (the module tree is no layer), doc
//! links are not code, and `#[cfg(test)]` items are left out: a module's tests are its clients
//! and may use the layers above it. The layering rule is that no two modules import each other
//! through any chain: the graph of each crate has no cycle (docs/layout.md). The workspace's
//! default tests check it ([`cycles`]), so a new cycle fails CI.
//!
//! The paths are read with `syn` (the Rust parser of proc-macros), so comments, strings and
//! doc links never count; macro bodies are opaque token streams and do not count either
//! (the one macro that names a module, dem-core's `in_lanes!`, names `lanes`, which its users
//! also import by a `use`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::visit::Visit;

/// A crate's modules (`::`-joined paths; the root is `""`) and, for each, the modules it
/// imports.
#[derive(Debug, Default)]
pub struct Graph {
    /// Module -> the modules it imports.
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// The number of import edges.
    pub fn edge_count(&self) -> usize {
        self.edges.values().map(BTreeSet::len).sum()
    }

    /// The strongly connected components of more than one module (Tarjan), each sorted: the
    /// cycles.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        struct Tarjan<'a> {
            graph: &'a Graph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<Vec<String>>,
        }
        impl<'a> Tarjan<'a> {
            fn visit(&mut self, v: &'a str) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                self.on_stack.insert(v);
                for w in self.graph.edges.get(v).into_iter().flatten() {
                    if !self.index.contains_key(w.as_str()) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w.as_str()]);
                        self.low.insert(v, low);
                    } else if self.on_stack.contains(w.as_str()) {
                        let low = self.low[v].min(self.index[w.as_str()]);
                        self.low.insert(v, low);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on_stack.remove(w);
                        component.push(w.to_string());
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        self.found.push(component);
                    }
                }
            }
        }
        let mut t = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for v in self.edges.keys() {
            if !t.index.contains_key(v.as_str()) {
                t.visit(v);
            }
        }
        t.found
    }
}

/// The module path of a source file under `src`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}::{rest}"),
    }
}

fn parent(m: &str) -> String {
    m.rsplit_once("::")
        .map_or(String::new(), |(p, _)| p.to_string())
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Collects the paths of one file, as absolute module paths of their prefixes.
struct Paths<'a> {
    /// The module the visitor is in (the file's, or an inline module within it).
    module: String,
    /// Every module of the crate.
    modules: &'a BTreeSet<String>,
    /// Absolute paths named.
    named: Vec<String>,
}

impl Paths<'_> {
    /// The absolute form of `segments` as seen from the current module, if it starts at a
    /// module (crate, super, self, or a child module of the current one).
    fn absolute(&self, segments: &[String]) -> Option<String> {
        let first = segments.first()?;
        let (base, rest) = match first.as_str() {
            "crate" => (String::new(), &segments[1..]),
            "self" => (self.module.clone(), &segments[1..]),
            "super" => {
                let mut base = parent(&self.module);
                let mut rest = &segments[1..];
                while rest.first().map(String::as_str) == Some("super") {
                    base = parent(&base);
                    rest = &rest[1..];
                }
                (base, rest)
            }
            child if self.modules.contains(&join(&self.module, child)) => {
                (self.module.clone(), segments)
            }
            _ => return None,
        };
        Some(join(&base, &rest.join("::")))
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, &n.ident.to_string()),
            syn::UseTree::Rename(r) => self.leaf(prefix, &r.ident.to_string()),
            syn::UseTree::Glob(_) => self.leaf(prefix, ""),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &[String], name: &str) {
        let mut segments = prefix.to_vec();
        if !name.is_empty() && name != "self" {
            segments.push(name.to_string());
        }
        if let Some(p) = self.absolute(&segments) {
            self.named.push(p);
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // `mod x;` declares; an inline `mod x { .. }` is a scope of the same file.
        if let Some((_, items)) = &m.content {
            let inner = join(&self.module, &m.ident.to_string());
            let outer = std::mem::replace(&mut self.module, inner);
            for item in items {
                self.visit_item(item);
            }
            self.module = outer;
        }
    }

    /// `pub(super)` and `pub(in path)` name who may see an item, not what it uses.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        // A one-segment path in code is a local name, not a module.
        let local =
            segments.len() < 2 && !matches!(segments[0].as_str(), "crate" | "self" | "super");
        if let Some(p) = self.absolute(&segments).filter(|_| !local) {
            self.named.push(p);
        }
        syn::visit::visit_path(self, path);
    }
}

/// The `.rs` files under `dir`, sorted.
fn sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The import graph of the crate whose sources are under `src` (a library and its binary
/// share the directory: `lib.rs` and `main.rs` are both the root, `src/bin/` is left out).
pub fn graph(src: &Path) -> Result<Graph> {
    let files: Vec<PathBuf> = sources(src)?
        .into_iter()
        .filter(|f| !f.strip_prefix(src).is_ok_and(|r| r.starts_with("bin")))
        .collect();
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut parsed = Vec::new();
    for f in &files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let ast = syn::parse_file(&text).with_context(|| format!("parsing {}", f.display()))?;
        parsed.push((module_of(src, f), ast));
    }
    // What the root re-exports, by name: `crate::Name` is an import of the module it comes from.
    let mut reexports = BTreeMap::new();
    for (m, ast) in &parsed {
        if !m.is_empty() {
            continue;
        }
        let mut v = Paths {
            module: String::new(),
            modules: &modules,
            named: Vec::new(),
        };
        for item in &ast.items {
            if let syn::Item::Use(u) = item {
                v.visit_item_use(u);
            }
        }
        for p in v.named {
            if let Some((from, name)) = p.rsplit_once("::") {
                reexports.insert(name.to_string(), from.to_string());
            }
        }
    }
    let resolve = |p: &str| -> Option<String> {
        if let Some(r) = reexports.get(p).filter(|_| !modules.contains(p)) {
            return Some(r.clone());
        }
        let mut m = p.to_string();
        loop {
            if modules.contains(&m) {
                return Some(m);
            }
            m = m.rsplit_once("::")?.0.to_string();
        }
    };
    let mut graph = Graph::default();
    for (m, ast) in &parsed {
        let mut v = Paths {
            module: m.clone(),
            modules: &modules,
            named: Vec::new(),
        };
        v.visit_file(ast);
        let targets = graph.edges.entry(m.clone()).or_default();
        for p in v.named {
            if let Some(t) = resolve(&p).filter(|t| t != m && !t.is_empty()) {
                targets.insert(t);
            }
        }
    }
    Ok(graph)
}

/// Every workspace crate's source directory, by name: `crates/*/src`, `xtask/src`,
/// `tests/src`.
pub fn crates(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root.join("crates"))? {
        let dir = entry?.path();
        if dir.join("src").is_dir() {
            let name = dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            out.push((name, dir.join("src")));
        }
    }
    for name in ["xtask", "tests"] {
        if root.join(name).join("src").is_dir() {
            out.push((name.to_string(), root.join(name).join("src")));
        }
    }
    out.sort();
    Ok(out)
}

/// The cycles of every workspace crate, as `(crate, cycle)`.
pub fn cycles(root: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let mut out = Vec::new();
    for (name, src) in crates(root)? {
        for cycle in graph(&src)?.cycles() {
            out.push((name.clone(), cycle));
        }
    }
    Ok(out)
}

/// `cargo xtask layers`: each crate's module and edge counts and cycles; with `verbose`, every
/// edge. Returns whether the workspace has no cycle.
pub fn report(root: &Path, verbose: bool) -> Result<bool> {
    let mut clean = true;
    for (name, src) in crates(root)? {
        let g = graph(&src)?;
        let cycles = g.cycles();
        println!(
            "{name}: {} modules, {} imports, {} cycles",
            g.edges.len(),
            g.edge_count(),
            cycles.len()
        );
        for c in &cycles {
            clean = false;
            println!("  cycle of {} modules: {}", c.len(), c.join(", "));
        }
        if verbose {
            for (m, targets) in &g.edges {
                let m = if m.is_empty() { "(root)" } else { m };
                let t: Vec<&str> = targets.iter().map(String::as_str).collect();
                println!("  {m} -> {}", t.join(", "));
            }
        }
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> Graph {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        graph(dir.path()).unwrap()
    }

    /// Every spelling of an import counts (crate, super, self, a child's name, a use group, a
    /// path in an expression, a root re-export); `mod` declarations, doc links, comments, test
    /// modules, visibility (`pub(super)`) and the receiver `self` do not.
    #[test]
    fn imports_are_found_in_every_spelling_and_only_there() {
        let g = crate_of(&[
            (
                "lib.rs",
                "pub mod a; pub mod b; pub mod c; pub mod d; pub use d::Thing;",
            ),
            (
                "a/mod.rs",
                "pub mod child; use child::X; fn f() { let _ = super::b::g(); }",
            ),
            ("a/child.rs", "use super::super::c::{self, Y};"),
            (
                "b.rs",
                "//! [`crate::a`]\n// crate::d\nfn g() -> crate::Thing { todo!() }\n#[cfg(test)]\nmod tests { use crate::a::child; }",
            ),
            (
                "c.rs",
                "pub struct Y; fn h() { self::k(); } fn k() {} impl Y { pub(super) fn m(&self) -> &Self { self } }",
            ),
            ("d.rs", "pub struct Thing; pub fn c() {}"),
        ]);
        let edges = |m: &str| -> Vec<&str> { g.edges[m].iter().map(String::as_str).collect() };
        assert_eq!(edges("a"), ["a::child", "b"]);
        assert_eq!(edges("a::child"), ["c"]);
        assert_eq!(edges("b"), ["d"]);
        assert!(edges("c").is_empty());
        assert!(g.cycles().is_empty());
    }

    /// A cycle through three modules is found, and only it.
    #[test]
    fn a_cycle_is_reported_with_its_modules() {
        let g = crate_of(&[
            ("lib.rs", "mod a; mod b; mod c; mod d;"),
            ("a.rs", "use crate::b::B; pub struct A;"),
            ("b.rs", "use crate::c::C; pub struct B;"),
            ("c.rs", "use crate::a::A; pub struct C;"),
            ("d.rs", "use crate::a::A;"),
        ]);
        assert_eq!(g.cycles(), vec![vec!["a", "b", "c"]]);
    }

    /// The workspace's crates have no module cycle (docs/layout.md): a new one fails here.
    #[test]
    fn the_workspace_has_no_module_cycle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let found = cycles(root).unwrap();
        assert!(
            found.is_empty(),
            "module cycles (run `cargo xtask layers --verbose`): {found:?}"
        );
    }
}
