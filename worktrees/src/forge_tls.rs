//! `https://` forge servers: a smart-HTTP transport of berth's own for
//! libgit2, over rustls, whose trust roots are read only when a process
//! first talks to an `https://` forge.
//!
//! Why not git2's `https` feature: with it, libgit2's global init loads the
//! whole CA bundle into OpenSSL (`SSL_CTX_set_default_verify_paths`) in
//! every process that touches git2 — ~30 ms of CPU for each `berth` command,
//! hook call and exec, for a forge most projects never reach over TLS.
//! Here [`register`] only tells libgit2 that `https://` URLs go through
//! [`HttpsSubtransport`]; the TLS client (roots from the system's store, or
//! `SSL_CERT_FILE` / `SSL_CERT_DIR`, as OpenSSL reads them) is built on the
//! first connection and kept for the process.
//!
//! The protocol above this file is libgit2's own (the smart protocol in its
//! stateless-RPC form, push options, the push negotiation berth's
//! compare-and-swap reads): this file only moves the bytes of each request
//! — a `GET …/info/refs?service=…` for the advertisement, a `POST
//! …/git-upload-pack` or `…/git-receive-pack` with what libgit2 wrote — and
//! checks that the answer is smart HTTP. Like git's default
//! (`http.followRedirects=initial`), a redirect is followed on the
//! advertisement only, never to plain `http://`, and the requests after it
//! go where it led. No credentials are sent (a forge server that asks for
//! them is named as such), and nothing is decompressed.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use git2::{ErrorClass, ErrorCode};

/// How many redirects the advertisement may follow.
const MAX_REDIRECTS: usize = 5;

/// What libgit2 is told to send as its user agent: smart-HTTP servers (some
/// hosted forges) serve the smart protocol only to clients named `git/…`.
const USER_AGENT: &str = "git/2.0 (berth)";

/// Routes libgit2's `https://` URLs through [`HttpsSubtransport`].
///
/// # Safety
/// libgit2's transport registry is a global without a lock: call this
/// before any thread of the process opens a remote (the caller's `Once` in
/// `forge_remote::prepare_network`, run by `Worktrees::open`).
pub(crate) unsafe fn register(
    connect_timeout: Duration,
    silence_timeout: Duration,
) -> Result<(), git2::Error> {
    let timeouts = Timeouts {
        connect: connect_timeout,
        silence: silence_timeout,
    };
    // SAFETY: forwarded to the caller (see above).
    unsafe {
        git2::transport::register("https", move |remote| {
            Transport::smart(
                remote,
                true,
                HttpsSubtransport {
                    timeouts,
                    base: Arc::new(Mutex::new(None)),
                },
            )
        })
    }
}

/// Whether this process has read its TLS trust roots: only once it talked
/// to an `https://` forge.
pub fn tls_roots_loaded() -> bool {
    CLIENT.get().is_some()
}

#[derive(Debug, Clone, Copy)]
struct Timeouts {
    connect: Duration,
    silence: Duration,
}

/// The process's TLS client, made on first use: the trust roots are read
/// then, once.
static CLIENT: OnceLock<Result<ureq::Agent, String>> = OnceLock::new();

fn client(timeouts: Timeouts) -> Result<&'static ureq::Agent, git2::Error> {
    CLIENT
        .get_or_init(|| build_client(timeouts))
        .as_ref()
        .map_err(|message| git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssl, message))
}

fn build_client(timeouts: Timeouts) -> Result<ureq::Agent, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    for e in &found.errors {
        tracing::warn!(error = %e, "a TLS trust root could not be read");
    }
    tracing::debug!(added, ignored, "TLS trust roots read for an https:// forge");
    if roots.is_empty() {
        return Err(
            "this host has no TLS trust roots berth can read: install the system's CA certificates (Debian: ca-certificates), or point SSL_CERT_FILE at a file holding the forge server's CA"
                .to_owned(),
        );
    }
    // ring, not aws-lc-rs: nothing but a C compiler to build it. rustls
    // deprecates ring's provider for lacking post-quantum key exchange,
    // which a forge server's TLS does not depend on.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(ureq::AgentBuilder::new()
        .tls_config(Arc::new(config))
        .https_only(true)
        .redirects(0)
        .timeout_connect(timeouts.connect)
        .timeout_read(timeouts.silence)
        .timeout_write(timeouts.silence)
        .user_agent(USER_AGENT)
        .build())
}

