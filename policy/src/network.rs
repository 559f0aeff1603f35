//! Network rules and the pieces of the `network_connect` decision.
//!
//! An agent's connection out of its berth is an action like any other: a
//! host and a port, decided by [`crate::decide`]. This file holds what that
//! decision needs and nothing async: host rules (`registry.npmjs.org`,
//! `*.pypi.org`, an IP literal), the host a client names brought to one
//! spelling, and the internal address ranges (private, loopback,
//! link-local — the cloud metadata address among them) that are refused
//! unless a rule names them.
//!
//! Why the literal-IP parsing is this wide: resolvers accept `2130706433`,
//! `0x7f.1`, `0177.0.0.1` and `::ffff:127.0.0.1` as 127.0.0.1. A check that
//! only knew dotted quads would let an agent reach loopback by spelling it
//! differently. The proxy also checks the addresses a name resolves to with
//! [`internal`], so a public name that resolves inward is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::decision::{RuleList, SourceLoc};

/// A host as a connection names it, in one spelling: a lower-case name
/// without a trailing dot, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Host {
    /// Brings a host to one spelling; an IP literal in any spelling a
    /// resolver accepts becomes [`Host::Ip`]. A host that is neither a
    /// plausible name nor an address is an error (the decision denies it).
    pub fn parse(raw: &str) -> Result<Host, String> {
        let h = raw.trim();
        if let Some(inner) = h.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| format!("`{raw}`: `[` without its closing `]`"))?;
            return v6_literal(inner)
                .map(Host::Ip)
                .ok_or_else(|| format!("`{raw}` is not an IPv6 address"));
        }
        if h.contains(':') {
            return v6_literal(h)
                .map(Host::Ip)
                .ok_or_else(|| format!("`{raw}` is not a host name or an address"));
        }
        let h = h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase();
        if let Some(v4) = v4_literal(&h) {
            return Ok(Host::Ip(IpAddr::V4(v4)));
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if h.is_empty() || h.len() > 253 || !h.split('.').all(label_ok) {
            return Err(format!("`{raw}` is not a host name or an address"));
        }
        // A name whose last label is a number is an address to a URL parser
        // (WHATWG): one that did not parse (`1.2.3.4.5`, `08.1.1.1`) is
        // refused, not resolved.
        let numeric = |l: &str| {
            l.bytes().all(|b| b.is_ascii_digit())
                || l.strip_prefix("0x")
                    .is_some_and(|x| x.bytes().all(|b| b.is_ascii_hexdigit()))
        };
        if h.rsplit('.').next().is_some_and(numeric) {
            return Err(format!(
                "`{raw}` looks like an address in a spelling berth does not read"
            ));
        }
        Ok(Host::Name(h))
    }

    /// The address, when the host is one.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Ip(ip) => Some(*ip),
            Host::Name(_) => None,
        }
    }
}

/// An IPv4 address in any spelling `inet_aton` accepts: one to four parts,
/// each decimal, `0x` hex or `0`-led octal, the last filling the bytes left.
pub fn v4_literal(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for p in &parts {
        values.push(inet_part(p)?);
    }
    let (last, head) = values.split_last()?;
    let mut addr: u64 = 0;
    for v in head {
        if *v > 255 {
            return None;
        }
        addr = (addr << 8) | v;
    }
    let rest_bits = 8 * (4 - head.len() as u32);
    if rest_bits < 64 && *last >= (1u64 << rest_bits) {
        return None;
    }
    addr = (addr << rest_bits) | last;
    u32::try_from(addr).ok().map(Ipv4Addr::from)
}

