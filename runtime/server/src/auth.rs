//! Who may call: nobody but the socket's owner on the unix socket, and on
//! TCP only a request with the bearer token or the page's session cookie.
//!
//! The page cannot hold a bearer token without exposing it to script, so a
//! browser exchanges the token once (`/login?token=…`) for an HttpOnly,
//! SameSite=Strict session cookie. A cookie is sent by the browser on its
//! own, which is what cross-site request forgery abuses: a state-changing
//! request that authenticates by cookie must also carry `X-Berth-Request`,
//! a header no cross-site form can set and that a cross-origin script can
//! only set after a CORS preflight this server never grants. A bearer token
//! is never attached by a browser on its own, so token requests need no
//! such header. On a loopback address the Host header must name loopback
//! too, so a DNS-rebinding page cannot borrow the browser's session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "berth_session";
/// The header a cookie-authenticated state-changing request must carry.
pub const CSRF_HEADER: &str = "x-berth-request";
/// How many page sessions are kept (the oldest is forgotten first).
const MAX_SESSIONS: usize = 32;

/// How requests are authenticated.
#[derive(Clone)]
pub(crate) enum Access {
    /// The unix socket: its mode is the access control.
    Socket,
    /// TCP: a bearer token or a session.
    Token(Arc<TokenAccess>),
}

pub(crate) struct TokenAccess {
    token: String,
    sessions: Mutex<VecDeque<String>>,
    /// The Host values a request may carry; `None` when the person forced
    /// a non-loopback address (any name may reach it then).
    hosts: Option<Vec<String>>,
}

impl TokenAccess {
    pub(crate) fn new(token: String, hosts: Option<Vec<String>>) -> TokenAccess {
        TokenAccess {
            token,
            sessions: Mutex::new(VecDeque::new()),
            hosts,
        }
    }

    pub(crate) fn token_matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
    }

    /// A new session id, remembered.
    pub(crate) fn open_session(&self, id: String) {
        let mut s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() >= MAX_SESSIONS {
            s.pop_front();
        }
        s.push_back(id);
    }

    fn session_known(&self, candidate: &str) -> bool {
        let s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        // Every stored id is compared, in constant time each, so the time
        // taken says nothing about which one (or how much of one) matched.
        s.iter().fold(false, |found, id| {
            constant_time_eq(candidate.as_bytes(), id.as_bytes()) | found
        })
    }
}

/// Compares two secrets in time that depends only on their lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff = std::hint::black_box(diff | (x ^ y));
    }
    diff == 0
}

/// The Host values loopback clients send for `port`.
pub(crate) fn loopback_hosts(port: u16) -> Vec<String> {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .flat_map(|h| [format!("{h}:{port}"), (*h).to_string()])
        .collect()
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Paths anyone may fetch: static assets, and the login exchange (which
/// checks the token itself).
fn is_public(path: &str) -> bool {
    path == "/login" || path.starts_with("/assets/")
}

/// Paths a person opens in a browser: a refusal there is a page that says
/// how to log in, not JSON.
fn is_page(path: &str) -> bool {
    path == "/" || path.starts_with("/tasks/")
}

/// The middleware in front of every route.
pub(crate) async fn guard(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let Access::Token(access) = &app.access else {
        return next.run(req).await;
    };
    if let Some(hosts) = &access.hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "bad_host",
                format!(
                    "this server answers only to loopback names (127.0.0.1, localhost, [::1]), not to Host `{host}`"
                ),
            )
            .into_response();
        }
    }
    let path = req.uri().path().to_string();
    if is_public(&path) {
        return next.run(req).await;
    }
    if let Some(auth) = req.headers().get(header::AUTHORIZATION) {
        let given = auth
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if access.token_matches(given.trim()) {
            return next.run(req).await;
        }
        return ApiError::unauthorized(
            "wrong API token: send `Authorization: Bearer <the contents of <state>/api-token>`",
        )
        .into_response();
    }
    if let Some(session) = cookie(req.headers(), SESSION_COOKIE) {
        if access.session_known(session) {
            let safe = matches!(*req.method(), Method::GET | Method::HEAD);
            if !safe && !req.headers().contains_key(CSRF_HEADER) {
                return ApiError::new(
                    StatusCode::FORBIDDEN,
                    "csrf_header_missing",
                    "a state-changing request made with the page's session must carry the `X-Berth-Request: 1` header",
                )
                .into_response();
            }
            return next.run(req).await;
        }
        if is_page(&path) {
            return crate::page::login_needed("your session has ended (the server restarted?)");
        }
        return ApiError::unauthorized(
            "unknown or expired session: log in again with /login?token=<the contents of <state>/api-token>",
        )
        .into_response();
    }
    if is_page(&path) {
        return crate::page::login_needed("this page needs the API token once");
    }
    ApiError::unauthorized(
        "missing API token: send `Authorization: Bearer <the contents of <state>/api-token>` (its path is printed when `berth serve` starts)",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        let cases: &[(&str, &str, bool)] = &[
            ("abc", "abc", true),
            ("abc", "abd", false),
            ("abc", "ab", false),
            ("", "", true),
            ("xbc", "abc", false),
        ];
        for (a, b, eq) in cases {
            assert_eq!(constant_time_eq(a.as_bytes(), b.as_bytes()), *eq, "{a} {b}");
        }
    }

    #[test]
    fn sessions_are_bounded_and_matched_exactly() {
        let t = TokenAccess::new("t".repeat(64), None);
        for i in 0..MAX_SESSIONS + 1 {
            t.open_session(format!("s{i:02}"));
        }
        assert!(!t.session_known("s00"), "the oldest is forgotten");
        assert!(t.session_known("s01"));
        assert!(t.session_known(&format!("s{MAX_SESSIONS:02}")));
        assert!(!t.session_known("s0"));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, "a=1; berth_session=xyz".parse().unwrap());
        h.append(header::COOKIE, "b=2".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "berth"), None);
    }
}
