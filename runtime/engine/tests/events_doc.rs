#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `docs/events.md` against the code, so the reference of event types and
//! their payloads cannot drift: every `kind::` constant is documented (under
//! its own name and value), the doc names no type the code lacks, and every
//! payload built as a literal `json!({…})` where an event is emitted has only
//! fields the doc lists for that type. Payloads built elsewhere (a variable,
//! a type chosen by an `if`) are documented by hand; the check of the set of
//! types still covers them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn engine_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `CONST` → `"type"`, from `pub mod kind` in events.rs.
fn kinds() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(engine_src().join("events.rs")).unwrap();
    let module = text
        .split("pub mod kind {")
        .nth(1)
        .expect("events.rs has `pub mod kind`");
    let module = &module[..module.find("\n}").unwrap()];
    module
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .map(|l| {
            let (name, rest) = l.split_once(':').unwrap();
            let value = rest.split('"').nth(1).unwrap();
            (name.trim().to_string(), value.to_string())
        })
        .collect()
}

/// `"type"` → (`CONST`, payload fields), from the doc's table.
fn documented() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/events.md");
    let text = std::fs::read_to_string(path).unwrap();
    let types = text.split("## Types").nth(1).expect("a `## Types` section");
    let mut doc = BTreeMap::new();
    for line in types.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 4, "{line}");
        let ty = cells[0].trim_matches('`').to_string();
        let name = cells[1].trim_matches('`').to_string();
        let fields = cells[2]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert!(
            doc.insert(ty.clone(), (name, fields)).is_none(),
            "`{ty}` twice"
        );
    }
    doc
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level keys of the object literal that `text` starts inside
/// (just after its `{`).
fn literal_keys(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let (mut depth, mut i, mut keys) = (1usize, 0usize, Vec::new());
    while i < b.len() && depth > 0 {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'"' => {
                let end = i + 1 + text[i + 1..].find('"').unwrap();
                if depth == 1 && text[end + 1..].trim_start().starts_with(':') {
                    keys.push(text[i + 1..end].to_string());
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    keys
}

/// The end of the statement that starts at `text`: its `;`, or where the
/// expression around it closes.
fn statement(text: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < -3 {
                    return &text[..i];
                }
            }
            ';' if depth <= 0 => return &text[..i],
            _ => {}
        }
    }
    text
}

/// (`CONST`, fields, file) for each emit site whose payload is a literal.
fn literal_payloads() -> Vec<(String, Vec<String>, String)> {
    let mut files = Vec::new();
    sources(&engine_src(), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (at, _) in text.match_indices("kind::") {
            let rest = &text[at + "kind::".len()..];
            let len = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            if len == 0 {
                continue;
            }
            let (konst, after) = rest.split_at(len);
            // `(kind::X, serde_json::json!({…}))`: a payload beside its type.
            let beside = after.trim_start().strip_prefix(',').map(str::trim_start);
            let payload = match beside.and_then(|b| b.strip_prefix("serde_json::json!({")) {
                Some(p) => Some(p),
                None => statement(after).find(".payload(").and_then(|p| {
                    let call = after[p + ".payload(".len()..].trim_start();
                    call.strip_prefix("serde_json::json!({")
                        .or_else(|| call.strip_prefix("json!({"))
                }),
            };
            if let Some(p) = payload {
                found.push((konst.to_string(), literal_keys(p), name.clone()));
            }
        }
    }
    found
}

#[test]
fn every_event_type_is_documented_and_the_doc_names_only_real_ones() {
    let kinds = kinds();
    let doc = documented();
    assert!(kinds.len() > 40, "{kinds:?}");
    for (name, ty) in &kinds {
        match doc.get(ty) {
            Some((documented_name, _)) => assert_eq!(
                documented_name, name,
                "docs/events.md gives `{ty}` the constant `{documented_name}`, the code `{name}`"
            ),
            None => panic!("docs/events.md lacks `{ty}` (kind::{name})"),
        }
    }
    let real: BTreeSet<&String> = kinds.values().collect();
    for ty in doc.keys() {
        assert!(
            real.contains(ty),
            "docs/events.md names `{ty}`, which no `kind::` constant is"
        );
    }
}

#[test]
fn every_literal_payload_field_is_documented() {
    let kinds = kinds();
    let doc = documented();
    let payloads = literal_payloads();
    // The extraction itself must keep working: most emit sites build their
    // payload as a literal.
    assert!(payloads.len() > 40, "{payloads:?}");
    let mut missing = Vec::new();
    for (konst, fields, file) in &payloads {
        let ty = kinds
            .get(konst)
            .unwrap_or_else(|| panic!("{file}: kind::{konst} is not a constant of events.rs"));
        let Some((_, documented)) = doc.get(ty) else {
            missing.push(format!("`{ty}`: the whole type ({file})"));
            continue;
        };
        for f in fields {
            if !documented.contains(f) {
                missing.push(format!("`{ty}`: `{f}` ({file})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "payload fields docs/events.md does not list:\n{}",
        missing.join("\n")
    );
}
