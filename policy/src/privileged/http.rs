//! HTTP clients (`curl`, `wget`, HTTPie): the request a command line
//! makes — its method, body and host — read as each client reads its
//! options; a writing request to a forge or cloud API is an external effect.

use super::Hit;
use super::tables::FORGE_HOSTS;
use crate::arg::Arg;

/// An HTTP client's writing request (a method other than GET/HEAD/OPTIONS,
/// a body, a form or an upload) to a forge, registry or cloud API host.
/// Reading requests and requests to other hosts are ordinary clients:
/// where they may connect is the network mode's.
pub(super) fn http_write(name: &str, inv: &[Arg]) -> Option<Hit> {
    match name {
        "curl" => judge(name, curl_request(inv)),
        // curlie reads curl's options and httpie's `METHOD URL ITEM…` both:
        // either reading may be the request it sends.
        "curlie" => judge(name, curl_request(inv)).or_else(|| judge(name, httpie_request(inv))),
        "wget" => judge(name, wget_request(inv)),
        _ => judge(name, httpie_request(inv)),
    }
}

/// The limit's verdict on one reading of the request.
fn judge(name: &str, req: HttpRequest) -> Option<Hit> {
    // telnet://, gopher://, dict:// send raw bytes to any port.
    if let Some(u) = req.urls.iter().find(|u| {
        let l = u.text.to_ascii_lowercase();
        ["telnet://", "gopher://", "gophers://", "dict://"]
            .iter()
            .any(|s| l.starts_with(s))
    }) {
        return Some(Hit::Yes(format!(
            "`{name} {}` opens a raw network connection",
            u.text
        )));
    }
    if req.config_file {
        return Some(Hit::Maybe(format!(
            "`{name}` reads its method and URLs from a config file"
        )));
    }
    let method_writes = match &req.method {
        Some(m) if m.dynamic => true,
        Some(m) => !matches!(
            m.text.to_ascii_uppercase().as_str(),
            "GET" | "HEAD" | "OPTIONS"
        ),
        None => false,
    };
    if !(method_writes || req.body) {
        return None;
    }
    if req.unknown_targets {
        return Some(Hit::Maybe(format!(
            "`{name}` sends a writing request to URLs it reads from a file"
        )));
    }
    for u in &req.urls {
        if u.dynamic {
            return Some(Hit::Maybe(format!(
                "`{name}` sends a writing request to a URL computed at run time"
            )));
        }
        let host = url_host(&u.text);
        if FORGE_HOSTS
            .iter()
            .any(|d| host == *d || host.ends_with(&format!(".{d}")))
        {
            return Some(Hit::Yes(format!(
                "`{name}` sends a writing request to `{host}` (a forge, registry or cloud API)"
            )));
        }
    }
    None
}

/// What an HTTP client's command line asks for.
#[derive(Default)]
pub(super) struct HttpRequest {
    method: Option<Arg>,
    body: bool,
    urls: Vec<Arg>,
    /// URLs come from a file (`wget -i`).
    unknown_targets: bool,
    /// Options come from a file or a command (`curl -K`, `wget -e`,
    /// `wget --config`).
    config_file: bool,
}

/// curl's short options that take a value.
pub(super) const CURL_VALUE_SHORT: &[u8] = b"AbcCdDeEFHKmoPQrtTuUwxXyYz";

/// curl's long options that take a value (others are flags).
pub(super) const CURL_VALUE_LONG: &[&str] = &[
    "request",
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "json",
    "form",
    "form-string",
    "upload-file",
    "url",
    "header",
    "user-agent",
    "output",
    "user",
    "proxy",
    "cookie",
    "cookie-jar",
    "referer",
    "cert",
    "key",
    "cacert",
    "capath",
    "max-time",
    "connect-timeout",
    "retry",
    "retry-delay",
    "retry-max-time",
    "resolve",
    "config",
    "write-out",
    "dump-header",
    "range",
    "continue-at",
    "limit-rate",
    "interface",
    "local-port",
    "proxy-user",
    "oauth2-bearer",
    "aws-sigv4",
    "unix-socket",
    "connect-to",
    "output-dir",
    "max-filesize",
    "max-redirs",
    "trace",
    "trace-ascii",
    "stderr",
    "ciphers",
    "tls-max",
    "variable",
    "expand-url",
    "url-query",
    "time-cond",
    "netrc-file",
    "quote",
];

/// curl long options that send a body (prefixes count: older curls read
/// unambiguous prefixes).
pub(super) const CURL_BODY_LONG: &[&str] = &[
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "json",
    "form",
    "form-string",
    "upload-file",
];

