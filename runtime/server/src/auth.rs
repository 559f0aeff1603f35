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
//!
//! Cookies are not isolated by port: the browser sends the session cookie
//! to every server on 127.0.0.1, an agent's dev server included, which can
//! then replay it. So a cookie alone opens only the HTML pages, which are
//! shells without data ([`crate::page`]); every other request made with it
//! (the API, the pages' content under `/api/pages`, the event stream) must
//! also carry
//! `X-Berth-Session-Secret`, a second per-session secret that is handed out
//! once, in the answer to `/login` (which needs the API token), and that the
//! page keeps in its origin's storage (isolated by port). Sessions expire
//! ([`DEFAULT_SESSION_TTL`] unless `berth serve --session-ttl` says).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
/// The header every non-page request made with the session cookie must
/// carry: the session's own secret, which the page got at login.
pub const SECRET_HEADER: &str = "x-berth-session-secret";
/// How long a page session lasts when `berth serve` is not told otherwise.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// How many page sessions are kept (the oldest is forgotten first).
const MAX_SESSIONS: usize = 32;

/// One page session: the cookie's value, the secret only the page holds,
/// and when it was opened.
struct Session {
    id: String,
    secret: String,
    opened: Instant,
}

/// What a session cookie names.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SessionState {
    /// A live session, with the secret its requests must carry.
    Live(String),
    /// A session this server opened, past its lifetime.
    Expired,
    /// Nothing this server knows (forged, forgotten, or from before a restart).
    Unknown,
}

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
    sessions: Mutex<VecDeque<Session>>,
    /// The Host values a request may carry; `None` when the person forced
    /// a non-loopback address (any name may reach it then).
    hosts: Option<Vec<String>>,
    /// How long a session lasts.
    ttl: Duration,
}

impl TokenAccess {
    pub(crate) fn new(token: String, hosts: Option<Vec<String>>, ttl: Duration) -> TokenAccess {
        TokenAccess {
            token,
            sessions: Mutex::new(VecDeque::new()),
            hosts,
            ttl,
        }
    }

    /// How long a session lasts.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    pub(crate) fn token_matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
    }

    /// A new session (its cookie's value and its secret), remembered.
    pub(crate) fn open_session(&self, id: String, secret: String) {
        let mut s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() >= MAX_SESSIONS {
            s.pop_front();
        }
        s.push_back(Session {
            id,
            secret,
            opened: Instant::now(),
        });
    }

    /// What the cookie value `candidate` names.
    pub(crate) fn session(&self, candidate: &str) -> SessionState {
        let s = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        // Every stored id is compared, in constant time each, so the time
        // taken says nothing about which one (or how much of one) matched.
        let found = s.iter().fold(None, |found, session| {
            if constant_time_eq(candidate.as_bytes(), session.id.as_bytes()) {
                Some(session)
            } else {
                found
            }
        });
        match found {
            None => SessionState::Unknown,
            Some(session) if session.opened.elapsed() >= self.ttl => SessionState::Expired,
            Some(session) => SessionState::Live(session.secret.clone()),
        }
    }
}

/// A lifetime as a person reads it ("12h", "90s").
pub(crate) fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs >= 60 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
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

/// A request made with the session cookie to anything but a page must
/// carry that session's secret (a cookie alone may have been replayed by
/// another server on this host): the refusal, or `None` when it does.
fn check_session_secret(headers: &HeaderMap, secret: &str) -> Option<Response> {
    let Some(given) = headers.get(SECRET_HEADER) else {
        return Some(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "session_secret_missing",
                "a request made with the page's session cookie must carry the `X-Berth-Session-Secret` header the page got at login (a cookie alone is not enough: other servers on this host receive it too): reload the page, or log in again with /login?token=<the contents of <state>/api-token>; scripts should use `Authorization: Bearer <token>` instead",
            )
            .into_response(),
        );
    };
    if constant_time_eq(given.as_bytes(), secret.as_bytes()) {
        return None;
    }
    Some(
        ApiError::new(
            StatusCode::FORBIDDEN,
            "session_secret_wrong",
            "the `X-Berth-Session-Secret` header does not belong to this session: log in again with /login?token=<the contents of <state>/api-token>",
        )
        .into_response(),
    )
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
        let secret = match access.session(session) {
            SessionState::Live(secret) => secret,
            SessionState::Expired => {
                let ttl = human_duration(access.ttl());
                if is_page(&path) {
                    return crate::page::login_needed(&format!(
                        "your session has expired (sessions last {ttl})"
                    ));
                }
                return ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "session_expired",
                    format!(
                        "your page's session has expired (sessions last {ttl}): reload the page and log in again with /login?token=<the contents of <state>/api-token>"
                    ),
                )
                .into_response();
            }
            SessionState::Unknown => {
                if is_page(&path) {
                    return crate::page::login_needed(
                        "your session has ended (the server restarted?)",
                    );
                }
                return ApiError::unauthorized(
                    "unknown or expired session: log in again with /login?token=<the contents of <state>/api-token>",
                )
                .into_response();
            }
        };
        if !is_page(&path)
            && let Some(refused) = check_session_secret(req.headers(), &secret)
        {
            return refused;
        }
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
        let t = TokenAccess::new("t".repeat(64), None, DEFAULT_SESSION_TTL);
        for i in 0..MAX_SESSIONS + 1 {
            t.open_session(format!("s{i:02}"), format!("k{i:02}"));
        }
        assert_eq!(
            t.session("s00"),
            SessionState::Unknown,
            "the oldest is forgotten"
        );
        assert_eq!(t.session("s01"), SessionState::Live("k01".into()));
        assert_eq!(
            t.session(&format!("s{MAX_SESSIONS:02}")),
            SessionState::Live(format!("k{MAX_SESSIONS:02}"))
        );
        assert_eq!(t.session("s0"), SessionState::Unknown);
    }

    #[test]
    fn sessions_expire() {
        let t = TokenAccess::new("t".repeat(64), None, Duration::ZERO);
        t.open_session("s".into(), "k".into());
        assert_eq!(t.session("s"), SessionState::Expired);
        assert_eq!(human_duration(Duration::from_secs(12 * 3600)), "12h");
        assert_eq!(human_duration(Duration::from_secs(90)), "90s");
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
