//! No import circles: no two files of `pi-runtime` or `pi-macros` use each other's items,
//! directly or around a longer circle. The one pair allowed is the agent's builder and its
//! handle (`Agent::builder` and `AgentBuilder::build`). A module using its own submodules is
//! no circle: they are its parts (a `mod.rs` over the files of its directory).
//!
//! A file uses another when one of its `use` items, or a `crate::`/`super::` path in its
//! code, names an item defined there; a re-export (`pub use`) is followed to the file that
//! defines the item, and is itself no use. Test modules (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Item, UseTree, Visibility};

/// A module's path from the crate root (`["agent", "machine"]`).
type ModulePath = Vec<String>;

/// What the test reads of one crate.
#[derive(Default)]
struct Crate {
    /// Every module, file or inline, with the file it is written in.
    modules: BTreeMap<ModulePath, usize>,
    /// Each file's path and module.
    files: Vec<(PathBuf, ModulePath)>,
    /// The re-exports of each module: the name and the path it stands for.
    reexports: BTreeMap<ModulePath, BTreeMap<String, Vec<String>>>,
    /// Every path a file uses, with the module it is written in.
    uses: Vec<(usize, ModulePath, Vec<String>)>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut krate = Crate::default();
        let mut paths = Vec::new();
        collect_rs(src, &mut paths);
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("a source file");
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            let module = module_of(src, &path);
            let index = krate.files.len();
            krate.files.push((path, module.clone()));
            krate.modules.insert(module.clone(), index);
            krate.items(index, &module, &file.items);
        }
        krate
    }

    fn items(&mut self, file: usize, module: &ModulePath, items: &[Item]) {
        for item in items {
            match item {
                Item::Mod(inner) if is_test(&inner.attrs) => {}
                Item::Mod(inner) => {
                    if let Some((_, content)) = &inner.content {
                        let mut path = module.clone();
                        path.push(inner.ident.to_string());
                        self.modules.insert(path.clone(), file);
                        self.items(file, &path, content);
                    }
                }
                Item::Use(used) => {
                    let mut leaves = Vec::new();
                    flatten(&used.tree, &mut Vec::new(), &mut leaves);
                    for (path, name) in leaves {
                        if matches!(used.vis, Visibility::Inherited) {
                            self.uses.push((file, module.clone(), path));
                        } else {
                            let exports = self.reexports.entry(module.clone()).or_default();
                            exports.insert(name, path);
                        }
                    }
                }
                item => {
                    for path in code_paths(item.to_token_stream()) {
                        self.uses.push((file, module.clone(), path));
                    }
                }
            }
        }
    }

    /// `path`, written in `module`, from the crate root; `None` for another crate's.
    fn absolute(&self, module: &ModulePath, path: &[String]) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut base = module.clone();
        match first.as_str() {
            "crate" => return Some(rest.to_vec()),
            "self" => {}
            "super" => {
                base.pop();
                let mut rest = rest;
                while let Some(("super", further)) =
                    rest.split_first().map(|(s, r)| (s.as_str(), r))
                {
                    base.pop();
                    rest = further;
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            child => {
                let mut child_path = base.clone();
                child_path.push(child.to_owned());
                if !self.modules.contains_key(&child_path) {
                    return None;
                }
                base.push(child.to_owned());
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what `path` (from the crate root) names.
    fn defining_file(&self, path: &[String], hops: usize) -> Option<usize> {
        let mut module = ModulePath::new();
        for segment in path {
            let mut deeper = module.clone();
            deeper.push(segment.clone());
            if self.modules.contains_key(&deeper) {
                module = deeper;
                continue;
            }
            let exported = self.reexports.get(&module).and_then(|e| e.get(segment));
            if let Some(target) = exported
                && hops < 8
                && let Some(target) = self.absolute(&module, target)
                && let Some(file) = self.defining_file(&target, hops + 1)
            {
                return Some(file);
            }
            break;
        }
        self.modules.get(&module).copied()
    }

    /// Each file's uses of other files, but not of its own submodules.
    fn edges(&self) -> Vec<BTreeSet<usize>> {
        let mut edges = vec![BTreeSet::new(); self.files.len()];
        for (file, module, path) in &self.uses {
            let Some(target) =
                (self.absolute(module, path)).and_then(|path| self.defining_file(&path, 0))
            else {
                continue;
            };
            let own = &self.files[*file].1;
            if target != *file && !self.files[target].1.starts_with(own) {
                edges[*file].insert(target);
            }
        }
        edges
    }

    /// The circles: each set of two or more files that reach each other, by path from `src`.
    fn circles(&self, src: &Path) -> Vec<Vec<String>> {
        let edges = self.edges();
        let reach: Vec<BTreeSet<usize>> = (0..edges.len()).map(|f| reachable(&edges, f)).collect();
        let mut circles = BTreeSet::new();
        for file in 0..edges.len() {
            let circle: Vec<String> = (0..edges.len())
                .filter(|other| reach[file].contains(other) && reach[*other].contains(&file))
                .map(|other| {
                    let path = self.files[other].0.strip_prefix(src).expect("under src");
                    path.to_string_lossy().replace('\\', "/")
                })
                .collect();
            if circle.len() > 1 {
                circles.insert(circle);
            }
        }
        circles.into_iter().collect()
    }
}

fn reachable(edges: &[BTreeSet<usize>], from: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut next = vec![from];
    while let Some(file) = next.pop() {
        for &target in &edges[file] {
            if seen.insert(target) {
                next.push(target);
            }
        }
    }
    seen
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> ModulePath {
    let relative = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut path: ModulePath = (relative.components())
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        path.pop();
    }
    path
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.meta.to_token_stream().to_string() == "cfg (test)"
    })
}

/// The leaves of a `use` tree: each path and the name it brings in (`*` for a glob).
fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => {
            let mut path = prefix.clone();
            let ident = name.ident.to_string();
            // `use x::{self}` names the module `x` itself.
            if ident != "self" {
                path.push(ident);
            }
            let name = path.last().cloned().unwrap_or_default();
            out.push((path, name));
        }
        UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            path.push(rename.ident.to_string());
            out.push((path, rename.rename.to_string()));
        }
        UseTree::Glob(_) => {
            let mut path = prefix.clone();
            path.push("*".to_owned());
            out.push((path, "*".to_owned()));
        }
        UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, out);
            }
        }
    }
}

