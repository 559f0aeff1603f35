//! The terminal action: each segment of a command goes through the stages
//! of POLICY.md in order, one function per stage — `deny`,
//! `privileged_limit`, `scope_limit`, `rules_file` — and
//! `rules_file_outcome` says what the rules file concluded over the whole
//! command. Stage 3 (never-auto action types) does not apply to commands;
//! stage 6 (autonomy) is `Decider::finish`'s.

use super::repeats::Repeats;
use super::rule_index::CommandRules;
use super::rules_tally::{Counted, RulesTally};
use super::shown::{Shown, display};
use super::written_then_run;
use super::{Decider, MAX_SEGMENTS, RulesOutcome, SYSTEM_DIRS, rule_ref};
use crate::access::{self, Access, FileAccess};
use crate::arg::Arg;
use crate::decision::{Location, RuleList, RuleMatch, RuleRef, SegmentReport, Stage, Verdict};
use crate::pattern::{self, Match, Side};
use crate::privileged;
use crate::protected;
use crate::rules::CommandRule;
use crate::rules::PathTool;
use crate::scope::{self, normalize};
use crate::segment::{self, Cwd, SegKind, Segment};
use crate::template;
use std::borrow::Cow;

/// One segment as the stages judge it: what it is, how people read it,
/// what is reported of it, and why it cannot be analysed when it cannot.
struct Judged<'s> {
    idx: usize,
    seg: &'s Segment,
    /// The segment as people read it, made when a reason quotes it.
    shown: Shown<'s>,
    report: SegmentReport,
    /// Why the segment cannot be analysed, when it cannot.
    opaque: Option<String>,
}

