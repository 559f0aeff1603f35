//! The API's OpenAPI 3.1 document (`openapi.json`, written by hand beside
//! this crate's manifest and served as is at `/openapi.json`), and the small
//! schema check the tests use to hold the server to it.
//!
//! Hand-written because the engine's types are serialised as they are and a
//! derive-based generator would pull a macro stack into every build for one
//! document. It cannot drift unnoticed: a test compares its paths with the
//! routes the router registered, probes every documented operation against
//! the router, and the HTTP tests check each JSON answer against the schema
//! documented for its path and status.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// The document, as served.
pub const DOCUMENT: &str = include_str!("../openapi.json");

pub(crate) async fn serve() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT).into_response()
}

/// The document, parsed.
pub fn document() -> Result<Value, serde_json::Error> {
    serde_json::from_str(DOCUMENT)
}

/// Every (method, path) the document describes, methods lowercase.
pub fn operations(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            if let Some(item) = item.as_object() {
                for method in item.keys() {
                    if ["get", "post", "put", "delete", "patch", "head"].contains(&method.as_str())
                    {
                        out.push((method.clone(), path.clone()));
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// Checks a JSON answer against the schema documented for `method path`
/// (the path as templated in the document) and `status`.
pub fn check_response(
    doc: &Value,
    method: &str,
    path: &str,
    status: u16,
    body: &Value,
) -> Result<(), String> {
    let op = &doc["paths"][path][method];
    if op.is_null() {
        return Err(format!("{method} {path} is not documented"));
    }
    let mut resp = &op["responses"][status.to_string()];
    if resp.is_null() {
        return Err(format!("{method} {path} does not document status {status}"));
    }
    if let Some(r) = resp["$ref"].as_str() {
        resp = resolve(doc, r)?;
    }
    let schema = &resp["content"]["application/json"]["schema"];
    if schema.is_null() {
        return Err(format!("{method} {path} {status} documents no JSON body"));
    }
    check(doc, schema, body, "$")
}

fn resolve<'a>(doc: &'a Value, r: &str) -> Result<&'a Value, String> {
    let p = r
        .strip_prefix('#')
        .ok_or_else(|| format!("external $ref {r}"))?;
    let v = doc.pointer(p).ok_or_else(|| format!("dangling $ref {r}"))?;
    Ok(v)
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// A subset of JSON Schema: `$ref`, `type` (one or several), `enum`,
/// `properties`, `required`, `additionalProperties: false`, `items`,
/// `prefixItems`, `oneOf`. Enough for this document; anything it does not
/// know it does not check.
pub fn check(doc: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema["$ref"].as_str() {
        return check(doc, resolve(doc, r)?, v, at);
    }
    if let Some(options) = schema["oneOf"].as_array() {
        let matching = options
            .iter()
            .filter(|o| check(doc, o, v, at).is_ok())
            .count();
        if matching != 1 {
            return Err(format!(
                "{at}: {matching} of oneOf's {} schemas match {v}",
                options.len()
            ));
        }
    }
    match &schema["type"] {
        Value::String(t) if !type_matches(t, v) => {
            return Err(format!("{at}: expected {t}, got {v}"));
        }
        Value::Array(ts)
            if !ts
                .iter()
                .any(|t| t.as_str().is_some_and(|t| type_matches(t, v))) =>
        {
            return Err(format!("{at}: expected one of {ts:?}, got {v}"));
        }
        _ => {}
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        return Err(format!("{at}: {v} is not one of {allowed:?}"));
    }
    if let Some(o) = v.as_object() {
        let props = schema["properties"].as_object();
        if let Some(req) = schema["required"].as_array() {
            for r in req.iter().filter_map(|r| r.as_str()) {
                if !o.contains_key(r) {
                    return Err(format!("{at}: missing required `{r}`"));
                }
            }
        }
        for (k, val) in o {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(doc, s, val, &format!("{at}.{k}"))?,
                None if schema["additionalProperties"] == Value::Bool(false) => {
                    return Err(format!("{at}: `{k}` is not documented"));
                }
                None => {}
            }
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(prefix) = schema["prefixItems"].as_array() {
            for (i, (s, item)) in prefix.iter().zip(items).enumerate() {
                check(doc, s, item, &format!("{at}[{i}]"))?;
            }
        } else if !schema["items"].is_null() {
            for (i, item) in items.iter().enumerate() {
                check(doc, &schema["items"], item, &format!("{at}[{i}]"))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeSet;
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use berth_engine::{Actor, Engine, StateDir};
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;
    use crate::auth::Access;

    fn collect_refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    if k == "$ref" {
                        out.push(x.as_str().unwrap_or_default().to_string());
                    } else {
                        collect_refs(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn every_route_is_documented_and_every_documented_path_is_a_route() {
        let doc = document().unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        let documented: BTreeSet<(String, String)> = operations(&doc).into_iter().collect();
        let routed: BTreeSet<(String, String)> = crate::routes()
            .into_iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty(),
            "routes missing from openapi.json: {undocumented:?}"
        );
        assert!(
            unrouted.is_empty(),
            "documented but not routed: {unrouted:?}"
        );
    }

    #[test]
    fn the_document_is_well_formed() {
        let doc = document().unwrap();
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(refs.len() > 50);
        for r in &refs {
            assert!(resolve(&doc, r).is_ok(), "dangling {r}");
        }
        let mut ids = BTreeSet::new();
        for (method, path) in operations(&doc) {
            let item = &doc["paths"][&path];
            let op = &item[&method];
            let id = op["operationId"].as_str().unwrap_or_default().to_string();
            assert!(!id.is_empty(), "{method} {path}: no operationId");
            assert!(ids.insert(id.clone()), "operationId {id} twice");
            assert!(op["summary"].is_string(), "{method} {path}: no summary");
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses
                    .keys()
                    .any(|k| k.starts_with('2') || k.starts_with('3')),
                "{method} {path}: no success response"
            );
            // Path templates and declared path parameters agree.
            let in_template: BTreeSet<String> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(str::to_string)
                .collect();
            let declared: BTreeSet<String> = item["parameters"]
                .as_array()
                .into_iter()
                .chain(op["parameters"].as_array())
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(in_template, declared, "{method} {path}: path parameters");
            // Every API operation documents its JSON error answers.
            if path.starts_with("/api/") {
                let unauthorized = &responses["401"];
                assert!(!unauthorized.is_null(), "{method} {path}: no 401");
                if method != "get" {
                    assert!(
                        !responses["413"].is_null() && !responses["400"].is_null(),
                        "{method} {path}: a write documents 400 and 413"
                    );
                }
            }
        }
    }

    #[test]
    fn the_schema_check_catches_what_it_should() {
        let doc = document().unwrap();
        let task = serde_json::json!({
            "id": "a", "project": "p", "title": "t", "status": "todo", "agent": null,
            "diagnosis": null, "source": "user", "created_at": 1, "updated_at": 1
        });
        assert_eq!(
            check_response(&doc, "get", "/api/tasks/{id}", 200, &task),
            Ok(())
        );
        let cases = [
            ("status", serde_json::json!("later"), "is not one of"),
            ("agent", serde_json::json!(3), "expected one of"),
            ("created_at", serde_json::json!("x"), "expected integer"),
        ];
        for (field, value, want) in cases {
            let mut bad = task.clone();
            bad[field] = value;
            let err = check_response(&doc, "get", "/api/tasks/{id}", 200, &bad).unwrap_err();
            assert!(err.contains(want), "{field}: {err}");
        }
        let mut missing = task.clone();
        missing.as_object_mut().unwrap().remove("title");
        assert!(
            check_response(&doc, "get", "/api/tasks/{id}", 200, &missing)
                .unwrap_err()
                .contains("missing required `title`")
        );
        let err = serde_json::json!({"error": {"code": "unknown_task", "message": "m"}});
        assert_eq!(
            check_response(&doc, "get", "/api/tasks/{id}", 404, &err),
            Ok(())
        );
        assert!(check_response(&doc, "get", "/api/tasks/{id}", 418, &err).is_err());
    }

    /// Every documented operation reaches a handler: the answer is never
    /// the router's "no route" or "method not allowed".
    #[tokio::test]
    async fn every_documented_operation_reaches_a_handler() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(
            Engine::init(StateDir::new(dir.path().join("state")))
                .await
                .unwrap(),
        );
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (log, follower) = crate::background::follow_log(
            engine.clone(),
            std::time::Duration::from_millis(50),
            stop_rx.clone(),
        )
        .await
        .unwrap();
        let app = crate::app(crate::AppState {
            engine: engine.clone(),
            access: Access::Socket,
            user: Actor::user("ada"),
            log,
            shutdown: stop_rx,
        });
        let doc = document().unwrap();
        let mut probes: Vec<(String, String)> = operations(&doc)
            .into_iter()
            .map(|(m, p)| {
                (
                    m,
                    p.replace("{name}", "ghost")
                        .replace("{id}", "feed")
                        .replace("{action_type}", "terminal")
                        .replace("{thread}", "feed"),
                )
            })
            .collect();
        probes.push(("get".into(), "/api/nowhere".into()));
        probes.push(("delete".into(), "/api/projects".into()));
        let mut fallbacks = Vec::new();
        for (method, uri) in &probes {
            let req = Request::builder()
                .method(method.to_uppercase().as_str())
                .uri(uri.as_str())
                .body(Body::empty())
                .unwrap();
            let resp = app.clone().oneshot(req).await.unwrap();
            let status = resp.status();
            if status == StatusCode::OK && uri.ends_with("/stream") {
                continue; // a stream: its headers are the answer
            }
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            let code = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v["error"]["code"].as_str().map(str::to_string));
            if matches!(code.as_deref(), Some("no_route" | "method_not_allowed")) {
                fallbacks.push(format!("{method} {uri} → {status} {code:?}"));
            }
        }
        assert_eq!(
            fallbacks,
            vec![
                "get /api/nowhere → 404 Not Found Some(\"no_route\")".to_string(),
                "delete /api/projects → 405 Method Not Allowed Some(\"method_not_allowed\")"
                    .to_string(),
            ],
            "only the two undocumented probes fall through"
        );
        stop_tx.send(true).unwrap();
        follower.await.unwrap();
    }
}
