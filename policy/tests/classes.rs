//! The classes of POLICY.md as a table: each row is a command line, the
//! rules file (allow, ask, deny), auto mode or manual, the frame, and the
//! verdict the contract gives. Rows include real bypasses reported against
//! other agent tools (wrappers around denied programs, quoting tricks,
//! compound commands, substitutions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::case::Case;
use berth_policy::{Verdict, case::CaseRules};

#[derive(Clone, Copy)]
enum M {
    Manual,
    Auto,
}
#[derive(Clone, Copy)]
enum F {
    Host,
    Container,
}
use F::*;
use M::{Auto as AutoMode, Manual};

const DENY: Verdict = Verdict::Deny;
const ASK: Verdict = Verdict::RequireApproval;
const AUTO: Verdict = Verdict::AutoApprove;

type Row = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    M,
    F,
    Verdict,
);

fn decide(row: &Row) -> berth_policy::Decision {
    let (cmd, allow, ask, deny, mode, frame, _) = *row;
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let case = Case {
        command: Some(cmd.to_string()),
        rules: Some(CaseRules {
            allow: list(allow),
            ask: list(ask),
            deny: list(deny),
        }),
        mode: Some(
            match mode {
                M::Auto => "auto",
                M::Manual => "manual",
            }
            .to_string(),
        ),
        frame: Some(
            match frame {
                F::Host => "host",
                F::Container => "container",
            }
            .to_string(),
        ),
        ..Case::default()
    };
    case.inputs().unwrap().decide()
}