pub(super) fn curl_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let mut get = false;
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        if a.dynamic && !t.starts_with('-') {
            r.urls.push(a.clone());
            i += 1;
            continue;
        }
        if t == "--" {
            r.urls.extend(inv[i + 1..].iter().cloned());
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            // An unambiguous prefix reads as the whole name.
            let full = CURL_VALUE_LONG
                .iter()
                .find(|o| **o == n)
                .or_else(|| {
                    let mut hits = CURL_VALUE_LONG
                        .iter()
                        .filter(|o| n.len() >= 3 && o.starts_with(n));
                    let first = hits.next();
                    first.filter(|_| hits.next().is_none())
                })
                .copied();
            let value = match (attached, full) {
                (Some(v), _) => Some(Arg::lit(v)),
                (None, Some(_)) => {
                    i += 1;
                    inv.get(i).cloned()
                }
                (None, None) => None,
            };
            let body_prefix = n.len() >= 3 && CURL_BODY_LONG.iter().any(|o| o.starts_with(n));
            match full {
                Some("request") => r.method = value,
                Some("url") => r.urls.extend(value),
                Some("config") => r.config_file = true,
                _ if body_prefix => r.body = true,
                _ => {}
            }
            if n == "get" {
                get = true;
            }
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let mut k = 1;
            while k < bytes.len() {
                let c = bytes[k];
                if CURL_VALUE_SHORT.contains(&c) {
                    let value = if k + 1 < bytes.len() {
                        Some(Arg {
                            text: t[k + 1..].to_string(),
                            ..a.clone()
                        })
                    } else {
                        i += 1;
                        inv.get(i).cloned()
                    };
                    match c {
                        b'X' => r.method = value,
                        b'd' | b'F' | b'T' => r.body = true,
                        b'K' => r.config_file = true,
                        _ => {}
                    }
                    break;
                }
                if c == b'G' {
                    get = true;
                }
                k += 1;
            }
            i += 1;
            continue;
        }
        r.urls.push(a.clone());
        i += 1;
    }
    if get {
        // `-G` sends the data as a query string.
        r.body = false;
    }
    r
}

pub(super) fn wget_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let value_short = b"OoaeiPUtTwQBlARDIX";
    let value_long = [
        "method",
        "post-data",
        "post-file",
        "body-data",
        "body-file",
        "input-file",
        "header",
        "output-document",
        "user-agent",
        "execute",
        "config",
    ];
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        let (name, value) = if let Some(long) = t.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(Arg::lit(v))),
                None if value_long.contains(&long) => {
                    i += 1;
                    (long.to_string(), inv.get(i).cloned())
                }
                None => (long.to_string(), None),
            }
        } else if t.len() > 1 && t.starts_with('-') && !a.dynamic {
            let c = t.as_bytes()[1];
            let value = if !value_short.contains(&c) {
                None
            } else if t.len() == 2 {
                i += 1;
                inv.get(i).cloned()
            } else {
                t.get(2..).map(Arg::lit)
            };
            let long = match c {
                b'i' => "input-file",
                b'e' => "execute",
                _ => "",
            };
            (long.to_string(), value)
        } else {
            r.urls.push(a.clone());
            i += 1;
            continue;
        };
        match name.as_str() {
            "method" => r.method = value,
            "post-data" | "post-file" | "body-data" | "body-file" => r.body = true,
            "input-file" => r.unknown_targets = true,
            "config" => r.config_file = true,
            // A wgetrc command: only those that set the request matter.
            "execute" => {
                let key: String = value
                    .as_ref()
                    .map(|v| v.text.to_ascii_lowercase())
                    .unwrap_or_default()
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect();
                let sets_request = [
                    "method",
                    "postdata",
                    "postfile",
                    "bodydata",
                    "bodyfile",
                    "inputfile",
                    "input",
                ]
                .iter()
                .any(|k| key.starts_with(k));
                if value.as_ref().is_none_or(|v| v.dynamic) || sets_request {
                    r.config_file = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    r
}

/// HTTPie and xh: `http [METHOD] URL [ITEM…]`; data items make a POST.
pub(super) fn httpie_request(inv: &[Arg]) -> HttpRequest {
    let mut r = HttpRequest::default();
    let value_long = [
        "--auth",
        "-a",
        "--output",
        "-o",
        "--session",
        "--session-read-only",
        "--verify",
        "--cert",
        "--cert-key",
        "--proxy",
        "--timeout",
        "--auth-type",
        "-A",
        "--pretty",
        "--style",
        "-s",
        "--print",
        "-p",
        "--format-options",
        "--max-redirects",
        "--boundary",
        "--raw",
    ];
    let mut pos: Vec<&Arg> = Vec::new();
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        let t = a.text.as_str();
        if !a.dynamic && t.starts_with('-') && t.len() > 1 {
            let n = t.split('=').next().unwrap_or(t);
            if n == "--raw" {
                r.body = true;
            }
            if matches!(n, "--form" | "-f" | "--multipart") {
                r.body = true;
            }
            if value_long.contains(&n) && !t.contains('=') {
                i += 1;
            }
            i += 1;
            continue;
        }
        pos.push(a);
        i += 1;
    }
    let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    let mut rest = pos.as_slice();
    if let Some(first) = rest.first()
        && (first.dynamic && rest.len() > 1
            || methods.contains(&first.text.to_ascii_uppercase().as_str()))
    {
        r.method = Some((*first).clone());
        rest = &rest[1..];
    }
    if let Some(url) = rest.first() {
        r.urls.push((*url).clone());
    }
    for item in rest.iter().skip(1) {
        let t = item.text.as_str();
        let header_or_query =
            t.contains("==") || (t.contains(':') && !t.contains('=') && !t.contains('@'));
        if item.dynamic || (!header_or_query && (t.contains('=') || t.contains('@'))) {
            r.body = true;
        }
    }
    if !r.body {
        // Items present but only headers and queries: a GET.
    }
    r
}

/// The host of a URL as written (`https://u@api.github.com:443/x` →
/// `api.github.com`; `api.github.com/x` → `api.github.com`).
pub(super) fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .unwrap_or(host)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}