fn inet_part(p: &str) -> Option<u64> {
    if p.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        (h, 16)
    } else if p.len() > 1 && p.starts_with('0') {
        (&p[1..], 8)
    } else {
        (p, 10)
    };
    if digits.is_empty() {
        // `0x` alone is 0 to inet_aton.
        return (radix == 16).then_some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// An IPv6 literal, its zone (`%eth0`) dropped.
fn v6_literal(s: &str) -> Option<IpAddr> {
    let s = s.split_once('%').map_or(s, |(a, _)| a);
    s.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// The IPv4 address an IPv6 one carries, for the forms that reach it:
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0, 0, 0, 0, 0, 0] && u32::from(tail) > 1 {
        return Some(tail);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    // 6to4 (`2002:AABB:CCDD::/48`) carries the IPv4 address it routes to.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Names that are internal by definition, whatever a resolver answers:
/// `localhost` and every name under it (RFC 6761), the private-use
/// `.internal` (the clouds' metadata services: `metadata.google.internal`),
/// mDNS's `.local`, `.home.arpa` (RFC 8375), and the metadata services'
/// bare names.
pub fn internal_name(name: &str) -> Option<&'static str> {
    let under = |zone: &str| name == zone || name.ends_with(&format!(".{zone}"));
    if under("localhost") {
        Some("a loopback name")
    } else if under("internal") || matches!(name, "metadata" | "instance-data") {
        Some("a private-use name (the cloud metadata services live there)")
    } else if under("local") {
        Some("a link-local (mDNS) name")
    } else if under("home.arpa") {
        Some("a home-network name")
    } else {
        None
    }
}

/// Why an address is internal (not on the public internet), or `None`.
pub fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return internal_v4(v4);
            }
            let s0 = v6.segments()[0];
            if v6.is_unspecified() {
                Some("the unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if s0 & 0xfe00 == 0xfc00 {
                Some("a unique-local (private) address")
            } else if s0 & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else if s0 & 0xffc0 == 0xfec0 {
                Some("a site-local (private) address")
            } else if s0 & 0xff00 == 0xff00 {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        Some("the cloud metadata address (link-local)")
    } else if o[0] == 0 {
        Some("an address of `this network` (0.0.0.0/8)")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("a shared (carrier-grade NAT) address")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("an IETF protocol address (192.0.0.0/24)")
    } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
        Some("a benchmarking address (198.18.0.0/15), not the internet")
    } else if o[0] >= 224 {
        Some("a multicast, reserved or broadcast address")
    } else {
        None
    }
}

/// What a host rule names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One host (a name or an address).
    Exact(Host),
    /// `*.pypi.org`: every name under `pypi.org` (not `pypi.org` itself,
    /// never an address).
    Under(String),
}

impl HostPattern {
    pub fn parse(raw: &str) -> Result<HostPattern, String> {
        let t = raw.trim();
        if let Some(rest) = t.strip_prefix("*.") {
            return match Host::parse(rest)? {
                Host::Name(n) if n.contains('.') => Ok(HostPattern::Under(n)),
                Host::Name(_) => Err(format!(
                    "`{raw}`: a wildcard covers a domain with a dot in it (`*.pypi.org`), not a whole top-level domain"
                )),
                Host::Ip(_) => Err(format!("`{raw}`: a wildcard cannot cover addresses")),
            };
        }
        if t.contains('*') {
            return Err(format!(
                "`{raw}`: the only wildcard is a leading `*.` (`*.pypi.org`)"
            ));
        }
        Host::parse(t).map(HostPattern::Exact)
    }

    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Exact(h), host) => h == host,
            (HostPattern::Under(d), Host::Name(n)) => n
                .strip_suffix(d.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Under(_), Host::Ip(_)) => false,
        }
    }

    /// Whether the rule names this host itself (not through a wildcard):
    /// only that lifts the refusal of an internal address.
    pub fn names(&self, host: &Host) -> bool {
        matches!(self, HostPattern::Exact(h) if h == host)
    }
}

/// One network rule: a list and a host pattern, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    pub list: RuleList,
    pub pattern: HostPattern,
    /// As written (`WebFetch(domain:x.com)`, `*.pypi.org`).
    pub raw: String,
    pub source: Option<SourceLoc>,
}

