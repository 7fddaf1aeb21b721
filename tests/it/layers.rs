//! The house's one-way rule: no module imports from a layer above its own, and no import cycle
//! between modules. docs/dev/architecture.md ("Layers") states the layers in words; `LAYERS` below is
//! the same table, checked against every `crate::…` path in src/ (uses, grouped uses, paths in
//! expressions and types; comments and string literals are skipped).
//!
//! A module is named by its path under `crate` (`rules::values`, `checklist`); the layer of a
//! path is that of the longest entry of `LAYERS` it starts with. A path that names a re-export
//! counts where it is written (`crate::rules::RuleId` is an import of `rules`, whatever the item
//! is re-exported from): imports say where names live.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom (0) to top. A module may import its own layer and those below.
const LAYERS: &[(&str, u8)] = &[
    // 0 text: bytes, sources, spans, YAML as go-yaml reads it; paths and dates.
    ("yaml", 0),
    ("spill", 0),
    ("paths", 0),
    ("date", 0),
    // 1 facts and the rule catalogue: the cGPU/ACK facts; rule ids, severities, sources
    //   (catalogue::sources; declared, never printed here: output::rules prints them).
    ("cgpu", 1),
    ("catalogue", 1),
    // 2 model: Kubernetes objects (manifest, the Node view in manifest::node), diagnostics.
    ("manifest", 2),
    ("diag", 2),
    // 3 readers and printers: Helm's reading of values, input discovery, the kubectl reader,
    //   edit splicing, the output formats.
    ("helm", 3),
    ("check", 3),
    ("cluster", 3),
    ("edit", 3),
    ("output", 3),
    // 4 the rules.
    ("rules", 4),
    // 5 the pipeline: check_path, its settings, suppressions.
    ("lint", 5),
    ("suppress", 5),
    ("baseline", 5),
    // 6 workspace and engines: configuration resolved into settings; fix, set, generate, the
    //   post-render engine, the reboot checklist.
    ("config", 6),
    ("add_ignore", 6),
    ("fix", 6),
    ("set", 6),
    ("generate", 6),
    ("postrender", 6),
    ("checklist", 6),
    ("admission", 6),
    ("whatif", 6),
    ("status", 6),
    ("rollout", 6),
    // 7 front ends: flags (clap), commands, the language server.
    ("cli", 7),
    ("app", 7),
    ("server", 7),
    // 8 the process.
    ("main", 8),
];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module path of a source file: src/rules/mod.rs → `rules`, src/lib.rs → ``.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn layer_entry(path: &[String]) -> Option<(&'static str, u8)> {
    let joined = path.join("::");
    LAYERS
        .iter()
        .filter(|(m, _)| joined == *m || joined.starts_with(&format!("{m}::")))
        .max_by_key(|(m, _)| m.len())
        .copied()
}