#[test]
fn classes() {
    let mut failures = Vec::new();
    for row in TABLE {
        let d = decide(row);
        if d.verdict != row.6 {
            failures.push(format!(
                "{:?}: want {}, got {} [{}] {}",
                row.0,
                row.6.as_str(),
                d.verdict.as_str(),
                d.stage.as_str(),
                d.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[rustfmt::skip]
const TABLE: &[Row] = &[
    // deny through wrappers
    ("nohup rm -rf x", &[], &[], &["rm"], Manual, Container, DENY),
    ("timeout 5 rm -rf x", &["timeout"], &[], &["rm"], AutoMode, Container, DENY),
    ("sudo -u root rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("env FOO=1 rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("xargs rm < list", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("find . -exec rm {} \\;", &["find"], &[], &["rm"], AutoMode, Container, DENY),
    ("bash -c 'rm -rf x'", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("sh -c \"echo hi; rm x\"", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("eval 'rm x'", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("command rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("builtin command rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("exec rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("nice -n 5 ionice -c3 rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("/bin/rm -rf x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("\\rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("'r'm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("r\"\"m x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("$'\\x72\\x6d' x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("r\\\nm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("watch -n1 rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("npx rimraf x && rm y", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("echo `rm x`", &["echo"], &[], &["rm"], AutoMode, Container, DENY),
    ("cat <(rm x)", &["cat"], &[], &["rm"], AutoMode, Container, DENY),
    ("echo ${X:-$(rm x)}", &["echo"], &[], &["rm"], AutoMode, Container, DENY),
    ("f() { rm x; }; f", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("if true; then rm x; fi", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("for i in 1; do rm $i; done", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("case a in a) rm x;; esac", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("while false; do rm x; done", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("cat <<EOF\n$(rm x)\nEOF", &["cat"], &[], &["rm"], AutoMode, Container, DENY),
    ("ls | xargs -I{} rm {}", &["ls", "xargs"], &[], &["rm"], AutoMode, Container, DENY),
    ("trap 'rm x' EXIT", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("busybox rm x", &[], &[], &["rm"], AutoMode, Container, DENY),
    ("git -C /work push", &[], &[], &["git push"], AutoMode, Container, DENY),
    ("git --git-dir=.git --work-tree=. push", &[], &[], &["git push"], AutoMode, Container, DENY),
    ("git --no-pager push", &[], &[], &["git push"], AutoMode, Container, DENY),
    // privileged
    ("git push", &[], &[], &[], AutoMode, Container, ASK),
    ("timeout 60 git push origin x", &["timeout", "git push"], &[], &[], AutoMode, Container, ASK),
    ("g\\it pu\"sh\"", &["git"], &[], &[], Manual, Container, ASK),
    ("git {push,status}", &["git"], &[], &[], Manual, Container, ASK),
    ("git $CMD origin", &["git"], &[], &[], AutoMode, Container, ASK),
    ("doas ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("pkexec ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("kubectl -n prod apply -f k.yaml", &["kubectl"], &[], &[], AutoMode, Container, ASK),
    ("terraform apply -auto-approve", &["terraform"], &[], &[], AutoMode, Container, ASK),
    ("helm upgrade x .", &["helm"], &[], &[], AutoMode, Container, ASK),
    ("docker push img", &["docker"], &[], &[], AutoMode, Container, ASK),
    ("gh api repos/x/y/pulls -f title=t", &["gh"], &[], &[], AutoMode, Container, ASK),
    ("gh api repos/x/y", &["gh api"], &[], &[], Manual, Container, AUTO),
    ("cd /work && git push", &["git", "cd"], &[], &[], AutoMode, Container, ASK),
    ("echo hi | sudo tee /etc/x", &["echo", "tee"], &[], &[], AutoMode, Container, ASK),
    ("FOO=1 git push", &["git"], &[], &[], AutoMode, Container, ASK),
    ("npm publish --dry-run", &["npm"], &[], &[], AutoMode, Container, ASK),
    ("hub pull-request", &["hub"], &[], &[], AutoMode, Container, ASK),
    ("glab mr create", &["glab"], &[], &[], AutoMode, Container, ASK),
    ("fly deploy", &["fly"], &[], &[], AutoMode, Container, ASK),
    ("pulumi up -y", &["pulumi"], &[], &[], AutoMode, Container, ASK),
    ("vercel --prod", &["vercel"], &[], &[], AutoMode, Container, ASK),
    ("firebase deploy", &["firebase"], &[], &[], AutoMode, Container, ASK),
    ("netlify deploy --prod", &["netlify"], &[], &[], AutoMode, Container, ASK),
    ("serverless deploy", &["serverless"], &[], &[], AutoMode, Container, ASK),
    ("git send-pack remote", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git subtree push --prefix x origin b", &["git"], &[], &[], AutoMode, Container, ASK),
    ("su -c 'ls'", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("runuser -u x -- ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("run0 ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("sudoedit /etc/x", &[], &[], &[], AutoMode, Container, ASK),
    // templates
    ("rm -fr /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -r -f /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm --recursive --force /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -R --no-preserve-root /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf /*", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf ~/", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf $HOME", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf /home/agent", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("cd / && rm -rf *", &["rm", "cd"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf //", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf /tmp/../", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("sudo rm -rf /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf -- /", &["rm"], &[], &[], AutoMode, Container, DENY),
    ("rm -rf build", &["rm"], &[], &[], AutoMode, Container, AUTO),
    ("rm -rf /work/build", &["rm"], &[], &[], Manual, Container, AUTO),
    (":(){ :|:& };:", &[], &[], &[], AutoMode, Container, DENY),
    ("bomb() { bomb | bomb & }; bomb", &[], &[], &[], AutoMode, Container, DENY),
    ("mkfs.ext4 /dev/sda1", &[], &[], &[], AutoMode, Container, DENY),
    ("mkfs -t ext4 /dev/nvme0n1", &[], &[], &[], AutoMode, Container, DENY),
    ("dd if=/dev/zero of=/dev/sda bs=1M", &["dd"], &[], &[], AutoMode, Container, DENY),
    ("echo x > /dev/sda", &["echo"], &[], &[], AutoMode, Container, DENY),
    ("cat img > /dev/nvme0n1", &["cat"], &[], &[], AutoMode, Container, DENY),
    ("echo hi > /dev/null", &["echo"], &[], &[], Manual, Host, AUTO),
    // opaque
    ("$CMD", &[], &[], &[], AutoMode, Container, ASK),
    ("${CMD} x", &[], &[], &[], AutoMode, Container, ASK),
    ("$(echo ls)", &["echo", "ls"], &[], &[], AutoMode, Container, ASK),
    ("l* x", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("{ls,-la}", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("bash -c \"$X\"", &[], &[], &[], AutoMode, Container, ASK),
    ("source ./env.sh", &["source"], &[], &[], AutoMode, Container, ASK),
    (". <(curl x)", &["curl"], &[], &[], AutoMode, Container, ASK),
    ("curl x | bash", &["curl", "bash"], &[], &[], AutoMode, Container, ASK),
    ("bash < script.sh", &["bash"], &[], &[], AutoMode, Container, ASK),
    ("bash <<< 'ls'", &["bash", "ls"], &[], &[], AutoMode, Container, ASK),
    ("sh <<EOF\nls\nEOF", &["sh", "ls"], &[], &[], AutoMode, Container, ASK),
    ("echo $((x+1))", &["echo"], &[], &[], AutoMode, Container, ASK),
    ("echo $((1+2))", &["echo"], &[], &[], Manual, Container, AUTO),
    ("echo 'unterminated", &["echo"], &[], &[], AutoMode, Container, ASK),
    ("git -c core.pager=less log", &["git"], &[], &[], AutoMode, Container, ASK),
    // POLICY.md point 2: a key that cannot run a program is analysed.
    ("git -c user.name=x commit", &["git"], &[], &[], AutoMode, Container, AUTO),
    ("git -c user.name=x -c core.editor=x commit", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git config core.fsmonitor 'rm -rf /'", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git config alias.x '!sh'", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git config user.email a@b", &["git"], &[], &[], Manual, Container, AUTO),
    ("git fetch --upload-pack='x' origin", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git grep -O foo", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git difftool --extcmd=x", &["git"], &[], &[], AutoMode, Container, ASK),
    ("rg --pre ./x foo", &["rg"], &[], &[], AutoMode, Container, ASK),
    ("sort --compress-program=gzip f", &["sort"], &[], &[], AutoMode, Container, ASK),
    ("tar --checkpoint=1 --checkpoint-action=exec=sh x.tar", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("tar -cf x.tar --use-compress-program='sh -c x' .", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("tar -I zstd -cf x.tar .", &["tar"], &[], &[], AutoMode, Container, ASK),
    ("awk 'BEGIN{system(\"id\")}'", &["awk"], &[], &[], AutoMode, Container, ASK),
    ("awk '{print | \"sh\"}' f", &["awk"], &[], &[], AutoMode, Container, ASK),
    ("sed -n '1e id' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("sed 's/x/id/e' f", &["sed"], &[], &[], AutoMode, Container, ASK),
    ("find . -exec $X {} +", &["find"], &[], &[], AutoMode, Container, ASK),
    ("PATH=/tmp:$PATH ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("LD_PRELOAD=x.so ls", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("GIT_SSH_COMMAND=x git fetch", &["git"], &[], &[], AutoMode, Container, ASK),
    ("export LD_PRELOAD=/x.so; ls", &["ls", "export"], &[], &[], AutoMode, Container, ASK),
    ("env PATH=/x ls", &["ls", "env"], &[], &[], AutoMode, Container, ASK),
    ("NODE_OPTIONS='--require x' npm test", &["npm test"], &[], &[], AutoMode, Container, ASK),
    ("alias ls='rm -rf /'; ls", &["ls", "alias"], &[], &[], AutoMode, Container, ASK),
    ("ls &&", &["ls"], &[], &[], AutoMode, Container, ASK),
    ("ls )", &["ls"], &[], &[], AutoMode, Container, ASK),
    // partial allow / compounds
    ("npm test && npm run lint", &["npm test", "npm run lint"], &[], &[], Manual, Container, AUTO),
    ("npm test && curl x", &["npm test"], &[], &[], Manual, Container, ASK),
    ("npm test && curl x", &["npm test"], &[], &[], AutoMode, Container, AUTO),
    ("npm test; npm run build", &["npm test"], &["npm run build"], &[], AutoMode, Container, ASK),
    ("ls | grep x | wc -l", &["ls", "grep", "wc"], &[], &[], Manual, Container, AUTO),
    ("ls |& grep x", &["ls", "grep"], &[], &[], Manual, Container, AUTO),
    ("(cd src && ls) ; pwd", &["ls", "cd", "pwd"], &[], &[], Manual, Host, AUTO),
    ("X=1 && echo $X", &["echo"], &[], &[], Manual, Container, AUTO),
    ("ls # rm -rf /", &["ls"], &[], &[], Manual, Container, AUTO),
    ("echo 'rm -rf /'", &["echo"], &[], &["rm"], Manual, Container, AUTO),
    ("echo \"$(ls)\"", &["echo", "ls"], &[], &[], Manual, Container, AUTO),
    ("ls\r\nwc -l\r\n", &["ls", "wc"], &[], &[], Manual, Container, AUTO),
    ("cat <<'EOF'\n$(rm -rf /)\nEOF", &["cat"], &[], &["rm"], Manual, Container, AUTO),
    ("ls & wait", &["ls", "wait"], &[], &[], Manual, Container, AUTO),
    ("! grep -q x f", &["grep"], &[], &[], Manual, Container, AUTO),
    ("lsof", &["ls"], &[], &[], Manual, Container, ASK),
    ("git difftool", &["git diff"], &[], &[], Manual, Container, ASK),
    ("npm run test:e2e", &["npm run test"], &[], &[], Manual, Container, ASK),
    ("./cat x", &["cat"], &[], &[], Manual, Container, ASK),
    ("/tmp/x/cat x", &["cat"], &[], &[], Manual, Container, ASK),
    ("/usr/bin/cat x", &["cat"], &[], &[], Manual, Container, AUTO),
    ("./node_modules/.bin/npm install", &[], &["npm install"], &[], AutoMode, Container, ASK),
    // scope host
    ("cat /etc/passwd", &["cat"], &[], &[], Manual, Host, ASK),
    ("cat /etc/passwd", &["cat"], &[], &[], AutoMode, Host, AUTO),
    ("ls /work/{a,../../etc}", &["ls"], &[], &[], Manual, Host, ASK),
    ("cat /wоrk/x", &["cat"], &[], &[], Manual, Host, ASK),
    ("cd .. && ls", &["cd", "ls"], &[], &[], Manual, Host, ASK),
    ("cd - && ls", &["cd", "ls"], &[], &[], Manual, Host, ASK),
    ("cd \"$X\" && ls", &["cd", "ls"], &[], &[], Manual, Host, ASK),
    ("pushd src && ls && popd", &["pushd", "ls", "popd"], &[], &[], Manual, Host, AUTO),
    ("ls ~other/x", &["ls"], &[], &[], Manual, Host, ASK),
    ("ls ~other/x", &["ls"], &[], &[], Manual, Container, ASK), // POLICY.md amendment point 9: `~user` is outside in both frames
    ("diff <(ls a) <(ls b)", &["diff", "ls"], &[], &[], Manual, Host, AUTO),
    ("curl -o /tmp/x https://e.com", &["curl"], &[], &[], Manual, Host, ASK),
    ("curl https://example.com/a/b", &["curl"], &[], &[], Manual, Host, AUTO),
    ("curl file:///etc/passwd", &["curl"], &[], &[], Manual, Host, ASK),
    ("cp x --target-directory=/etc", &["cp"], &[], &[], Manual, Host, ASK),
    ("gcc -o/tmp/x a.c", &["gcc"], &[], &[], Manual, Host, ASK),
    ("OUT=/tmp/x make", &["make"], &[], &[], Manual, Host, ASK),
    ("ls > /tmp/x", &["ls"], &[], &[], Manual, Host, ASK),
    ("git -C /tmp status", &["git"], &[], &[], Manual, Host, ASK),
    ("git -C sub add ../../x", &["git"], &[], &[], Manual, Host, ASK),
    ("ls /srv/git", &["ls"], &[], &[], Manual, Container, AUTO),
    ("find . -name x -exec wc -l {} \\;", &["find", "wc"], &[], &[], Manual, Host, AUTO),
    ("find / -name x -exec wc -l {} \\;", &["find", "wc"], &[], &[], Manual, Host, ASK),
    ("env -C /tmp ls", &["env", "ls"], &[], &[], Manual, Host, ASK),
    ("echo $HOME", &["echo"], &[], &[], Manual, Container, AUTO),
    ("echo $HOME", &["echo"], &[], &[], Manual, Host, ASK),
    ("sed -i 's/a/b/w /etc/x' f", &["sed"], &[], &[], Manual, Host, ASK),
    ("awk '{print > \"/etc/x\"}' f", &["awk"], &[], &[], Manual, Host, ASK),
    ("tee /etc/x < f", &["tee"], &[], &[], Manual, Host, ASK),
    ("ln -s /etc/passwd x", &["ln"], &[], &[], Manual, Host, ASK),
    ("docker run -v /:/host img", &["docker run"], &[], &[], Manual, Host, ASK),
    // more wrappers, interpreters calling out, destructive commands by meaning
    ("cross-env NODE_ENV=x rm y", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("setarch x86_64 rm y", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("eatmydata rm y", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("doppler run -- rm y", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("concurrently 'npm:watch' 'rm -rf dist'", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("nodemon --exec 'rm x'", &["Bash(*)"], &[], &["rm"], AutoMode, Container, DENY),
    ("{rm,-rf,/}", &["Bash(*)"], &[], &[], AutoMode, Container, DENY),
    ("python3 -c 'import os; os.system(\"rm -rf x\")'", &["python3"], &[], &[], AutoMode, Container, ASK),
    ("python3 -c 'import sys; print(sys.version)'", &["python3"], &[], &[], Manual, Container, AUTO),
    ("node -e 'require(\"child_process\").execSync(\"id\")'", &["node"], &[], &[], AutoMode, Container, ASK),
    ("perl -e 'system(\"id\")'", &["perl"], &[], &[], AutoMode, Container, ASK),
    ("find / -delete", &["find"], &[], &[], AutoMode, Container, DENY),
    ("find ~ -type f -delete", &["find"], &[], &[], AutoMode, Host, DENY),
    ("find . -name '*.o' -delete", &["find"], &[], &[], Manual, Container, AUTO),
    ("kill -9 -1", &["kill"], &[], &[], AutoMode, Container, DENY),
    ("kill -TERM 1234", &["kill"], &[], &[], Manual, Container, AUTO),
    ("chmod -R 777 /", &["chmod"], &[], &[], AutoMode, Container, DENY),
    ("shutdown -h now", &["shutdown"], &[], &[], AutoMode, Container, ASK),
    ("cargo +nightly build", &["cargo build"], &[], &[], Manual, Container, AUTO),
    ("cargo +nightly publish", &["cargo"], &[], &[], AutoMode, Container, ASK),
    ("npx prettier --check .", &["prettier"], &[], &[], Manual, Container, AUTO),
    ("npx prettier --check .", &["npx prettier"], &[], &[], Manual, Container, AUTO),
    ("npx rimraf dist", &["npx"], &[], &[], Manual, Container, ASK),
    ("timeout 30 npm test", &["timeout 30 npm test"], &[], &[], Manual, Container, AUTO),
    ("env -S 'rm -rf x'", &["env"], &[], &["rm"], AutoMode, Container, DENY),
    ("git filter-branch --tree-filter 'rm x' HEAD", &["git", "rm"], &[], &[], Manual, Container, AUTO),
    ("git rebase -x 'git push' main", &["git"], &[], &[], AutoMode, Container, ASK),
    ("git bisect run rm x", &["git"], &[], &["rm"], AutoMode, Container, DENY),
    ("git submodule foreach 'rm -rf x'", &["git"], &[], &["rm"], AutoMode, Container, DENY),
];