impl HostRule {
    /// A rule from a host pattern as a user wrote it.
    pub fn new(
        list: RuleList,
        host: &str,
        raw: &str,
        source: Option<SourceLoc>,
    ) -> Result<HostRule, String> {
        Ok(HostRule {
            list,
            pattern: HostPattern::parse(host)?,
            raw: raw.to_string(),
            source,
        })
    }
}

/// Whether an allow rule among `rules` names `host` itself (see
/// [`HostPattern::names`]), or — for an address a name resolved to — names
/// that address.
pub fn named_in_allow(rules: &[HostRule], host: &Host) -> bool {
    rules
        .iter()
        .any(|r| r.list == RuleList::Allow && r.pattern.names(host))
}

/// The proxy's check after resolving a name it was allowed to reach: each
/// address the connection would go to must be public, or the name (or the
/// address) must be named in an allow rule. `Err` holds the refusal's reason.
pub fn check_resolved(rules: &[HostRule], host: &Host, addr: IpAddr) -> Result<(), String> {
    let Some(why) = internal(addr) else {
        return Ok(());
    };
    if named_in_allow(rules, host) || named_in_allow(rules, &Host::Ip(addr)) {
        return Ok(());
    }
    Err(format!(
        "{host} resolves to {addr}, {why}: refused unless named in the network allow list"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_spellings() {
        let lo = Host::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let cases: &[(&str, &Host, &str)] = &[
            ("127.0.0.1", &lo, "dotted quad"),
            ("2130706433", &lo, "one decimal number"),
            ("0x7f000001", &lo, "one hex number"),
            ("0x7f.1", &lo, "hex part and a filling part"),
            ("0177.0.0.1", &lo, "octal first part"),
            ("127.1", &lo, "two parts"),
            ("127.0.0.1.", &lo, "trailing dot"),
        ];
        for (raw, want, why) in cases {
            assert_eq!(Host::parse(raw).as_ref(), Ok(*want), "{raw}: {why}");
        }
        assert_eq!(
            Host::parse("Registry.NPMJS.org."),
            Ok(Host::Name("registry.npmjs.org".into()))
        );
        for bad in ["1.2.3.4.5", "256.1.1.1", "08.1.1.1", "a b", "", "[::1"] {
            assert!(Host::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn internal_ranges() {
        let cases: &[(&str, bool)] = &[
            ("10.1.2.3", true),
            ("172.31.0.1", true),
            ("172.32.0.1", false),
            ("192.168.1.1", true),
            ("169.254.169.254", true),
            ("100.100.100.200", true),
            ("0.0.0.0", true),
            ("8.8.8.8", false),
            ("::1", true),
            ("::", true),
            ("fe80::1", true),
            ("fd00:ec2::254", true),
            ("::ffff:169.254.169.254", true),
            ("::ffff:8.8.8.8", false),
            ("::127.0.0.1", true),
            ("64:ff9b::10.0.0.1", true),
            ("2606:4700::1111", false),
        ];
        for (raw, want) in cases {
            let ip = Host::parse(raw).ok().and_then(|h| h.ip());
            assert_eq!(ip.and_then(internal).is_some(), *want, "{raw}");
        }
    }

    #[test]
    fn wildcards() {
        let p = HostPattern::parse("*.pypi.org").unwrap();
        assert!(p.matches(&Host::Name("files.pypi.org".into())));
        assert!(p.matches(&Host::Name("a.b.pypi.org".into())));
        assert!(!p.matches(&Host::Name("pypi.org".into())));
        assert!(!p.matches(&Host::Name("evilpypi.org".into())));
        assert!(HostPattern::parse("*.com").is_err());
        assert!(HostPattern::parse("a.*.com").is_err());
        assert!(HostPattern::parse("*.10.0.0.1").is_err());
    }
}