/// Rust source with comments, string and char literals blanked out (lengths kept).
fn code_only(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
            }
        } else if b[i] == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_byte(b, i) {
            // raw string r"…", r#"…"#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(b.len());
            out.extend(
                b[i..end]
                    .iter()
                    .map(|&c| if c == b'\n' { b'\n' } else { b' ' }),
            );
            i = end;
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(if b[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' {
            // a char literal ('x', '\n', '\u{..}') or a lifetime ('a)
            let lit = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(3)
            } else {
                // a multi-byte char literal
                let rest = &s[i + 1..];
                let ch = rest.chars().next().map(char::len_utf8).unwrap_or(1);
                (rest.as_bytes().get(ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match lit {
                Some(n) => {
                    out.extend(std::iter::repeat_n(b' ', n));
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Every module path that `crate::…` and `super::…` paths in `code` (of module `module`) name,
/// as full paths from the crate root (item names included: the longest-prefix match of
/// `LAYERS` ignores them).
fn paths_in(code: &str, file_module: &[String]) -> Vec<Vec<String>> {
    let children = child_modules(code);
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    // Inline modules (`mod tests { use super::*; }`): their names and the brace depth inside.
    let mut module = file_module.to_vec();
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    while i < b.len() {
        let rest = &code[i..];
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                if inline.last() == Some(&depth) {
                    inline.pop();
                    module.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        if rest.starts_with("mod ") && !ident_byte(b, i) {
            let name: String = rest[4..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = rest[4..].trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                module.push(name);
                inline.push(depth + 1);
            }
        }
        let bare = (!ident_byte(b, i) && (i < 2 || &code[i - 2..i] != "::"))
            .then(|| {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                (code[i + name.len()..].starts_with("::")
                    && (name == "self" || children.contains(&name)))
                .then_some(name)
            })
            .flatten();
        let start = if rest.starts_with("crate::") && !ident_byte(b, i) {
            Some((Vec::new(), i + "crate::".len()))
        } else if let Some(name) = bare {
            // `child::x` in the file that declares `mod child;`, and `self::x`: paths from here.
            let at = i + name.len() + 2;
            if name == "self" {
                Some((module.clone(), at))
            } else {
                let mut base = module.clone();
                base.push(name);
                Some((base, at))
            }
        } else if rest.starts_with("super::")
            && !ident_byte(b, i)
            && i >= 2
            && &code[i - 2..i] != "::"
        {
            // super::super::x
            let mut base = module.clone();
            let mut j = i;
            while code[j..].starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
            Some((base, j))
        } else {
            None
        };
        match start {
            Some((prefix, at)) => {
                let (trees, end) = tree(code, at, prefix);
                // Unit tests (`mod tests`, a tests.rs) may use any layer to build their cases.
                if !module.iter().any(|m| m == "tests") {
                    found.extend(trees);
                }
                i = end.max(i + 1);
            }
            None => i += 1,
        }
    }
    found
}

/// The modules a file declares in files of their own (`mod name;`, `pub(crate) mod name;`).
fn child_modules(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("mod ") {
        let i = from + k;
        from = i + 4;
        if ident_byte(b, i) {
            continue;
        }
        let rest = code[i + 4..].trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && rest[name.len()..].trim_start().starts_with(';') {
            out.push(name);
        }
    }
    out
}

/// Parse `a::b::{c, d::e}` starting at `at`; returns the expanded paths and where it ended.
fn tree(code: &str, mut at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let skip_ws = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let mut path = prefix;
    loop {
        at = skip_ws(at);
        if b.get(at) == Some(&b'{') {
            let mut out = Vec::new();
            at += 1;
            loop {
                at = skip_ws(at);
                match b.get(at) {
                    Some(b'}') => return (out, at + 1),
                    Some(b',') => at += 1,
                    None => return (out, at),
                    _ => {
                        let (sub, end) = tree(code, at, path.clone());
                        out.extend(sub);
                        if end == at {
                            at += 1;
                        } else {
                            at = end;
                        }
                    }
                }
            }
        }
        let start = at;
        while at < b.len() && (b[at].is_ascii_alphanumeric() || b[at] == b'_') {
            at += 1;
        }
        if at == start {
            // `self`, `*` or nothing: the path so far
            if b.get(at) == Some(&b'*') {
                at += 1;
            }
            return (vec![path], at);
        }
        let ident = &code[start..at];
        if ident != "self" {
            path.push(ident.to_string());
        }
        if code[at..].starts_with("::") {
            at += 2;
            continue;
        }
        return (vec![path], at);
    }
}

struct Import {
    from: &'static str,
    to: &'static str,
    file: String,
}

/// Every source file under src/: its path, its module path, the LAYERS entry it belongs to
/// ("lib" for lib.rs) and its code without comments and strings.
fn source_files() -> Vec<(PathBuf, Vec<String>, &'static str, String)> {
    let mut out = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let module = module_of(&p);
                let Some((from, _)) =
                    layer_entry(&module).or_else(|| (module.is_empty()).then_some(("lib", 0)))
                else {
                    panic!(
                        "{}: no layer in LAYERS for module {:?}",
                        p.display(),
                        module
                    );
                };
                let code = code_only(&std::fs::read_to_string(&p).unwrap());
                out.push((p, module, from, code));
            }
        }
    }
    out
}

fn imports() -> Vec<Import> {
    let mut out = Vec::new();
    for (p, module, from, code) in source_files() {
        for path in paths_in(&code, &module) {
            if let Some((to, _)) = layer_entry(&path)
                && to != from
            {
                out.push(Import {
                    from,
                    to,
                    file: p.strip_prefix(src()).unwrap().display().to_string(),
                });
            }
        }
    }
    out
}

fn layer(m: &str) -> u8 {
    LAYERS.iter().find(|(n, _)| *n == m).map_or(0, |(_, l)| *l)
}

/// What the house still breaks, one line per violation: `up: FROM -> TO`, `cycle: A ⇄ B …`
/// (sorted), `file-cycle: FOLDER/{FILE, …}` (the files of one folder that import each other in
/// a circle; `mod` is the folder's own file), `knows: FILE WHAT`. The list must match exactly: a
/// new violation fails, and so does an entry that no longer occurs (delete it when you fix it).
/// The goal is an empty list.
const KNOWN: &[&str] = &[];

fn known(kind: &str) -> BTreeSet<String> {
    KNOWN
        .iter()
        .filter(|k| k.starts_with(&format!("{kind}: ")))
        .map(|k| k.to_string())
        .collect()
}

fn compare(kind: &str, found: BTreeMap<String, String>) {
    let known = known(kind);
    let new: Vec<String> = found
        .iter()
        .filter(|(k, _)| !known.contains(*k))
        .map(|(k, detail)| format!("{k}{detail}"))
        .collect();
    let gone: Vec<&String> = known.iter().filter(|k| !found.contains_key(*k)).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "new violations (fix them; the layers are in docs/dev/architecture.md):\n{}\n\
         fixed, so delete them from KNOWN in tests/it/layers.rs:\n{}",
        new.join("\n"),
        gone.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let mut up = BTreeMap::<String, BTreeSet<String>>::new();
    for i in imports().into_iter().filter(|i| i.from != "lib") {
        if layer(i.to) > layer(i.from) {
            up.entry(format!("up: {} -> {}", i.from, i.to))
                .or_default()
                .insert(i.file);
        }
    }
    compare(
        "up",
        up.into_iter()
            .map(|(k, files)| {
                let files: Vec<String> = files.into_iter().collect();
                (k, format!("   (in {})", files.join(", ")))
            })
            .collect(),
    );
}

/// The strongly connected components of more than one node (Tarjan), each sorted.
fn cycles_of(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        sccs: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        for w in t.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            t.sccs.push(comp);
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        sccs: Vec::new(),
    };
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(k, v)| std::iter::once(k.as_str()).chain(v.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.sccs
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|mut c| {
            c.sort();
            c
        })
        .collect()
}

#[test]
fn no_import_cycle_between_modules() {
    let mut edges = BTreeMap::<String, BTreeSet<String>>::new();
    for i in imports().into_iter().filter(|i| i.from != "lib") {
        edges
            .entry(i.from.to_string())
            .or_default()
            .insert(i.to.to_string());
    }
    let cycles = cycles_of(&edges)
        .into_iter()
        .map(|c| (format!("cycle: {}", c.join(" ⇄ ")), String::new()))
        .collect();
    compare("cycle", cycles);
}

/// A child file may import these items of its folder's mod.rs, which calls each child (the
/// dispatch shape: `app/mod.rs` runs `check::run`, and `app/check.rs` returns its `Exit`).
const DISPATCH: &[(&str, &[&str])] = &[("app", &["AppError", "Exit", "Streams"])];

/// The imports between the files of each folder: for a folder module P (src/P/ or src/ itself),
/// the nodes are P's own file and each direct child of P (a deeper file counts as the child it
/// is under), and an edge is any path one names in the other, less the dispatch shape. The
/// items each edge names are kept for the message.
fn file_edges() -> BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>> {
    let files = source_files();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(_, m, _, _)| m.clone()).collect();
    let mut out = BTreeMap::<String, BTreeMap<String, BTreeMap<String, BTreeSet<String>>>>::new();
    for (_, from, _, code) in &files {
        for path in paths_in(code, from) {
            // The file the path names: the longest module path of a file it starts with.
            let Some(to) = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let item = path[to.len()..].first().cloned().unwrap_or_default();
            // The deepest folder both files are in, and the node of each inside it.
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            let folder = &from[..common];
            let node = |m: &Vec<String>| -> String {
                match m.get(common) {
                    Some(child) => child.clone(),
                    None if folder.is_empty() => "lib".to_string(),
                    None => "mod".to_string(),
                }
            };
            let (a, b) = (node(from), node(&to));
            if a == b {
                continue;
            }
            let folder = folder.join("::");
            if b == "mod"
                && DISPATCH
                    .iter()
                    .any(|(f, items)| *f == folder && items.contains(&item.as_str()))
            {
                continue;
            }
            out.entry(folder)
                .or_default()
                .entry(a)
                .or_default()
                .entry(b)
                .or_default()
                .insert(item);
        }
    }
    out
}

#[test]
fn no_import_cycle_between_files_of_a_folder() {
    let mut found = BTreeMap::new();
    for (folder, edges) in file_edges() {
        let plain: BTreeMap<String, BTreeSet<String>> = edges
            .iter()
            .map(|(a, to)| (a.clone(), to.keys().cloned().collect()))
            .collect();
        for cycle in cycles_of(&plain) {
            let detail: Vec<String> = cycle
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|(b, _)| cycle.contains(b))
                        .map(move |(b, items)| {
                            let items: Vec<&str> = items.iter().map(String::as_str).collect();
                            format!("{a} -> {b} ({})", items.join(", "))
                        })
                })
                .collect();
            let shown = if folder.is_empty() { "src" } else { &folder };
            found.insert(
                format!("file-cycle: {shown}/{{{}}}", cycle.join(", ")),
                format!("   ({})", detail.join("; ")),
            );
        }
    }
    compare("file-cycle", found);
}