/// The `crate::…` and `super::…` paths written in `tokens`.
fn code_paths(tokens: TokenStream) -> Vec<Vec<String>> {
    let mut flat = Vec::new();
    flatten_tokens(tokens, &mut flat);
    let mut paths = Vec::new();
    let mut at = 0;
    while at < flat.len() {
        let starts = matches!(&flat[at], Token::Ident(name) if name == "crate" || name == "super");
        if !starts {
            at += 1;
            continue;
        }
        let mut path = Vec::new();
        let mut next = at;
        while let Some(Token::Ident(name)) = flat.get(next) {
            path.push(name.clone());
            if !matches!(flat.get(next + 1), Some(Token::PathSep)) {
                break;
            }
            next += 2;
        }
        at = next + 1;
        if path.len() > 1 {
            paths.push(path);
        }
    }
    paths
}

enum Token {
    Ident(String),
    PathSep,
    Other,
}

fn flatten_tokens(tokens: TokenStream, out: &mut Vec<Token>) {
    let mut colon = false;
    for tree in tokens {
        let was_colon = std::mem::take(&mut colon);
        match tree {
            TokenTree::Group(group) => {
                out.push(Token::Other);
                flatten_tokens(group.stream(), out);
                out.push(Token::Other);
            }
            TokenTree::Ident(ident) => out.push(Token::Ident(ident.to_string())),
            TokenTree::Punct(punct) if punct.as_char() == ':' => {
                if was_colon {
                    out.pop();
                    out.push(Token::PathSep);
                } else {
                    colon = true;
                    out.push(Token::Other);
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => out.push(Token::Other),
        }
    }
}

fn circles_of(krate: &str) -> Vec<Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    Crate::read(&src).circles(&src)
}

#[test]
fn pi_runtime_has_no_import_circle_but_the_builder_and_its_handle() {
    assert_eq!(
        circles_of("pi-runtime"),
        [["agent/builder.rs", "agent/handle/mod.rs"]]
    );
}

#[test]
fn pi_macros_has_no_import_circle() {
    assert_eq!(circles_of("pi-macros"), Vec::<Vec<String>>::new());
}

#[test]
fn a_circle_through_a_use_a_path_or_a_reexport_is_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("a file");
    };
    write("lib.rs", "mod a; mod b; mod c; pub use c::C;");
    write("a.rs", "use crate::b::B; pub struct A;");
    write("b.rs", "pub struct B; fn f(_: crate::C) {}");
    write("c/mod.rs", "mod inner; pub use inner::C;");
    write(
        "c/inner.rs",
        "pub struct C(super::super::a::A); #[cfg(test)] mod tests { use crate::b::B; }",
    );
    let found = Crate::read(dir.path()).circles(dir.path());
    assert_eq!(found, [["a.rs", "b.rs", "c/inner.rs"]]);
}