impl<'a> Decider<'a> {
    pub(super) fn terminal(&mut self, command: &str) -> RulesOutcome {
        // With `dotglob` (or `GLOBIGNORE`, which sets it) a glob matches
        // names that start with `.`.
        self.dotglob = crate::substring::names_glob_settings(command);
        let home = self.ctx.frame.home();
        let analysis = segment::analyze_text(command, &self.cwd_abs(), home);
        let all_in_scope = scope::all_in_scope(self.ctx.frame);
        let rules = CommandRules::new(self.ctx.rules);
        let mut tally = RulesTally::default();
        // The files each segment runs as code; writes are tracked only when
        // a later segment runs one (`echo … > p.sh && sh p.sh`).
        // The files each segment runs as code, read once; writes are
        // tracked only when a later segment runs one.
        let run_texts: Vec<Vec<&str>> = if analysis.segments.len() > 1 {
            analysis
                .segments
                .iter()
                .map(|s| written_then_run::files_run(s))
                .collect()
        } else {
            Vec::new()
        };
        let track = run_texts.iter().skip(1).any(|r| !r.is_empty());
        let runs: Vec<Vec<String>> = if track {
            analysis
                .segments
                .iter()
                .zip(&run_texts)
                .map(|(s, texts)| {
                    texts
                        .iter()
                        .flat_map(|t| written_then_run::resolve(s, t, home))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut written: Vec<String> = Vec::new();
        let mut cwds = scope::CwdLocations::default();
        // Without reports, a segment equal to an earlier one is counted as
        // it was, not judged again (see `repeats`).
        let mut repeats = (!self.reports && analysis.segments.len() > 1)
            .then(|| Repeats::new(analysis.segments.len()));
        for (idx, seg) in analysis.segments.iter().enumerate() {
            // Running what an earlier part of the command wrote: what runs is
            // not read.
            let runs_written = if track {
                written_then_run::written_and_run(&written, &runs[idx]).map(|file| {
                    format!(
                        "it runs {}, which an earlier part of this command wrote: what runs is not read",
                        clip(file)
                    )
                })
            } else {
                None
            };
            // A repeat of a segment judged with nothing of this kind; what it
            // writes is in `written` already (where the first match is what
            // counts, so a second copy changes nothing).
            if runs_written.is_none()
                && let Some(counted) = repeats
                    .as_mut()
                    .and_then(|r| r.earlier(&analysis.segments, idx))
            {
                tally.count(idx, counted);
                continue;
            }
            // Without reports (`decide_brief`) the report stays empty: no
            // finding reads it.
            let report = if self.reports {
                SegmentReport {
                    argv: seg.argv.iter().map(|a| a.text.clone()).collect(),
                    wrappers: seg
                        .chain
                        .iter()
                        .filter_map(|inv| inv.first().map(|a| a.text.clone()))
                        .collect(),
                    matched: if seg.kind == SegKind::Command {
                        RuleMatch::None
                    } else {
                        RuleMatch::NotACommand
                    },
                    opaque: seg.opaque.clone(),
                    privileged: None,
                    template: None,
                    paths: Vec::new(),
                }
            } else {
                SegmentReport {
                    argv: Vec::new(),
                    wrappers: Vec::new(),
                    matched: RuleMatch::None,
                    opaque: None,
                    privileged: None,
                    template: None,
                    paths: Vec::new(),
                }
            };
            let mut judged = Judged {
                idx,
                seg,
                shown: Shown::new(seg),
                report,
                opaque: seg.opaque.clone(),
            };
            if let Some(why) = &runs_written {
                judged.opaque.get_or_insert_with(|| why.clone());
            }
            self.deny(&mut judged, &rules, home);
            self.privileged_limit(&mut judged);
            self.scope_limit(&mut judged, all_in_scope, &mut cwds);
            let counted = self.rules_file(&mut judged, &rules);
            tally.count(idx, counted);
            if let Some(r) = repeats.as_mut().filter(|_| runs_written.is_none()) {
                r.judged(idx, counted);
            }
            if self.reports {
                self.segments.push(judged.report);
            }
            if track {
                written.extend(written_then_run::files_written(seg, home));
            }
        }
        if analysis.segments.len() > MAX_SEGMENTS {
            return self.beyond_bound(analysis.segments.len());
        }
        self.rules_file_outcome(&analysis.segments, tally)
    }

    /// Stage 1: deny rules and the built-in deny templates, against every
    /// invocation of the segment (wrappers included).
    fn deny(&mut self, j: &mut Judged<'_>, rules: &CommandRules<'_>, home: &str) {
        let (seg, idx) = (j.seg, j.idx);
        for (rule, found) in command_rule_matches(&rules.deny, seg) {
            match found {
                Match::Yes => {
                    let r = rule_ref(rule);
                    self.raise(
                        Stage::DenyRule,
                        Verdict::Deny,
                        format!("`{}` matches the deny rule {r}", j.shown),
                        Some(idx),
                    );
                    j.report.matched = RuleMatch::Deny { rule: r };
                }
                Match::Maybe => {
                    j.opaque.get_or_insert_with(|| {
                        format!(
                            "a dynamic word where the deny rule `{}` compares",
                            rule.pattern.raw
                        )
                    });
                }
                Match::No => {}
            }
        }
        match template::check(seg, home, &self.ctx.limits.deny) {
            Some(template::Hit::Deny(t)) => {
                self.raise(
                    Stage::DenyTemplate,
                    Verdict::Deny,
                    format!("`{}` meets the built-in deny template: {t}", j.shown),
                    Some(idx),
                );
                j.report.template = Some(t);
            }
            Some(template::Hit::Maybe(m)) => {
                j.opaque.get_or_insert(m);
            }
            None => {}
        }
    }

    /// Stage 2: the external-effect / privileged limit — built-in classes
    /// and the project's own patterns, against every invocation.
    fn privileged_limit(&mut self, j: &mut Judged<'_>) {
        let (seg, idx) = (j.seg, j.idx);
        // A redirection to /dev/tcp or /dev/udp is a raw connection bash
        // opens itself, whatever the segment runs (`exec 3<>/dev/tcp/…`).
        match seg
            .redirects
            .iter()
            .find_map(|r| privileged::redirect(&r.target))
        {
            Some(privileged::Hit::Yes(class)) => {
                self.raise(
                    Stage::Privileged,
                    Verdict::RequireApproval,
                    format!(
                        "`{}`: {class} — approval is required in every mode",
                        j.shown
                    ),
                    Some(idx),
                );
                j.report.privileged.get_or_insert(class);
            }
            Some(privileged::Hit::Maybe(m)) => {
                j.opaque.get_or_insert(m);
            }
            None => {}
        }
        for view in seg.invocations_normalized() {
            // Arguments still to come from stdin (`xargs git`) may be the
            // subcommand the limit compares: a dynamic word stands for them.
            let mut hit = if seg.trailing_dynamic {
                let mut inv = view.privileged.to_vec();
                inv.push(Arg::dynamic(""));
                privileged::check_normalized(&inv)
            } else {
                privileged::check_normalized(&view.privileged)
            };
            if hit.is_none() {
                for p in &self.ctx.limits.privileged {
                    match p.matches_restrict(view.written, &view.normalized, seg.trailing_dynamic) {
                        Match::Yes => {
                            hit = Some(privileged::Hit::Yes(format!(
                                "the project's privileged pattern `{}`",
                                p.raw
                            )))
                        }
                        Match::Maybe => {
                            hit = Some(privileged::Hit::Maybe(format!(
                                "a dynamic word where the privileged pattern `{}` compares",
                                p.raw
                            )))
                        }
                        Match::No => {}
                    }
                }
            }
            match hit {
                Some(privileged::Hit::Yes(class)) => {
                    self.raise(
                        Stage::Privileged,
                        Verdict::RequireApproval,
                        format!(
                            "`{}`: {class} — approval is required in every mode",
                            j.shown
                        ),
                        Some(idx),
                    );
                    j.report.privileged.get_or_insert(class);
                }
                Some(privileged::Hit::Maybe(m)) => {
                    j.opaque.get_or_insert(m);
                }
                None => {}
            }
        }
    }

    /// Stage 4: the path scope limit (lifted in auto mode), then the
    /// `Read`/`Edit` path rules over the paths the segment touches.
    fn scope_limit(
        &mut self,
        j: &mut Judged<'_>,
        all_in_scope: bool,
        cwds: &mut scope::CwdLocations,
    ) {
        let shown = &j.shown;
        // The paths serve the lifted scope findings and the path rules:
        // neither is read by a brief decision in auto mode without path
        // rules (the protected paths are judged from the accesses).
        if !self.liftable_read() && self.ctx.rules.paths.is_empty() {
            self.path_rules_for_command(j.seg, &[], j.idx, shown, &mut j.report);
            return;
        }
        let paths = scope::judge_borrowed(j.seg, self.ctx.frame, cwds);
        for p in &paths {
            let counts = match p.location {
                Location::Outside => true,
                Location::Unknown => !all_in_scope,
                _ => false,
            };
            if counts {
                let why = match (&p.resolved, p.location) {
                    (Some(r), Location::Outside) => {
                        let mut why = shown_then(shown, &["` touches "]);
                        push_clipped(&mut why, r);
                        why.push_str(", outside the project scope");
                        why
                    }
                    (None, Location::Outside) => {
                        let mut why = shown_then(shown, &["` touches "]);
                        push_clipped(&mut why, &p.written);
                        why.push_str(", outside the project scope");
                        why
                    }
                    _ => {
                        let mut why = shown_then(shown, &["`: "]);
                        push_clipped(&mut why, &p.written);
                        why.push_str(" cannot be proven inside the project scope");
                        why
                    }
                };
                self.liftable(Stage::Scope, why, Some(j.idx));
            }
        }
        if !self.ctx.frame.is_container()
            && let Some(what) = access::writes_outside_unnamed(&j.seg.argv_normalized().normalized)
        {
            self.liftable(
                Stage::Scope,
                format!("`{shown}` writes {what}, outside the project scope"),
                Some(j.idx),
            );
        }
        // Path rules (Read/Edit deny and ask) apply to the paths a command touches.
        self.path_rules_for_command(j.seg, &paths, j.idx, shown, &mut j.report);
        // Without reports (`decide_brief`) no one reads them: none copied.
        if self.reports {
            j.report.paths = paths
                .into_iter()
                .map(scope::Reported::into_report)
                .collect();
        }
    }

    /// Stage 5, per segment: an opaque segment, `ask` rules, then the
    /// allow rule that matches what runs; says how the segment counts.
    fn rules_file(&mut self, j: &mut Judged<'_>, rules: &CommandRules<'a>) -> Counted<'a> {
        let (seg, idx) = (j.seg, j.idx);
        let shown = &j.shown;
        if let Some(reason) = &j.opaque {
            self.raise(
                Stage::Opaque,
                Verdict::RequireApproval,
                shown_then(shown, &["` cannot be analysed: ", reason]),
                Some(idx),
            );
            if self.reports {
                j.report.opaque = Some(reason.clone());
            }
        }
        if seg.kind != SegKind::Command {
            return Counted::NotACommand;
        }
        let mut asked = false;
        for (rule, found) in command_rule_matches(&rules.ask, seg) {
            match found {
                Match::Yes => {
                    let r = rule_ref(rule);
                    self.raise(
                        Stage::AskRule,
                        Verdict::RequireApproval,
                        format!("`{shown}` matches the ask rule {r}"),
                        Some(idx),
                    );
                    if !matches!(j.report.matched, RuleMatch::Deny { .. }) {
                        j.report.matched = RuleMatch::Ask { rule: r };
                    }
                    asked = true;
                }
                Match::Maybe => {
                    let why = format!(
                        "a dynamic word where the ask rule `{}` compares",
                        rule.pattern.raw
                    );
                    self.raise(
                        Stage::Opaque,
                        Verdict::RequireApproval,
                        format!("`{shown}` cannot be analysed: {why}"),
                        Some(idx),
                    );
                    j.report.opaque.get_or_insert(why);
                    asked = true;
                }
                Match::No => {}
            }
        }
        let allow = if j.opaque.is_none() && !asked {
            self.allow_rule(seg, rules)
        } else {
            None
        };
        match allow {
            Some(rule) => {
                if self.reports && matches!(j.report.matched, RuleMatch::None) {
                    j.report.matched = RuleMatch::Allow {
                        rule: rule_ref(rule),
                    };
                }
                Counted::Allowed(rule)
            }
            None => Counted::Unmatched,
        }
    }

    /// Stage 5 over the whole command: every command allowed is the file's
    /// `allow`; some allowed and some not is a synthesized partial-allow
    /// `require_approval` (a file without opinion, lifted in auto mode);
    /// none allowed names the unmatched ones for the autonomy stage.
    fn rules_file_outcome(
        &mut self,
        segments: &[std::sync::Arc<Segment>],
        tally: RulesTally<'_>,
    ) -> RulesOutcome {
        let RulesTally {
            commands,
            allowed,
            first_allowed,
            unmatched,
        } = tally;
        if commands > 0 && allowed > 0 && !unmatched.is_empty() {
            if !self.liftable_read() {
                return RulesOutcome::NoOpinion;
            }
            let names: Vec<String> = unmatched
                .iter()
                .take(6)
                .filter_map(|i| segments.get(*i))
                .map(|s| display(s))
                .collect();
            let mut reason =
                String::from("only part of the command is allowed: no allow rule matches ");
            push_name_list(&mut reason, &names);
            self.liftable(Stage::PartialAllow, reason, unmatched.first().copied());
            return RulesOutcome::NoOpinion;
        }
        if commands > 0 && unmatched.is_empty() {
            let only = first_allowed
                .filter(|_| allowed == 1)
                .and_then(|(idx, rule)| Some((segments.get(idx)?, rule)));
            return RulesOutcome::Allow(match only {
                Some((seg, rule)) => allow_reason(&Shown::new(seg), rule),
                None => {
                    let mut why = String::from("every segment matches an allow rule (");
                    push_decimal(&mut why, allowed);
                    why.push_str(" segments)");
                    why
                }
            });
        }
        if !unmatched.is_empty() {
            let names: Vec<String> = unmatched
                .iter()
                .take(6)
                .filter_map(|i| segments.get(*i))
                .map(|s| display(s))
                .collect();
            let mut reason = String::from("no rule matches ");
            push_name_list(&mut reason, &names);
            return RulesOutcome::Unmatched(reason);
        }
        RulesOutcome::NoOpinion
    }

    /// The allow rule matching the program that runs, if any. A rule may
    /// also name the wrappers as written when it reaches into the program
    /// (`npx prettier` matches `npx prettier --check .`; `npx` alone does not
    /// allow whatever npx runs).
    fn allow_rule(&self, seg: &Segment, rules: &CommandRules<'a>) -> Option<&'a CommandRule> {
        // `git -c user.name=x commit` is `git commit` to an allow rule.
        // The program's basename, once (a dynamic program matches no rule):
        // neither step below changes `argv[0]`.
        let base = seg.argv.first().filter(|a| !a.dynamic)?.basename();
        let toolchain_removed = template::toolchain_removed(&seg.argv, base);
        let mut argv = if base == "git" {
            crate::program::git_harmless_settings_removed(&toolchain_removed)
        } else {
            Cow::Borrowed(&*toolchain_removed)
        };
        let name = argv.first()?;
        // A path matches a basename rule only in a system directory.
        if !name.package && name.text.contains('/') {
            let dir = normalize("/", &name.text);
            let parent = dir
                .rsplit_once('/')
                .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
            if SYSTEM_DIRS.contains(&parent) {
                let first = Arg {
                    text: base.to_string(),
                    ..name.clone()
                };
                argv.to_mut()[0] = first;
            }
        }
        if let Some(r) = rules.first_allow(&argv[0], |r| {
            r.pattern.matches(&argv, seg.trailing_dynamic, Side::Allow) == Match::Yes
        }) {
            return Some(r);
        }
        // The wrappers of this command line itself (not an enclosing `sh -c`).
        let own_chain: Vec<&Vec<Arg>> = seg
            .chain
            .iter()
            .filter(|inv| !inv.iter().any(|a| a.is("-c")))
            .collect();
        if own_chain.is_empty() {
            return None;
        }
        let prefix: usize = own_chain.iter().map(|inv| inv.len()).sum();
        let mut full: Vec<Arg> = own_chain
            .iter()
            .flat_map(|inv| inv.iter().cloned())
            .collect();
        full.extend(seg.argv.iter().cloned());
        rules.first_allow(full.first()?, |r| {
            let reaches = match &r.pattern.kind {
                pattern::Kind::Prefix(w) | pattern::Kind::Exact(w) => w.len() > prefix,
                _ => false,
            };
            reaches && r.pattern.matches(&full, seg.trailing_dynamic, Side::Allow) == Match::Yes
        })
    }

    /// The `Read`/`Edit` path rules and the protected paths over what the
    /// segment reads and writes (points 10 and 14): a `Read` rule covers
    /// every path the command names (a `Read` deny also denies writing
    /// there), an `Edit` rule every path it writes; a glob is judged by
    /// what it can match.
    fn path_rules_for_command(
        &mut self,
        seg: &Segment,
        paths: &[scope::Reported<'_>],
        idx: usize,
        shown: &Shown<'_>,
        report: &mut SegmentReport,
    ) {
        let rules = !self.ctx.rules.paths.is_empty();
        let cwd_protected = !rules && self.cwd_names.mentions_protected(&seg.cwd);
        let accesses = access::accesses_under(seg, rules, cwd_protected);
        // Without path rules only the protected names matter: a path is
        // resolved only when it or the directory it is relative to may name
        // one (most words of most commands do not).
        let base_may_protect = self.cwd_names.may_name_protected(&seg.cwd, self.dotglob)
            || seg
                .arg_dir
                .as_ref()
                .is_some_and(|d| protected::may_name(&d.text, self.dotglob));
        let resolved: Vec<(Access, bool, Vec<String>, &str)> = accesses
            .iter()
            .map(|fa| {
                let needed = rules
                    || base_may_protect
                    || fa.beneath
                    || protected::may_name(&fa.text, fa.glob && self.dotglob);
                (
                    fa.access,
                    fa.glob,
                    if needed {
                        self.access_paths(seg, fa)
                    } else {
                        Vec::new()
                    },
                    fa.text.as_str(),
                )
            })
            .collect();
        // Most segments write nothing beneath a directory: no list made.
        let beneath: Vec<bool> = if accesses.iter().any(|fa| fa.beneath) {
            accesses.iter().map(|fa| fa.beneath).collect()
        } else {
            Vec::new()
        };
        let recursive: Vec<Option<access::Recursion>> =
            accesses.iter().map(|fa| fa.recursive).collect();
        if accesses.iter().any(|fa| fa.from_stdin) {
            self.raise(
                Stage::NeverAuto,
                Verdict::RequireApproval,
                format!(
                    "`{shown}` writes paths read from stdin: they may be protected (`.git/`, `.claude/`, …), and writing those is never auto-approved"
                ),
                Some(idx),
            );
        }
        self.protected_writes(&resolved, idx, shown);
        if !beneath.is_empty() {
            self.writes_beneath_the_home(&resolved, &beneath, idx, shown);
        }
        if self.ctx.rules.paths.is_empty() {
            return;
        }
        let hidden_rule = !self.dotglob;
        let ctx = self.ctx;
        for rule in ctx.rules.paths.iter().filter(|r| r.list != RuleList::Allow) {
            let mut hit: Option<(String, Access)> = None;
            for (access, glob, abs_list, _) in &resolved {
                if rule.tool == PathTool::Write && *access == Access::Read {
                    continue;
                }
                for abs in abs_list {
                    let m = if *glob {
                        self.path_rule_may_match(rule, abs, hidden_rule)
                    } else {
                        self.path_rule_matches(rule, abs)
                    };
                    if m && hit.as_ref().is_none_or(|(_, a)| access > a) {
                        hit = Some((abs.clone(), *access));
                    }
                }
            }
            // A directory read recursively reads what may lie under it.
            let mut below = false;
            if hit.is_none() && rule.tool == PathTool::Read {
                hit = resolved
                    .iter()
                    .zip(&recursive)
                    .filter_map(|((_, _, abs_list, _), r)| r.map(|r| (abs_list, r)))
                    .flat_map(|(abs_list, r)| abs_list.iter().map(move |a| (a, r)))
                    .find(|(abs, r)| {
                        let under = format!("{}/**", abs.trim_end_matches('/'));
                        self.path_rule_may_match(rule, &under, hidden_rule && !r.hidden)
                    })
                    .map(|(abs, _)| (abs.clone(), Access::Read));
                below = hit.is_some();
            }
            // A dynamic path may be the one the rule names (`f=.env; cat $f`).
            if hit.is_none() {
                let program = seg.argv.first();
                let dynamic = accesses.iter().find(|fa| match rule.tool {
                    PathTool::Read => access::dynamic_read(fa, program),
                    PathTool::Write => fa.dynamic && fa.access == Access::Write,
                });
                if let Some(fa) = dynamic {
                    hit = Some((format!("⟨{}⟩", fa.text), fa.access));
                    below = true;
                }
            }
            // The paths the scope stage found (the cwd, `find` roots, paths
            // inside program text) are read.
            if hit.is_none() && rule.tool == PathTool::Read {
                hit = paths
                    .iter()
                    .filter_map(|p| p.resolved.as_deref())
                    .find(|abs| self.path_rule_matches(rule, abs))
                    .map(|abs| (abs.to_string(), Access::Read));
            }
            let Some((abs, access)) = hit else { continue };
            let r = RuleRef {
                list: rule.list,
                pattern: rule.raw.clone(),
                source: rule.source.clone(),
            };
            let unsure = below || rule.tool == PathTool::Write && access == Access::MayWrite;
            let (stage, verdict, word) = match rule.list {
                RuleList::Deny if unsure => (Stage::Opaque, Verdict::RequireApproval, "deny"),
                RuleList::Deny => (Stage::DenyRule, Verdict::Deny, "deny"),
                _ => (Stage::AskRule, Verdict::RequireApproval, "ask"),
            };
            let how = match access {
                _ if below && hit_dynamic(&abs) => "names a path only known when it runs,",
                Access::Read if below => "reads everything under",
                Access::Read => "touches",
                Access::MayWrite => "may write (it is not known only to read)",
                Access::Write => "writes",
            };
            self.raise(
                stage,
                verdict,
                format!("`{shown}` {how} {abs}, which meets the {word} rule {r}"),
                Some(idx),
            );
            if stage == Stage::Opaque {
                continue;
            }
            if rule.list == RuleList::Deny || !matches!(report.matched, RuleMatch::Deny { .. }) {
                report.matched = if rule.list == RuleList::Deny {
                    RuleMatch::Deny { rule: r }
                } else {
                    RuleMatch::Ask { rule: r }
                };
            }
        }
    }

    /// The absolute frame paths one access may name: a relative path under
    /// each possible cwd (or `git -C`'s directory), `~/x` under the home
    /// (and, unexpanded, under the cwd). None for a dynamic path or
    /// another user's home.
    fn access_paths(&self, seg: &Segment, fa: &FileAccess) -> Vec<String> {
        if fa.dynamic || fa.tilde_user {
            return Vec::new();
        }
        let t = fa.text.as_str();
        if t.starts_with('/') {
            return vec![normalize("/", t)];
        }
        let mut out = Vec::new();
        if let Some(rest) = t.strip_prefix('~')
            && (rest.is_empty() || rest.starts_with('/'))
        {
            out.push(normalize(
                self.ctx.frame.home(),
                rest.trim_start_matches('/'),
            ));
        }
        let dirs: Vec<String> = match (&seg.cwd, seg.arg_dir.as_ref().filter(|_| fa.in_argv)) {
            (Cwd::Known(dirs), None) => dirs.to_vec(),
            (Cwd::Known(dirs), Some(d)) if !d.dynamic => {
                dirs.iter().map(|c| normalize(c, &d.text)).collect()
            }
            _ => Vec::new(),
        };
        out.extend(dirs.iter().map(|d| normalize(d, t)));
        out
    }

    /// Point 10 for names known only at run time: an archive extracted, a
    /// repository cloned, a directory's contents copied or packages
    /// installed into the home, a directory above it, or a hidden
    /// directory of it (`tar -xf x -C ~`, `rsync -a d/ ~/`, `unzip -d
    /// ~/.config`) may write `~/.bashrc`, `~/.ssh/…` or `~/.config/…`
    /// under names nobody reads before it runs. Elsewhere (the project, a
    /// scratch directory) such writes are ordinary work: a protected name
    /// there is what the command itself names.
    fn writes_beneath_the_home(
        &mut self,
        resolved: &[(Access, bool, Vec<String>, &str)],
        beneath: &[bool],
        idx: usize,
        shown: &Shown<'_>,
    ) {
        let home = self.ctx.frame.home().trim_end_matches('/');
        if home.is_empty() {
            return;
        }
        for ((_, _, abs_list, _), _) in resolved.iter().zip(beneath).filter(|(_, b)| **b) {
            let hit = abs_list.iter().find(|p| {
                let p = p.trim_end_matches('/');
                // The home itself or a directory above it.
                let above = p.is_empty() || home == p || home.starts_with(&format!("{p}/"));
                // A hidden directory of the home (`~/.config`, `~/.local/share`).
                let hidden = p
                    .strip_prefix(home)
                    .and_then(|r| r.strip_prefix('/'))
                    .is_some_and(|r| r.starts_with('.'));
                above || hidden
            });
            if let Some(p) = hit {
                self.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!(
                        "`{shown}` writes names known only when it runs beneath {}, where the home's protected files live (`~/.bashrc`, `~/.ssh/`, `~/.config/…`): never auto-approved",
                        clip(p)
                    ),
                    Some(idx),
                );
                return;
            }
            // Beneath a system place, or above one (`tar -x -C /usr/local`).
            if let Some((p, (place, why))) = abs_list
                .iter()
                .find_map(|p| crate::protected::system_place_beneath(p).map(|hit| (p, hit)))
            {
                self.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!(
                        "`{shown}` writes names known only when it runs beneath {}, which may reach {place} ({why}): never auto-approved",
                        clip(p)
                    ),
                    Some(idx),
                );
                return;
            }
        }
    }

    /// Point 10: writing a protected path is never auto-approved — in
    /// every mode, whatever the rules file allows.
    fn protected_writes(
        &mut self,
        resolved: &[(Access, bool, Vec<String>, &str)],
        idx: usize,
        shown: &Shown<'_>,
    ) {
        for (access, glob, abs_list, text) in resolved {
            if *access == Access::Read {
                continue;
            }
            // The written text too: a relative path under an unknown cwd,
            // or the skeleton of a dynamic one (`$D/.git/hooks/x`).
            let found = abs_list
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(*text))
                .find_map(|p| {
                    protected::why(p, *glob, self.dotglob)
                        .filter(|(name, _)| {
                            *access == Access::Write || !protected::held_only_when_written(name)
                        })
                        .map(|w| (p, w))
                });
            if let Some((p, (name, why))) = found {
                let how = if *access == Access::Write {
                    "writes"
                } else {
                    "may write (it is not known only to read)"
                };
                self.raise(
                    Stage::NeverAuto,
                    Verdict::RequireApproval,
                    format!(
                        "`{shown}` {how} {}: `{name}` is protected, and writing it is never auto-approved ({why})",
                        clip(p)
                    ),
                    Some(idx),
                );
                return;
            }
        }
    }
}

/// How each command rule of `list` matches each invocation of `seg`
/// (wrappers included, git's global options removed), in order: every rule
/// for the first invocation, then the next.
fn command_rule_matches<'c>(
    rules: &'c [&'c CommandRule],
    seg: &'c Segment,
) -> impl Iterator<Item = (&'c CommandRule, Match)> + 'c {
    // No rule of the list (most commands' deny and ask): no view made.
    let views = (!rules.is_empty()).then(|| seg.invocations_normalized());
    views.into_iter().flatten().flat_map(move |view| {
        rules.iter().copied().map(move |r| {
            let found =
                r.pattern
                    .matches_restrict(view.written, &view.normalized, seg.trailing_dynamic);
            (r, found)
        })
    })
}

/// Why an allowed segment is allowed: ``"`{shown}` matches the allow rule
/// {rule}"`` (the rule as [`RuleRef`] shows it), written in one buffer —
/// every allowed command's reason has it.
fn allow_reason(shown: &Shown<'_>, rule: &CommandRule) -> String {
    const TEXT: &str = "` matches the allow rule ";
    let source = rule.source.as_ref().map_or(0, |s| s.file.len() + 24);
    let mut s = String::with_capacity(32 + TEXT.len() + rule.pattern.raw.len() + source + 12);
    s.push('`');
    shown.push_onto(&mut s);
    s.push_str(TEXT);
    s.push_str(rule.list.as_str());
    s.push_str(" \"");
    s.push_str(&rule.pattern.raw);
    s.push('"');
    if let Some(src) = &rule.source {
        s.push_str(" (");
        s.push_str(&src.file);
        s.push(':');
        push_decimal(&mut s, src.line);
        s.push(':');
        push_decimal(&mut s, src.column);
        s.push(')');
    }
    s
}

/// `n` in decimal, as `{n}` writes it, without the formatting machinery.
fn push_decimal(s: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut rest = n;
    loop {
        i -= 1;
        // A digit: `rest % 10` is below 10.
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(char::from(d));
    }
}

/// Whether a reported path is a dynamic word's skeleton (`⟨$f⟩`).
fn hit_dynamic(shown: &str) -> bool {
    shown.starts_with('⟨')
}

/// A long word shortened for a reason.
fn clip(s: &str) -> String {
    let mut out = String::new();
    push_clipped(&mut out, s);
    out
}

/// Most characters of a path a reason quotes.
const CLIP: usize = 100;

/// [`clip`]`(s)` appended to `out`: the first [`CLIP`] chars and `…`
/// when there are more.
fn push_clipped(out: &mut String, s: &str) {
    match s.char_indices().nth(CLIP) {
        Some((cut, _)) => {
            out.push_str(&s[..cut]);
            out.push('…');
        }
        None => out.push_str(s),
    }
}

/// `` `{shown}`` `` and `pieces` after it, in one buffer: a reason that
/// quotes its segment, without the formatting machinery.
fn shown_then(shown: &Shown<'_>, pieces: &[&str]) -> String {
    let text = shown.as_str();
    let mut out =
        String::with_capacity(1 + text.len() + pieces.iter().map(|p| p.len()).sum::<usize>() + 48);
    out.push('`');
    out.push_str(text);
    for p in pieces {
        out.push_str(p);
    }
    out
}

/// `` `a`, `b`, `c` and more `` onto `out`: a reason names a few segments,
/// not thousands. Written in place, not a string a name joined after.
fn push_name_list(out: &mut String, names: &[String]) {
    const SHOWN: usize = 5;
    for (i, n) in names.iter().take(SHOWN).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('`');
        out.push_str(n);
        out.push('`');
    }
    if names.len() > SHOWN {
        out.push_str(" and more");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list as it was built before: a `format!` a name, joined.
    fn name_list_joined(names: &[String]) -> String {
        const SHOWN: usize = 5;
        let mut s = names
            .iter()
            .take(SHOWN)
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > SHOWN {
            s.push_str(" and more");
        }
        s
    }

    /// The clip as it was written before: chars counted, then taken.
    fn clip_counted(s: &str) -> String {
        const MAX: usize = 100;
        if s.chars().count() > MAX {
            format!("{}…", s.chars().take(MAX).collect::<String>())
        } else {
            s.to_string()
        }
    }

    #[test]
    fn clipped_in_place_is_the_counted_clip() {
        for s in ["", "x", "/work/a b/c"] {
            assert_eq!(clip(s), clip_counted(s));
        }
        for unit in ["a", "é", "日", "😀", "a日"] {
            for n in [49, 50, 99, 100, 101, 150] {
                let s = unit.repeat(n);
                assert_eq!(clip(&s), clip_counted(&s), "{unit} × {n}");
                let mut out = String::from("`x` touches ");
                push_clipped(&mut out, &s);
                assert_eq!(out, format!("`x` touches {}", clip_counted(&s)));
            }
        }
    }

    /// A reason quoting its segment reads as `format!` wrote it.
    #[test]
    fn shown_then_is_the_formatted_reason() {
        let analysis = crate::segment::analyze(b"sudo rm -rf '/a b' && ls", "/work", "/home/agent");
        for seg in &analysis.segments {
            let shown = Shown::new(seg);
            assert_eq!(
                shown_then(&shown, &["` cannot be analysed: ", "why"]),
                format!("`{shown}` cannot be analysed: why")
            );
            assert_eq!(shown_then(&shown, &["`: "]), format!("`{shown}`: "));
        }
        let mut s = String::from("every segment matches an allow rule (");
        push_decimal(&mut s, 12);
        s.push_str(" segments)");
        assert_eq!(
            s,
            format!("every segment matches an allow rule ({} segments)", 12)
        );
    }

    #[test]
    fn name_list_in_place_is_the_joined_list() {
        for n in 0..=8 {
            let names: Vec<String> = (0..n)
                .map(|i| format!("cmd {i} `x`, ⟨$f⟩"))
                .chain(std::iter::once(String::new()))
                .collect();
            for names in [&names[..], &names[..n]] {
                let mut s = String::from("no rule matches ");
                push_name_list(&mut s, names);
                assert_eq!(s, format!("no rule matches {}", name_list_joined(names)));
            }
        }
    }
}