/// Each entry of LAYERS is a folder or a file of its own, not one inside another's folder: a
/// layer that lived inside another's folder would make the folders say one thing and the layer
/// table another (the catalogue on layer 1 inside src/rules/ on layer 4).
#[test]
fn every_layer_entry_is_a_folder_or_file_of_its_own() {
    let nested: Vec<String> = LAYERS
        .iter()
        .flat_map(|(a, _)| {
            LAYERS
                .iter()
                .filter(move |(b, _)| b.starts_with(&format!("{a}::")))
                .map(move |(b, _)| format!("{b} is inside {a}"))
        })
        .collect();
    assert!(nested.is_empty(), "{}", nested.join("\n"));
}

#[test]
fn the_scanner_sees_grouped_and_nested_paths() {
    let code = code_only(
        "use crate::{yaml::{self, Source}, catalogue::RuleId};\n\
         // crate::app::nothing\n\
         let s = \"crate::cli::nothing\";\n\
         fn f() -> crate::diag::Severity { super::x::y() }\n\
         mod inner { use super::*; fn g() { super::z(); } }\n\
         mod tests { use crate::app::x; }\n\
         fn h() { super::w(); }",
    );
    let m = vec!["checklist".to_string(), "shell".to_string()];
    let got: Vec<String> = paths_in(&code, &m).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        [
            "yaml",
            "yaml::Source",
            "catalogue::RuleId",
            "diag::Severity",
            "checklist::x::y",
            "checklist::shell",
            "checklist::shell::z",
            "checklist::w"
        ]
    );
    assert_eq!(
        layer_entry(&["catalogue".into(), "RuleId".into()])
            .unwrap()
            .0,
        "catalogue"
    );
    assert_eq!(
        layer_entry(&["rules".into(), "RuleId".into()]).unwrap().0,
        "rules"
    );
}