/// One remote connection's transport: where its requests go.
struct HttpsSubtransport {
    timeouts: Timeouts,
    /// The repository's URL once the advertisement was redirected.
    base: Arc<Mutex<Option<String>>>,
}

impl HttpsSubtransport {
    fn base(&self, url: &str) -> String {
        match self.base.lock() {
            Ok(base) => base.clone().unwrap_or_else(|| url.to_owned()),
            Err(poisoned) => poisoned
                .into_inner()
                .clone()
                .unwrap_or_else(|| url.to_owned()),
        }
    }

    fn set_base(&self, url: String) {
        match self.base.lock() {
            Ok(mut base) => *base = Some(url),
            Err(poisoned) => *poisoned.into_inner() = Some(url),
        }
    }
}

impl SmartSubtransport for HttpsSubtransport {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let agent = client(self.timeouts)?;
        let service = match action {
            Service::UploadPackLs | Service::UploadPack => "git-upload-pack",
            Service::ReceivePackLs | Service::ReceivePack => "git-receive-pack",
        };
        match action {
            Service::UploadPackLs | Service::ReceivePackLs => {
                // Sent at once, so a refused certificate or an absent server
                // is this call's error, with its own code.
                let (response, base) = advertisement(agent, url, service)?;
                if base != url {
                    self.set_base(base);
                }
                Ok(Box::new(Exchange {
                    request: None,
                    response: Some(response.into_reader()),
                }))
            }
            Service::UploadPack | Service::ReceivePack => Ok(Box::new(Exchange {
                request: Some(Request {
                    agent: agent.clone(),
                    url: format!("{}/{service}", self.base(url)),
                    service,
                    body: Vec::new(),
                }),
                response: None,
            })),
        }
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// `GET <url>/info/refs?service=<service>`, following redirects to
/// `https://` only; returns the answer and the repository's URL it came
/// from.
fn advertisement(
    agent: &ureq::Agent,
    url: &str,
    service: &str,
) -> Result<(ureq::Response, String), git2::Error> {
    let suffix = format!("/info/refs?service={service}");
    let mut base = url.trim_end_matches('/').to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let target = format!("{base}{suffix}");
        let response = agent
            .get(&target)
            .set("Pragma", "no-cache")
            .set("Accept", "*/*")
            .call()
            .map_err(|e| request_error("GET", &target, e))?;
        if (300..400).contains(&response.status()) {
            let location = response.header("Location").unwrap_or_default();
            let next = ureq::Response::get_url(&response);
            let next = url_join(next, location).ok_or_else(|| {
                http_error(format!(
                    "the forge server redirected GET {target} to {location:?}, which is not a URL berth can follow"
                ))
            })?;
            base = next
                .strip_suffix(&suffix)
                .ok_or_else(|| {
                    http_error(format!(
                        "the forge server redirected GET {target} to {next}, which is not a repository's info/refs; give the repository's own URL"
                    ))
                })?
                .to_owned();
            if !base.starts_with("https://") {
                return Err(http_error(format!(
                    "the forge server redirected GET {target} to {next}: berth does not leave https://"
                )));
            }
            continue;
        }
        expect_smart(&response, &format!("application/x-{service}-advertisement"))?;
        return Ok((response, base));
    }
    Err(http_error(format!(
        "the forge server redirected {url} more than {MAX_REDIRECTS} times"
    )))
}

/// `location` read against `from` (absolute, or a path on the same server).
fn url_join(from: &str, location: &str) -> Option<String> {
    if location.starts_with("https://") || location.starts_with("http://") {
        return Some(location.to_owned());
    }
    if !location.starts_with('/') || location.starts_with("//") {
        return None;
    }
    let rest = from.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    Some(format!("https://{authority}{location}"))
}

/// An answer that is not smart HTTP (a dumb server, a login page, a proxy's
/// error page) is an error, not a protocol for libgit2 to misread.
fn expect_smart(response: &ureq::Response, content_type: &str) -> Result<(), git2::Error> {
    if response.status() != 200 {
        return Err(http_error(format!(
            "the forge server answered {} {} to {}",
            response.status(),
            response.status_text(),
            response.get_url()
        )));
    }
    if response.content_type() != content_type {
        return Err(http_error(format!(
            "the forge server answered {} with {:?}, not {content_type}: it does not serve git's smart HTTP there (a dumb-HTTP server or a web page)",
            response.get_url(),
            response.content_type()
        )));
    }
    Ok(())
}

