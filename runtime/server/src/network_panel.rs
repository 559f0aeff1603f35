//! The approvals page's network section: each project's egress allow and
//! deny lists, with a Remove button per host and a form to add one.
//!
//! The buttons and the form go through the same protected path as approve
//! and deny (the page's script sends the session's secret and
//! `X-Berth-Request`; `/api/projects/{name}/network/hosts…`). A host
//! approved "always" on a pending `network_connect` shows here as a
//! `permissions.json` entry and can be removed the same way. A preset's
//! hosts are listed without a button: the preset is one line of
//! `berth.toml`. Every host and project name goes through [`esc`].

use std::fmt::Write as _;

use berth_engine::network_list::{NetworkList, NetworkRule};

use crate::page::esc;

/// The section for `lists` (one per project).
pub(crate) fn network_section(lists: &[NetworkList]) -> String {
    let mut o = String::from("<section id=\"network\"><h2>Network allow-lists</h2>");
    if lists.is_empty() {
        o.push_str("<p class=\"empty\">No projects yet.</p>");
    }
    for l in lists {
        o.push_str(&project_lists(l));
    }
    o.push_str("</section>");
    o
}

fn project_lists(l: &NetworkList) -> String {
    let project = esc(&l.project);
    let mut o = String::new();
    let _ = write!(
        o,
        "<article class=\"network\" data-project=\"{project}\"><h3>{project} <small>network {mode}</small></h3>",
        mode = esc(&l.mode),
    );
    if l.mode != "allowlist" {
        let _ = write!(
            o,
            "<p class=\"network-mode\">These lists decide connections only under <code>mode = \"allowlist\"</code>; \
             this project's network is <b>{}</b>.</p>",
            esc(&l.mode)
        );
    }
    for (list, rules, what) in [
        ("allow", &l.allow, "Allowed hosts"),
        ("deny", &l.deny, "Denied hosts"),
    ] {
        let _ = write!(
            o,
            "<h4 id=\"net-{list}-{id}\">{what}</h4><ul class=\"hosts {list}\" aria-labelledby=\"net-{list}-{id}\">",
            id = crate::page::seg(&l.project),
        );
        if rules.is_empty() {
            o.push_str("<li class=\"empty\">none</li>");
        }
        for r in rules.iter() {
            o.push_str(&host_row(&l.project, list, r));
        }
        o.push_str("</ul>");
    }
    let _ = write!(
        o,
        "<form class=\"net-add\" data-project=\"{project}\">\
         <label>Host <input type=\"text\" name=\"host\" class=\"host\" required \
         autocomplete=\"off\" spellcheck=\"false\" placeholder=\"registry.npmjs.org\"></label> \
         <label>List <select name=\"list\" class=\"list\"><option value=\"allow\">allow</option>\
         <option value=\"deny\">deny</option></select></label> \
         <button type=\"submit\">Add host</button>\
         <p class=\"outcome\" aria-live=\"polite\"></p></form></article>"
    );
    o
}

fn host_row(project: &str, list: &str, r: &NetworkRule) -> String {
    let host = esc(&r.host);
    let button = if r.removable {
        format!(
            " <button type=\"button\" class=\"net-remove\" data-verb=\"net-remove\" \
             data-project=\"{}\" data-list=\"{list}\" data-host=\"{host}\" \
             aria-label=\"Remove {host} from the {list} list\">Remove</button>",
            esc(project)
        )
    } else {
        String::new()
    };
    format!(
        "<li class=\"host\" data-host=\"{host}\"><code>{host}</code> <small class=\"source\">{}</small>{button}</li>",
        esc(&r.source)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_host_renders_as_text_and_presets_have_no_button() {
        let l = NetworkList {
            project: "demo".into(),
            mode: "allowlist".into(),
            allow: vec![
                NetworkRule {
                    host: "<img src=x>".into(),
                    source: "permissions.json".into(),
                    removable: true,
                },
                NetworkRule {
                    host: "registry.npmjs.org".into(),
                    source: "berth.toml allow_presets npm".into(),
                    removable: false,
                },
            ],
            deny: Vec::new(),
        };
        let html = network_section(&[l]);
        assert!(!html.contains("<img"), "{html}");
        assert_eq!(
            html.matches("data-verb=\"net-remove\"").count(),
            1,
            "{html}"
        );
        assert!(html.contains("<li class=\"empty\">none</li>"), "{html}");
    }
}