#[test]
fn the_scanner_sees_a_parents_child_paths_and_self() {
    let code = code_only(
        "mod a;\npub(crate) mod b;\nmod c { fn f() {} }\n\
         fn f() { a::x(); self::d::y(); b::z::w(); c::f(); serde_json::a::n(); x::a::m(); }\n\
         mod tests { fn t() { a::q(); } }",
    );
    let m = vec!["app".to_string()];
    let got: Vec<String> = paths_in(&code, &m).iter().map(|p| p.join("::")).collect();
    // `c` is inline (not a file), `serde_json::a` and `x::a` are not this file's child `a`.
    assert_eq!(got, ["app::a::x", "app::d::y", "app::b::z::w"]);
}

/// What only some modules may know: a crate or a std path, and the modules (LAYERS entries)
/// allowed to name it.
const KNOWS: &[(&str, &[&str])] = &[
    ("clap::", &["cli", "app", "main"]),
    ("lsp_server::", &["server"]),
    ("lsp_types::", &["server"]),
    ("process::exit", &["main"]),
    ("env::args", &["cli", "main"]),
];

#[test]
fn only_the_front_ends_know_clap_lsp_and_the_process() {
    let mut bad = BTreeMap::new();
    for (p, _, from, code) in source_files() {
        for (what, allowed) in KNOWS {
            if code.contains(what) && !allowed.contains(&from) {
                bad.insert(
                    format!("knows: {} {what}", p.strip_prefix(src()).unwrap().display()),
                    format!("   (only {} may)", allowed.join(", ")),
                );
            }
        }
    }
    compare("knows", bad);
}

/// Files stay under this many lines (docs/dev/architecture.md); a longer one
/// splits along its seams.
const MAX_LINES: usize = 900;

