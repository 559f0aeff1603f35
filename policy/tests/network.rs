//! `network_connect`: the table of what a connection out of a berth is
//! decided to be, one case a line with why. The order the rules apply:
//! deny list → deny; an internal address in any spelling → deny unless an
//! allow rule names it; allow list → auto_approve; a written ask holds in
//! auto mode; otherwise autonomy decides.

use berth_policy::decision::RuleList;
use berth_policy::{
    Action, Approval, Autonomy, Context, Frame, Limits, RuleSet, Stage, Verdict, decide,
};

/// Which autonomy a case runs under.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `*: require_approval` — the switch off.
    Manual,
    /// `*: auto_approve` — auto mode.
    Auto,
    /// `network_connect: deny`.
    DenyAll,
    /// `*: auto_approve` with a specific `network_connect: require_approval`.
    AutoButAskNetwork,
}

const ALLOW: &[&str] = &[
    "registry.npmjs.org",
    "*.pypi.org",
    "crates.io",
    "10.0.0.5",
    "metadata.internal.test",
    "[fd00::7]",
];
const ASK: &[&str] = &["WebFetch(domain:ask.example.com)"];
const DENY: &[&str] = &["evil.example.com", "*.blocked.test", "files.pypi.org"];

/// (host, port, mode, verdict, stage, why)
#[rustfmt::skip]
const CASES: &[(&str, u16, Mode, Verdict, Stage, &str)] = &[
    ("registry.npmjs.org", 443, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "on the allow list"),
    ("REGISTRY.npmjs.org.", 443, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "case and a trailing dot do not change the host"),
    ("pypi.org", 443, Mode::Manual, Verdict::RequireApproval, Stage::Autonomy, "`*.pypi.org` covers names under it, not pypi.org itself"),
    ("download.pypi.org", 443, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "under a `*.` wildcard"),
    ("files.pypi.org", 443, Mode::Auto, Verdict::Deny, Stage::DenyRule, "deny beats an allow wildcard, in auto mode too"),
    ("evil.example.com", 443, Mode::Auto, Verdict::Deny, Stage::DenyRule, "a deny rule holds in auto mode (ADR 0167)"),
    ("a.b.blocked.test", 80, Mode::Auto, Verdict::Deny, Stage::DenyRule, "a deny wildcard"),
    ("example.org", 443, Mode::Manual, Verdict::RequireApproval, Stage::Autonomy, "unknown host: the switch off asks"),
    ("example.org", 443, Mode::Auto, Verdict::AutoApprove, Stage::Autonomy, "unknown host: auto mode approves"),
    ("example.org", 443, Mode::DenyAll, Verdict::Deny, Stage::AutonomyDeny, "autonomy deny for network_connect"),
    ("registry.npmjs.org", 443, Mode::DenyAll, Verdict::Deny, Stage::AutonomyDeny, "autonomy deny wins over an allow rule"),
    ("example.org", 443, Mode::AutoButAskNetwork, Verdict::RequireApproval, Stage::Autonomy, "a specific rule beats the wildcard"),
    ("ask.example.com", 443, Mode::Auto, Verdict::RequireApproval, Stage::AskRule, "a written ask (WebFetch) holds in auto mode"),
    ("127.0.0.1", 8080, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback, even in auto mode"),
    ("2130706433", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback spelled as one decimal number"),
    ("0x7f000001", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback spelled in hex"),
    ("0177.0.0.1", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback with an octal part"),
    ("127.1", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback in two parts"),
    ("169.254.169.254", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the cloud metadata address"),
    ("0xa9fea9fe", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the metadata address in hex"),
    ("[::ffff:169.254.169.254]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the metadata address, IPv4-mapped IPv6"),
    ("::ffff:a9fe:a9fe", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "IPv4-mapped in hex groups, no brackets"),
    ("[fd00:ec2::254]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the IPv6 metadata address (unique-local)"),
    ("[::1]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "IPv6 loopback"),
    ("[fe80::1%eth0]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "IPv6 link-local with a zone"),
    ("192.168.1.10", 22, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "a private address"),
    ("100.100.100.200", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "carrier-grade NAT space (a cloud's metadata)"),
    ("0.0.0.0", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "`this network` reaches the host"),
    ("10.0.0.5", 5432, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "a private address named in allow"),
    ("012.0.0.5", 5432, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "named in allow, whatever its spelling (octal 012 = 10)"),
    ("10.0.0.6", 5432, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "a neighbour of a named address is not named"),
    ("[fd00::7]", 80, Mode::Manual, Verdict::AutoApprove, Stage::AllowRule, "an IPv6 private address named in allow"),
    ("8.8.8.8", 53, Mode::Manual, Verdict::RequireApproval, Stage::Autonomy, "a public address: autonomy decides"),
    ("8.8.8.8", 53, Mode::Auto, Verdict::AutoApprove, Stage::Autonomy, "a public address in auto mode"),
    ("1.2.3.4.5", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "numeric, but no address: refused, not resolved"),
    ("bad host", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "not a host name"),
    ("example.org", 0, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "port 0"),
    ("localhost", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback by name"),
    ("LOCALHOST.", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "loopback by name, any case, a trailing dot"),
    ("api.localhost", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "names under localhost are loopback (RFC 6761)"),
    ("metadata.google.internal", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the metadata service by name"),
    ("0", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "`this network` as one number"),
    ("[::]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "the IPv6 unspecified address"),
    ("[::ffff:7f00:1]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "IPv4-mapped loopback"),
    ("[0:0:0:0:0:ffff:127.0.0.1]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "IPv4-mapped loopback, long form"),
    ("[64:ff9b::7f00:1]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "NAT64 of loopback"),
    ("[2002:7f00:1::]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "6to4 of loopback"),
    ("224.0.0.1", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "multicast"),
    ("255.255.255.255", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "broadcast"),
    ("198.18.0.1", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "benchmarking space, not the internet"),
    ("[fc00::1]", 80, Mode::Auto, Verdict::Deny, Stage::DenyTemplate, "unique-local"),
];

fn rules() -> RuleSet {
    let mut set = RuleSet::from_json(
        &serde_json::json!({"ask": ASK}).to_string(),
        "permissions.json",
    )
    .unwrap();
    for (list, hosts) in [(RuleList::Allow, ALLOW), (RuleList::Deny, DENY)] {
        for h in hosts {
            set.add_host(list, h, None).unwrap();
        }
    }
    set
}

fn autonomy(mode: Mode) -> Autonomy {
    match mode {
        Mode::Manual => Autonomy::manual(),
        Mode::Auto => Autonomy::auto(),
        Mode::DenyAll => Autonomy::manual().with("network_connect", Approval::Deny),
        Mode::AutoButAskNetwork => {
            Autonomy::auto().with("network_connect", Approval::RequireApproval)
        }
    }
}

#[test]
fn network_connect_table() {
    let rules = rules();
    let frame = Frame::host("/work");
    let limits = Limits::default();
    let mut failed = Vec::new();
    for (host, port, mode, verdict, stage, why) in CASES {
        let autonomy = autonomy(*mode);
        let ctx = Context {
            frame: &frame,
            cwd: "/work",
            autonomy: &autonomy,
            rules: &rules,
            protected_branches: &[],
            limits: &limits,
        };
        let action = Action::NetworkConnect {
            host: host.to_string(),
            port: *port,
        };
        let d = decide(&action, &ctx);
        if (d.verdict, d.stage) != (*verdict, *stage) {
            failed.push(format!(
                "{host}:{port} {mode:?} ({why}): want {verdict:?}/{stage:?}, got {:?}/{:?}: {}",
                d.verdict, d.stage, d.reason
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn network_connect_round_trips_as_json() {
    let a = Action::NetworkConnect {
        host: "crates.io".into(),
        port: 443,
    };
    let text = serde_json::to_string(&a).unwrap();
    assert_eq!(
        text,
        r#"{"type":"network_connect","host":"crates.io","port":443}"#
    );
    assert_eq!(serde_json::from_str::<Action>(&text).unwrap(), a);
    assert!(Action::KNOWN_KINDS.contains(&"network_connect"));
}

#[test]
fn resolved_addresses_are_checked_too() {
    use berth_policy::network::{Host, check_resolved};
    let rules = rules();
    let public_name = Host::parse("rebind.example.com").unwrap();
    let lo = "127.0.0.1".parse().unwrap();
    assert!(
        check_resolved(&rules.network, &public_name, lo).is_err(),
        "a name that resolves to loopback is refused"
    );
    let named = Host::parse("metadata.internal.test").unwrap();
    assert!(
        check_resolved(&rules.network, &named, "169.254.169.254".parse().unwrap()).is_ok(),
        "a name in allow may resolve inward"
    );
    assert!(
        check_resolved(
            &rules.network,
            &public_name,
            "93.184.216.34".parse().unwrap()
        )
        .is_ok()
    );
}