fn http_error(message: String) -> git2::Error {
    git2::Error::new(ErrorCode::GenericError, ErrorClass::Http, message)
}

/// A failed request as libgit2's error: a certificate this host does not
/// trust keeps its own code, so the caller can say so.
fn request_error(method: &str, url: &str, e: ureq::Error) -> git2::Error {
    match e {
        ureq::Error::Status(status, response) => {
            let hint = match status {
                401 | 403 => {
                    ": it asks for credentials, which berth does not send — let this host reach the repository without them (by its address or network)"
                }
                404 => ": there is no repository at that URL",
                _ => "",
            };
            http_error(format!(
                "the forge server answered {status} {} to {method} {url}{hint}",
                response.status_text()
            ))
        }
        ureq::Error::Transport(t) => {
            let text = t.to_string();
            if is_certificate_error(&t) {
                git2::Error::new(
                    ErrorCode::Certificate,
                    ErrorClass::Ssl,
                    format!("{method} {url}: {text}"),
                )
            } else {
                git2::Error::new(
                    ErrorCode::GenericError,
                    ErrorClass::Net,
                    format!("{method} {url}: {text}"),
                )
            }
        }
    }
}

/// Whether rustls refused the server's certificate, anywhere in the chain
/// of causes (an `io::Error` hides its inner error from `source()`).
fn is_certificate_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return matches!(
                tls,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            );
        }
        if let Some(inner) = e.downcast_ref::<io::Error>().and_then(io::Error::get_ref)
            && is_certificate_error(inner)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// A `POST` not yet sent: libgit2 writes its body, then reads the answer.
struct Request {
    agent: ureq::Agent,
    url: String,
    service: &'static str,
    body: Vec<u8>,
}

impl Request {
    fn send(self) -> io::Result<Box<dyn Read + Send + Sync>> {
        let service = self.service;
        let response = self
            .agent
            .post(&self.url)
            .set("Content-Type", &format!("application/x-{service}-request"))
            .set("Accept", &format!("application/x-{service}-result"))
            .send_bytes(&self.body)
            .map_err(|e| io::Error::other(request_error("POST", &self.url, e)))?;
        expect_smart(&response, &format!("application/x-{service}-result"))
            .map_err(io::Error::other)?;
        Ok(response.into_reader())
    }
}

/// One request and its answer, as the stream libgit2 writes and reads.
struct Exchange {
    request: Option<Request>,
    response: Option<Box<dyn Read + Send + Sync>>,
}

impl Read for Exchange {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.response.is_none()
            && let Some(request) = self.request.take()
        {
            self.response = Some(request.send()?);
        }
        match &mut self.response {
            Some(response) => response.read(buf),
            None => Err(io::Error::other("the forge request was already sent")),
        }
    }
}

impl Write for Exchange {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.request {
            Some(request) => {
                request.body.extend_from_slice(data);
                Ok(data.len())
            }
            None => Err(io::Error::other(
                "libgit2 wrote to a forge request already sent",
            )),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_is_read_against_its_server_and_never_leaves_it_for_a_scheme_relative_one() {
        let from = "https://git.example/app.git/info/refs?service=git-upload-pack";
        for (location, joined) in [
            (
                "/new/app.git/info/refs?service=git-upload-pack",
                Some("https://git.example/new/app.git/info/refs?service=git-upload-pack"),
            ),
            (
                "https://other.example/a.git/info/refs",
                Some("https://other.example/a.git/info/refs"),
            ),
            ("http://plain.example/a", Some("http://plain.example/a")),
            ("//evil.example/a", None),
            ("relative/path", None),
            ("", None),
        ] {
            assert_eq!(url_join(from, location).as_deref(), joined, "{location}");
        }
    }

    #[test]
    fn a_certificate_error_is_found_behind_an_io_error() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::new(io::ErrorKind::InvalidData, tls);
        assert!(is_certificate_error(&wrapped));
        let other = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert!(!is_certificate_error(&other));
        let not_cert = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::General("x".into()),
        );
        assert!(!is_certificate_error(&not_cert));
    }
}