/// The one exception, with its reason in docs/dev/architecture.md: the port of go-yaml's `scannerc.go`, one
/// file per go-yaml file, function by function.
const LONG_BY_NAME: &[&str] = &["yaml/goyaml/scanner.rs"];

#[test]
fn no_file_is_over_900_lines_but_the_named_port() {
    let mut long = BTreeMap::new();
    for (p, _, _, _) in source_files() {
        let rel = p.strip_prefix(src()).unwrap().display().to_string();
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        if lines > MAX_LINES && !LONG_BY_NAME.contains(&rel.as_str()) {
            long.insert(format!("long: {rel}"), format!("   ({lines} lines)"));
        }
    }
    compare("long", long);
}

/// Comments give their reason, not a pointer to a tracker or to a spec the repository does not
/// hold: "issue 38" or "spec §5" says nothing to the next reader, and the history is
/// CHANGELOG.md's.
#[test]
fn no_comment_in_src_or_tests_cites_an_issue_or_a_spec_section() {
    let mut found = Vec::new();
    let mut stack = vec![src(), src().with_file_name("tests")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                let Some(at) = line.find("//") else { continue };
                let comment = line[at..].to_ascii_lowercase();
                // This test's own doc names the form it refuses, quoted.
                if comment.contains("\"issue 38\"") {
                    continue;
                }
                let cites_issue = comment.match_indices("issue ").any(|(j, w)| {
                    comment[j + w.len()..]
                        .trim_start_matches('#')
                        .starts_with(|c: char| c.is_ascii_digit())
                });
                if cites_issue || comment.contains('§') || comment.contains("domain.md") {
                    found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The policy range is written once, in `src/cgpu.rs` (`POLICIES`, `MAX_POLICY`,
/// `POLICY_RANGE_TEXT`); a second spelling is a second place to forget when the range changes.
/// Flags, in code outside that file, a bound of 5 in a range (`0..=5`, `0.0..=5.0`) or a
/// comparison (`<= 5`, `> 5`), and anywhere in a file the message text "0–5".
#[test]
fn the_policy_range_is_written_only_in_cgpu() {
    let home = src().join("cgpu.rs");
    let mut found = Vec::new();
    for (path, _, _, code) in source_files() {
        if path == home {
            continue;
        }
        let b = code.as_bytes();
        for op in ["..=", "<=", ">"] {
            for (at, _) in code.match_indices(op) {
                // `=>` and `->` are arms and return types, `>=`/`>>` other operators.
                if op == ">" && (at == 0 || matches!(b[at - 1], b'=' | b'-' | b'>' | b'<')) {
                    continue;
                }
                let rest = code[at + op.len()..].trim_start_matches(' ');
                let number: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_')
                    .collect();
                if number == "5" || number == "5.0" || number == "5_u8" || number == "5u8" {
                    let line = code[..at].matches('\n').count() + 1;
                    found.push(format!("{}:{line}: `{op}{number}`", path.display()));
                }
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("0–5") {
            if !text[..at].ends_with(|c: char| c.is_ascii_digit()) {
                let line = text[..at].matches('\n').count() + 1;
                found.push(format!("{}:{line}: \"0–5\"", path.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the policy range outside src/cgpu.rs (use cgpu::POLICIES, MAX_POLICY, POLICY_RANGE_TEXT or policy_range_literal!):\n{}",
        found.join("\n")
    );
}

/// The layer table of docs/dev/architecture.md names the modules of `LAYERS`, each in its layer:
/// the page is what a contributor reads, this test what holds the code, so they must not drift.
#[test]
fn the_architecture_page_states_the_same_layers() {
    let page = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/dev/architecture.md"),
    )
    .unwrap();
    let mut stated = BTreeSet::new();
    for line in page.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells
            .get(1)
            .and_then(|c| c.split(' ').next())
            .and_then(|n| n.parse::<u8>().ok())
        else {
            continue;
        };
        // The modules are the code spans of the second column outside parentheses.
        let mut depth = 0;
        let mut outside = String::new();
        for ch in cells[2].chars() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => outside.push(ch),
                _ => {}
            }
        }
        for (i, span) in outside.split('`').enumerate() {
            if i % 2 == 1 {
                stated.insert((span.trim_end_matches('/').to_string(), layer));
            }
        }
    }
    let held: BTreeSet<(String, u8)> = LAYERS.iter().map(|(m, l)| (m.to_string(), *l)).collect();
    assert_eq!(
        stated, held,
        "docs/dev/architecture.md's layer table and LAYERS differ"
    );
}
